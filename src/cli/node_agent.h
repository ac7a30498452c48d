#pragma once
// `uscope agent`: one process per node that keeps measuring the processes its config selects,
// on one runner (util/runner.h) beside its HTTP listener, the kernel's process events and its
// timers. A selected Go HTTP server gets an HttpJob at its exec (or at the agent's start) and
// loses it at its exit or next exec; /metrics serves every job's series and the agent's own, and
// the same snapshot is pushed as OTLP when the config names a collector. SIGHUP reloads the
// config; SIGINT and SIGTERM stop it with every probe detached.
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "agent/agent_config.h"
#include "agent/http_metrics.h"
#include "agent/process_match.h"
#include "agent/runtime_metrics.h"
#include "cli/go_stat_job.h"
#include "cli/http_job.h"
#include "cli/latency_job.h"
#include "cli/profile_session.h"
#include "cli/trace_job.h"
#include "discover/object_store.h"
#include "discover/process_events.h"
#include "export/http_listener.h"
#include "export/http_push.h"
#include "export/profile_export.h"
#include "model/metrics.h"
#include "util/runner.h"
#include "util/unique_fd.h"

namespace uscope::cli {

class NodeAgent {
 public:
  // Reads the config again on SIGHUP (the file, then the flags over it); null without a file.
  using ConfigReader = std::function<Result<AgentConfig>()>;
  static Result<std::unique_ptr<NodeAgent>> create(AgentConfig config, ConfigReader reread,
                                                   bool verbose);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Until SIGINT or SIGTERM; then every job stopped. The exit code.
  int run();

  // What /metrics serves now.
  MetricsSnapshot snapshot() const;

 private:
  // A process the selectors picked. Its jobs (none for a program that is not Go, or with the
  // metrics off) share its session, whose pidfd on the runner says when it exits.
  // The config's functions in the process's executable, timed as `uscope latency` times them;
  // on the heap, as the job holds its options and plan.
  struct FunctionLatency {
    SessionOptions options;
    LatencyPlan plan;
    std::unique_ptr<LatencyJob> job;
    EventLoop::Callbacks callbacks;
    std::vector<LatencyRow> rows;  // as last read
  };
  // A managed runtime's counts (`metrics.runtime`): stat's probes on the trace job, its events
  // counted by RuntimeMetrics; it writes nothing (its output is /dev/null).
  struct RuntimeWatch {
    SessionOptions options;
    RuntimePlan plan;
    std::unique_ptr<RuntimeMetrics> metrics;
    UniqueFd null;
    std::unique_ptr<OutputBuffer> out;
    std::unique_ptr<TraceJob> job;
    EventLoop::Callbacks callbacks;
  };
  struct Watched {
    Runner::Clock::time_point seen;  // when /proc was read for it: an exec before is in its facts
    ProcessFacts facts;
    std::string service;
    std::unique_ptr<Session> session;
    std::unique_ptr<ObjectCache> cache;         // the jobs' plans: one read of the binary
    std::unique_ptr<HttpMetrics> http_metrics;  // what `http` counts into
    std::unique_ptr<HttpJob> http;
    std::unique_ptr<GoStatJob> go;
    std::unique_ptr<FunctionLatency> latency;
    std::unique_ptr<RuntimeWatch> runtime;
  };
  // What an executable is, read once per file (dev, inode) however many processes run it.
  struct ExeVerdict {
    bool go = false;
    bool go_http = false;              // serves HTTP with net/http
    const Runtime* runtime = nullptr;  // a managed runtime uscope's runtime tools read
  };

  NodeAgent(AgentConfig config, ConfigReader reread, bool verbose);
  Result<void> listen();
  void consider(pid_t pid);
  void drop(pid_t pid);
  void rescan();
  void tick();
  // Every runtime job's events read (bounded), so that what /metrics and OTLP show holds what the
  // runtimes did up to then.
  void drain_runtime_events();
  void read_intervals();
  void add_latency_metrics(MetricsSnapshot& out, const MetricAttributes& resource,
                           const FunctionLatency& l) const;
  void reload();
  // Null when its executable cannot be read (the process is gone).
  const ExeVerdict* judge(pid_t pid);
  Result<void> start_jobs(pid_t pid, Watched& w, const ExeVerdict& v);
  MetricAttributes resource(pid_t pid, const Watched& w) const;
  void add_own_metrics(MetricsSnapshot& out) const;
  void push_otlp();
  // Continuous profiles: the host sampled at profiles.hz by one profiling session, each period's
  // samples (of the selected processes) exported per process.
  Result<void> start_profiling();
  void export_profile_period();

  AgentConfig config_;
  ConfigReader reread_;
  bool verbose_ = false;
  std::unique_ptr<Runner> runner_;
  std::unique_ptr<HttpListener> listener_;
  Runner::Id listener_watch_ = 0;
  std::unique_ptr<ProcessEvents> events_;
  std::unique_ptr<Pusher> pusher_;
  std::vector<ProbeSpec> functions_;  // config_.functions, parsed
  std::unique_ptr<ProfileSession> profile_;
  std::unique_ptr<ProfileExport> profile_export_;
  Runner::Clock::time_point profile_started_;
  std::vector<std::pair<std::string, uint64_t>> profile_losses_;  // every period's, by cause
  uint64_t profile_failures_ = 0;
  std::map<pid_t, Watched> watched_;
  std::map<pid_t, int> attach_retries_;  // failed attaches of a live process not yet watched
  std::map<std::pair<dev_t, ino_t>, ExeVerdict> verdicts_;
  // The executables judged last, kept open for the plans that follow (a small store of its own:
  // most are not Go and never planned).
  std::shared_ptr<ObjectStore> judged_;
  // Losses and exchanges of jobs already gone, so that counters never go down.
  HttpLosses gone_losses_;
  uint64_t gone_go_lost_ = 0, gone_census_failures_ = 0, gone_runtime_lost_ = 0;
  uint64_t attach_failures_ = 0, process_event_overflows_ = 0, reloads_ = 0, reload_failures_ = 0;
  uint64_t start_unix_ns_ = 0;
  std::string host_;
};

}  // namespace uscope::cli
