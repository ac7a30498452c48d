#include "cli/node_agent.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "agent/profile_source.h"
#include "collect/bpf_run_stats.h"
#include "discover/object_store.h"
#include "export/otlp_metrics.h"
#include "export/prometheus_text.h"
#include "model/profile_period.h"
#include "plan/http_plan.h"
#include "util/names.h"
#include "util/version.h"

namespace uscope::cli {

namespace {

using namespace std::chrono_literals;
// A process's HTTP requests are counted in the kernel, by method, raw path, status and protocol
// (HttpJob's aggregated mode): no event per request crosses a ring, which a busy server filled
// whenever the agent's loop was held up (a profile period, another process's attach). Its ring
// is then unused: a page. Up to this many rows per process (two harvests' worth of distinct
// paths; ~0.9 KiB each, allocated as they appear); a full map is counted (aggregation_map_full).
constexpr uint32_t kHttpRingBytes = 4096;
constexpr uint32_t kHttpRows = 4096;
// How often those rows are read and deleted: a run has this long to finish its adds to a row
// (microseconds), and a request is on /metrics within twice this.
constexpr auto kHarvest = 500ms;
// How often the Go runtime jobs' rings are read: events wait at most this long, and the agent
// wakes ten times a second however many processes it watches.
constexpr auto kTick = 100ms;
// Batches per job and tick: a job at a high rate cannot hold up the others.
constexpr int kBatchesPerTick = 8;
// A look at /proc for what the process events may have missed (a port bound after the exec, a
// dropped event).
constexpr auto kRescan = 30s;
// The Go runtime's figures and the functions' latencies are this fresh on /metrics.
constexpr auto kReadInterval = 5s;
// A profiling session's maps only grow (profile and top read them cumulatively): the agent starts
// a new one this often, so that a long-running node's maps never fill.
constexpr auto kProfileSessionLife = std::chrono::hours(1);
// libmicrohttpd's idle-connection timeouts are served on this beat.
constexpr auto kListenerBeat = 1s;
// Executables judged (Go HTTP server or not) that are kept open for planning; the verdicts
// themselves are kept by file identity, up to kVerdicts files.
constexpr size_t kJudgedObjects = 8;
constexpr size_t kVerdicts = 4096;
// A live process whose probes failed to attach is tried again this many times, this long apart,
// before it is watched without them (a program still starting, a moment of memory pressure).
constexpr int kAttachRetries = 2;
constexpr auto kAttachRetryDelay = 1s;

uint64_t unix_now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

bool bpf_stats_on() {
  std::ifstream in("/proc/sys/kernel/bpf_stats_enabled");
  int on = 0;
  return (in >> on) && on == 1;
}

void add_losses(HttpLosses& into, const HttpLosses& l) {
  into.ring_lost += l.ring_lost;
  into.read_errors += l.read_errors;
  into.no_entry += l.no_entry;
  into.entry_save_failed += l.entry_save_failed;
  into.malformed += l.malformed;
  into.truncated += l.truncated;
  into.agg_full += l.agg_full;
  into.output_dropped += l.output_dropped;
  into.status_unknown += l.status_unknown;
  into.unfinished += l.unfinished;
}

}  // namespace

NodeAgent::NodeAgent(AgentConfig config, ConfigReader reread, bool verbose)
    : config_(std::move(config)), reread_(std::move(reread)), verbose_(verbose) {}

NodeAgent::~NodeAgent() {
  // Jobs first: each detaches its probes and uninstalls its watches from the runner.
  watched_.clear();
}

Result<std::unique_ptr<NodeAgent>> NodeAgent::create(AgentConfig config, ConfigReader reread,
                                                     bool verbose) {
  std::unique_ptr<NodeAgent> a(new NodeAgent(std::move(config), std::move(reread), verbose));
  auto runner = Runner::create();
  if (!runner) return tl::unexpected(runner.error());
  a->runner_ = std::move(*runner);
  auto events = ProcessEvents::open();
  if (!events)
    return fail("cannot follow processes as they start and exit: {}", events.error().message);
  a->events_ = std::move(*events);
  if (auto r = a->listen(); !r) return tl::unexpected(r.error());
  if (!a->config_.otlp_endpoint.empty()) a->pusher_ = std::make_unique<Pusher>();
  a->start_unix_ns_ = unix_now_ns();
  a->host_ = host_name();
  a->judged_ = std::make_shared<ObjectStore>(kJudgedObjects);
  return a;
}

Result<void> NodeAgent::listen() {
  std::map<std::string, HttpRoute> routes;
  routes["/metrics"] = [this] {
    drain_runtime_events();
    return HttpReply{200, kPrometheusTextType, prometheus_text(snapshot())};
  };
  routes["/healthz"] = [] { return HttpReply{200, "text/plain; charset=utf-8", "ok\n"}; };
  auto listener = HttpListener::start(config_.listen, std::move(routes));
  if (!listener)
    return fail("cannot listen on {}: {}", config_.listen.text(), listener.error().message);
  if (listener_watch_) runner_->unwatch(listener_watch_);
  listener_ = std::move(*listener);
  listener_watch_ = runner_->watch(listener_->fd(), POLLIN, [this](short) { listener_->serve(); });
  if (!config_.listen.loopback())
    fmt::print(stderr,
               "uscope: listening on {}, which is not loopback: other machines can read this "
               "node's metrics (give --listen 127.0.0.1:PORT to keep them local)\n",
               config_.listen.text());
  return {};
}

const NodeAgent::ExeVerdict* NodeAgent::judge(pid_t pid) {
  const std::string exe = fmt::format("/proc/{}/exe", pid);
  struct stat st {};
  if (stat(exe.c_str(), &st) != 0) return nullptr;
  auto key = std::make_pair(st.st_dev, st.st_ino);
  auto it = verdicts_.find(key);
  if (it == verdicts_.end()) {
    TargetContext ctx;
    ctx.main_executable = exe;
    ObjectCache cache(ctx, judged_);
    ExeVerdict v;
    if (auto obj = cache.get(""); obj && (*obj)->is_go) {
      v.go = true;
      auto sides = http_sides(cache, "");
      v.go_http = sides && sides->server;
    } else if (auto rt = find_runtime(ctx, "", "agent")) {
      v.runtime = rt->runtime;  // its program, its libraries, a java launcher's libjvm.so
    }
    // Bounded: a node that keeps building new binaries judges them again after a while.
    if (verdicts_.size() >= kVerdicts) verdicts_.clear();
    it = verdicts_.emplace(key, v).first;
  }
  return &it->second;
}

Result<void> NodeAgent::start_jobs(pid_t pid, Watched& w, const ExeVerdict& v) {
  const bool http = config_.http_metrics && v.go_http;
  const bool go = config_.go_runtime_metrics && v.go;
  const bool runtime = config_.runtime_metrics && v.runtime;
  // The functions the config names in this process's executable (by its path or its name).
  std::vector<ProbeSpec> functions;
  for (const auto& f : functions_)
    if (f.target == w.facts.exe || f.target == file_name(w.facts.exe)) functions.push_back(f);
  if (!http && !go && !runtime && functions.empty()) return {};
  SessionOptions so;
  so.pid = pid;
  auto session = Session::open(so, runner_.get());
  if (!session) return tl::unexpected(session.error());
  w.session = std::move(*session);
  w.cache = std::make_unique<ObjectCache>(w.session->context());
  if (http) {
    w.http_metrics = std::make_unique<HttpMetrics>(config_.max_series);
    HttpJob::Options ho;
    ho.ring_bytes = kHttpRingBytes;
    ho.aggregate_keys = kHttpRows;
    ho.plan.aggregate_bounds_ns = HttpMetrics::bounds_ns();
    auto job = HttpJob::start(
        *w.session, *w.cache, ho, [m = w.http_metrics.get()](HttpExchange& x) { m->add(x); },
        [m = w.http_metrics.get()](const HttpExchange& x, const HttpTally& t) { m->add(x, t); });
    if (!job) return tl::unexpected(job.error());
    w.http = std::move(*job);
  }
  if (go) {
    auto job = GoStatJob::attach(*w.session, *w.cache, true, true);
    if (!job) return tl::unexpected(job.error());
    w.go = std::move(*job);
    w.go->begin();
  }
  if (runtime) {
    auto rw = std::make_unique<RuntimeWatch>();
    rw->options.pid = pid;
    auto plan = plan_runtime(*w.cache, w.session->context(), std::string(v.runtime->name),
                             runtime_stat_events(), "agent");
    if (!plan) return tl::unexpected(plan.error());
    rw->plan = std::move(*plan);
    rw->metrics = std::make_unique<RuntimeMetrics>(rw->plan);
    rw->null.reset(open("/dev/null", O_WRONLY | O_CLOEXEC));
    if (!rw->null.valid()) return fail_errno(errno, "cannot open /dev/null");
    rw->out = std::make_unique<OutputBuffer>(rw->null.get());
    rw->job = std::make_unique<TraceJob>(*w.session, rw->options, rw->plan.trace, TraceJobOptions{},
                                         *rw->metrics, *rw->out);
    if (auto r = rw->job->start(); !r) return tl::unexpected(r.error());
    rw->callbacks = rw->job->callbacks();
    w.runtime = std::move(rw);
  }
  if (!functions.empty()) {
    for (auto& f : functions) f.target = "";  // the process's own executable
    auto plan = plan_latency(*w.cache, functions, {});
    if (!plan) return tl::unexpected(plan.error());
    auto l = std::make_unique<FunctionLatency>();
    l->options.pid = pid;
    l->plan = std::move(*plan);
    l->job = std::make_unique<LatencyJob>(
        *w.session, l->options, l->plan,
        [raw = l.get()](std::vector<LatencyRow> rows) { raw->rows = std::move(rows); });
    if (auto r = l->job->start(); !r) return tl::unexpected(r.error());
    l->callbacks = l->job->callbacks();
    w.latency = std::move(l);
  }
  // Its exit, seen by its pidfd: dropped once this callback is over (a job must not go while
  // the runner is inside its session's callback).
  w.session->install({}, [this, pid](StopReason) {
    runner_->at(Runner::Clock::now(), [this, pid] { drop(pid); });
  });
  return {};
}

void NodeAgent::consider(pid_t pid) {
  if (pid == getpid() || watched_.contains(pid)) return;
  const auto seen = Runner::Clock::now();
  bool ports = false;
  for (const auto& s : config_.select) ports |= s.port != 0;
  auto facts = process_facts(pid, ports);
  if (!facts) return;  // gone, or a kernel thread
  static const ProcessSelector kEveryGoServer = [] {
    ProcessSelector s;
    s.go_http = true;
    return s;
  }();
  auto go_http = [&] {
    const ExeVerdict* v = judge(pid);
    return v && v->go_http;
  };
  const ProcessSelector* picked = nullptr;
  if (config_.select.empty()) {
    if (selects(kEveryGoServer, *facts, go_http)) picked = &kEveryGoServer;
  } else {
    for (const auto& s : config_.select)
      if (selects(s, *facts, go_http)) {
        picked = &s;
        break;
      }
  }
  if (!picked) return;
  const ExeVerdict* verdict = judge(pid);
  if (!verdict) return;  // gone since its facts were read
  Watched w;
  w.seen = seen;
  w.facts = std::move(*facts);
  w.service = service_name(*picked, w.facts);
  if (auto r = start_jobs(pid, w, *verdict); !r) {
    if (verbose_)
      fmt::print(stderr, "uscope: process {} ({}): {}\n", pid, w.service, r.error().message);
    if (kill(pid, 0) != 0) return;  // it is gone: nothing to watch
    if (++attach_retries_[pid] <= kAttachRetries) {
      runner_->at(Runner::Clock::now() + kAttachRetryDelay, [this, pid] { consider(pid); });
      return;
    }
    ++attach_failures_;  // a process, once: its last try failed too
    w.http.reset();
    w.go.reset();
    w.latency.reset();
    w.runtime.reset();
  }
  if (verbose_) {
    std::string what;
    if (w.http) what += fmt::format(": HTTP RED, {} probe link(s)", w.http->links());
    if (w.go) what += w.http ? ", Go runtime" : ": Go runtime";
    if (w.latency)
      what += fmt::format("{}{} function(s) timed", what.empty() ? ": " : ", ",
                          w.latency->plan.functions.size());
    if (w.runtime)
      what +=
          fmt::format("{}{} runtime", what.empty() ? ": " : ", ", w.runtime->plan.runtime->title);
    fmt::print(stderr, "uscope: watching process {} ({}){}\n", pid, w.service, what);
  }
  attach_retries_.erase(pid);
  watched_.emplace(pid, std::move(w));
}

void NodeAgent::drop(pid_t pid) {
  attach_retries_.erase(pid);
  auto it = watched_.find(pid);
  if (it == watched_.end()) return;
  Watched& w = it->second;
  if (w.http) {
    w.http->stop();
    add_losses(gone_losses_, w.http->losses());
  }
  if (w.latency) (void)w.latency->job->stop(StopReason::TargetExited);
  if (w.runtime) {
    (void)w.runtime->job->stop(StopReason::TargetExited);
    gone_runtime_lost_ += w.runtime->job->totals().lost;
  }
  if (w.go) {
    w.go->detach();
    if (auto l = w.go->losses()) {
      gone_go_lost_ += l->ring_lost;
      gone_census_failures_ += l->census_failures;
    }
  }
  const std::string service = std::move(w.service);
  watched_.erase(it);  // its jobs' programs, maps and links closed
  // Said once nothing of it is left open (tests wait for this line, then count the fds).
  if (verbose_) fmt::print(stderr, "uscope: process {} ({}) dropped\n", pid, service);
}

void NodeAgent::rescan() {
  DIR* d = opendir("/proc");
  if (!d) return;
  std::set<pid_t> alive;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    alive.insert(static_cast<pid_t>(pid));
  }
  closedir(d);
  std::vector<pid_t> gone;
  for (const auto& [pid, w] : watched_)
    if (!alive.contains(pid)) gone.push_back(pid);
  for (pid_t pid : gone) drop(pid);
  for (pid_t pid : alive) consider(pid);
}

void NodeAgent::drain_runtime_events() {
  for (auto& [pid, w] : watched_)
    if (w.runtime)
      for (int i = 0; i < kBatchesPerTick; ++i)
        if (!w.runtime->callbacks.drain()) break;
}

void NodeAgent::tick() {
  drain_runtime_events();
  for (auto& [pid, w] : watched_) {
    if (w.go)
      for (int i = 0; i < kBatchesPerTick; ++i) {
        auto r = w.go->events().consume(kBatchEvents);
        if (!r || !r->more_pending) break;
      }
  }
}

// The Go runtime's figures and the functions' latencies as /metrics shows them: read on this
// beat, not at each scrape (a census reads the target's memory).
void NodeAgent::read_intervals() {
  for (auto& [pid, w] : watched_) {
    if (w.go) w.go->end_interval(false);
    if (w.latency) w.latency->callbacks.interval();
  }
}

void NodeAgent::add_latency_metrics(MetricsSnapshot& out, const MetricAttributes& resource,
                                    const FunctionLatency& l) const {
  for (const LatencyRow& row : l.rows) {
    // The kernel's log2 buckets, [2^b, 2^(b+1)) ns, as explicit bounds: exact, not re-binned.
    MetricPoint p;
    p.attributes = resource;
    p.attributes.emplace_back("code.function", row.function);
    for (size_t b = 0; b < row.buckets.size(); ++b) {
      const double low = std::ldexp(1.0, static_cast<int>(b)) / 1e9;
      p.bounds.push_back(2 * low);
      p.counts.push_back(row.buckets[b]);
      p.sum += static_cast<double>(row.buckets[b]) * 1.5 * low;  // the kernel keeps no sum
    }
    p.counts.push_back(0);
    out.metric("uscope.function.duration", MetricKind::Histogram, "s",
               "Duration of calls of the functions the config names (entry to return); the sum "
               "takes each call at its bucket's middle.")
        .points.push_back(std::move(p));
    MetricAttributes attrs = resource;
    attrs.emplace_back("code.function", row.function);
    out.add_value("uscope.function.returns_without_entry", MetricKind::Counter, "{call}",
                  "Returns of the timed functions whose entry was not seen (begun before the "
                  "probes, or the entry map full).",
                  static_cast<double>(row.returns_without_entry), std::move(attrs));
  }
}

void NodeAgent::reload() {
  ++reloads_;
  if (!reread_) {
    fmt::print(stderr, "uscope: SIGHUP: no --config to re-read; going on as before\n");
    return;
  }
  auto next = reread_();
  if (!next) {
    ++reload_failures_;
    fmt::print(stderr, "uscope: SIGHUP: {}; going on with the config read before\n",
               next.error().message);
    return;
  }
  auto functions = parse_patterns(next->functions);
  if (!functions) {
    ++reload_failures_;
    fmt::print(stderr,
               "uscope: SIGHUP: metrics.functions: {}; going on with the config read before\n",
               functions.error().message);
    return;
  }
  functions_ = std::move(*functions);
  const bool relisten = next->listen.text() != config_.listen.text();
  const bool repush = next->otlp_endpoint != config_.otlp_endpoint;
  config_ = std::move(*next);
  if (relisten)
    if (auto r = listen(); !r) fmt::print(stderr, "uscope: SIGHUP: {}\n", r.error().message);
  if (repush) pusher_ = config_.otlp_endpoint.empty() ? nullptr : std::make_unique<Pusher>();
  // Every process judged again under the new selectors.
  watched_.clear();
  rescan();
  fmt::print(stderr, "uscope: SIGHUP: config re-read; watching {} process(es)\n", watched_.size());
}

MetricAttributes NodeAgent::resource(pid_t pid, const Watched& w) const {
  MetricAttributes r{{"service.name", w.service}, {"process.pid", std::to_string(pid)}};
  if (!w.facts.container_id.empty()) r.emplace_back("container.id", w.facts.container_id);
  return r;
}

MetricsSnapshot NodeAgent::snapshot() const {
  MetricsSnapshot out;
  out.start_unix_ns = start_unix_ns_;
  out.time_unix_ns = unix_now_ns();
  for (const auto& [pid, w] : watched_) {
    if (w.http) w.http_metrics->snapshot(out, resource(pid, w));
    if (w.go) w.go->snapshot(out, resource(pid, w));
    if (w.latency) add_latency_metrics(out, resource(pid, w), *w.latency);
    if (w.runtime) w.runtime->metrics->snapshot(out, resource(pid, w));
  }
  add_own_metrics(out);
  return out;
}

void NodeAgent::add_own_metrics(MetricsSnapshot& out) const {
  auto gauge = [&](const std::string& name, const std::string& unit, const std::string& what,
                   double v, MetricAttributes attrs = {}) {
    out.add_value(name, MetricKind::Gauge, unit, what, v, std::move(attrs));
  };
  auto counter = [&](const std::string& name, const std::string& unit, const std::string& what,
                     double v, MetricAttributes attrs = {}) {
    out.add_value(name, MetricKind::Counter, unit, what, v, std::move(attrs));
  };
  size_t links = 0, jobs = 0;
  uint64_t go_lost = gone_go_lost_, census_failures = gone_census_failures_;
  uint64_t overflowed = 0;
  HttpLosses losses = gone_losses_;
  std::vector<int> fds;
  for (const auto& [pid, w] : watched_) {
    if (w.http) {
      ++jobs;
      links += w.http->links();
      overflowed += w.http_metrics->overflowed();
      add_losses(losses, w.http->losses());
      for (int fd : w.http->program_fds()) fds.push_back(fd);
    }
    if (w.go) {
      ++jobs;
      links += w.go->links();
      if (auto l = w.go->losses()) {
        go_lost += l->ring_lost;
        census_failures += l->census_failures;
      }
      for (int fd : w.go->program_fds()) fds.push_back(fd);
    }
    if (w.runtime) {
      ++jobs;
      links += w.runtime->job->links();
      for (int fd : w.runtime->job->program_fds()) fds.push_back(fd);
    }
  }
  losses.ring_lost += go_lost + gone_runtime_lost_;
  gauge("uscope.processes", "{process}", "Processes the agent's selectors picked.",
        static_cast<double>(watched_.size()));
  gauge("uscope.jobs", "{job}",
        "Jobs running: a process's HTTP RED, its Go runtime, its managed runtime's counts.",
        static_cast<double>(jobs));
  gauge("uscope.probe.links", "{link}", "uprobe links attached.", static_cast<double>(links));
  const std::pair<const char*, uint64_t> causes[] = {{"ring_full", losses.ring_lost},
                                                     {"read_error", losses.read_errors},
                                                     {"no_entry", losses.no_entry},
                                                     {"entry_map_full", losses.entry_save_failed},
                                                     {"malformed", losses.malformed},
                                                     {"truncated", losses.truncated},
                                                     {"aggregation_map_full", losses.agg_full},
                                                     {"status_unknown", losses.status_unknown},
                                                     {"unfinished", losses.unfinished},
                                                     {"census_failed", census_failures}};
  for (const auto& [cause, n] : causes)
    counter("uscope.events.lost", "{event}", "Events lost or incomplete, by cause.",
            static_cast<double>(n), {{"cause", cause}});
  counter("uscope.http.series.overflow", "{request}",
          "Requests counted under \"(other routes)\" because the series cap was reached.",
          static_cast<double>(overflowed));
  counter("uscope.attach.failures", "{process}",
          "Selected processes whose probes could not be attached.",
          static_cast<double>(attach_failures_));
  counter("uscope.process_events.overflows", "{overflow}",
          "Times the kernel dropped process events (the agent then rescans /proc).",
          static_cast<double>(process_event_overflows_));
  counter("uscope.config.reloads", "{reload}", "SIGHUP reloads, and those that failed.",
          static_cast<double>(reloads_ - reload_failures_), {{"result", "ok"}});
  counter("uscope.config.reloads", "{reload}", "SIGHUP reloads, and those that failed.",
          static_cast<double>(reload_failures_), {{"result", "failed"}});
  // Only while the kernel's BPF stats are on (sysctl kernel.bpf_stats_enabled=1): otherwise
  // the kernel does not time the programs, and a 0 would read as "free".
  if (bpf_stats_on())
    if (auto t = bpf_run_time(fds))
      counter("uscope.bpf.time", "s", "Time the agent's BPF programs ran (kernel BPF stats).",
              static_cast<double>(t->run_time_ns) / 1e9);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  counter("process.cpu.time", "s", "CPU time of the agent.", secs(ru.ru_utime),
          {{"cpu.mode", "user"}});
  counter("process.cpu.time", "s", "CPU time of the agent.", secs(ru.ru_stime),
          {{"cpu.mode", "system"}});
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (statm >> size >> resident)
    gauge("process.memory.usage", "By", "Resident memory of the agent.",
          static_cast<double>(resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE))));
  if (profile_export_) {
    const ProfileExportCounters& c = profile_export_->counters();
    counter("uscope.profile.periods", "{period}", "Profile periods exported.",
            static_cast<double>(c.periods));
    counter("uscope.profile.profiles", "{profile}", "Per-process profiles made.",
            static_cast<double>(c.profiles));
    counter("uscope.profile.files", "{file}", "Profile files written, and those that failed.",
            static_cast<double>(c.files_written), {{"result", "written"}});
    counter("uscope.profile.files", "{file}", "Profile files written, and those that failed.",
            static_cast<double>(c.files_failed), {{"result", "failed"}});
    counter("uscope.profile.failures", "{period}", "Periods whose profile could not be read.",
            static_cast<double>(profile_failures_));
    // Samples lost by cause over every period so far, and those the stack cap cut.
    auto losses = profile_losses_;
    losses.emplace_back(kStacksOverLimit, c.samples_dropped);
    for (const auto& [cause, n] : losses)
      counter("uscope.profile.samples.lost", "{sample}", "Profile samples lost, by cause.",
              static_cast<double>(n), {{"cause", cause}});
    const PushCounters pc = profile_export_->push_counters();
    for (const auto& [result, n] : {std::pair<const char*, uint64_t>{"sent", pc.sent},
                                    {"failed", pc.failed},
                                    {"dropped", pc.dropped}})
      counter("uscope.profile.pushes", "{push}", "Profile pushes, by result.",
              static_cast<double>(n), {{"result", result}});
  }
  if (listener_) {
    counter("uscope.listener.requests", "{request}", "Requests to the agent's endpoints.",
            static_cast<double>(listener_->served()), {{"result", "served"}});
    counter("uscope.listener.requests", "{request}", "Requests to the agent's endpoints.",
            static_cast<double>(listener_->refused()), {{"result", "refused"}});
  }
  if (pusher_) {
    const PushCounters c = pusher_->counters();
    for (const auto& [result, n] : {std::pair<const char*, uint64_t>{"sent", c.sent},
                                    {"failed", c.failed},
                                    {"dropped", c.dropped}})
      counter("uscope.pushes", "{push}", "OTLP pushes, by result.", static_cast<double>(n),
              {{"result", result}});
  }
}

void NodeAgent::push_otlp() {
  if (!pusher_) return;
  PushRequest req;
  req.url = config_.otlp_endpoint;
  if (!req.url.ends_with("/v1/metrics")) {
    if (req.url.ends_with('/')) req.url.pop_back();
    req.url += "/v1/metrics";
  }
  req.content_type = kOtlpProtobufType;
  drain_runtime_events();
  req.body = otlp_metrics_request(snapshot(), {{"host.name", host_}, {"service.name", "uscope"}},
                                  kUscopeVersion);
  pusher_->push(std::move(req));
}

Result<void> NodeAgent::start_profiling() {
  if (!profile_export_) {
    ProfileExportOptions eo;
    eo.push_url = config_.profile_push;
    eo.directory = config_.profile_directory;
    eo.max_stacks = config_.max_stacks;
    auto e = ProfileExport::open(eo, profile_sources(host_, [this](pid_t pid) {
                                   auto it = watched_.find(pid);
                                   return it == watched_.end() ? std::string() : it->second.service;
                                 }));
    if (!e) return fail("profiles: {}", e.error().message);
    profile_export_ = std::move(*e);
  }
  ProfileTarget t;
  t.all = true;
  t.frequency_hz = static_cast<uint64_t>(config_.profile_hz);
  auto session = ProfileSession::open(t, runner_.get());
  if (!session) return fail("cannot profile: {}", session.error().message);
  profile_ = std::move(*session);
  profile_->install([this](StopReason why) {
    fmt::print(stderr, "uscope: profiling stopped ({}); metrics go on\n", describe(why));
    runner_->at(Runner::Clock::now(), [this] {
      if (profile_) profile_->stop();
      profile_.reset();
    });
  });
  if (auto r = profile_->start(); !r) return fail("cannot profile: {}", r.error().message);
  profile_->load_kernel_symbols();
  profile_started_ = Runner::Clock::now();
  return {};
}

void NodeAgent::export_profile_period() {
  if (!profile_) return;
  const auto began = Runner::Clock::now();
  // With selectors, the host's samples of the processes they picked (the others are not even
  // symbolized); without, every process.
  std::function<bool(pid_t)> keep;
  if (!config_.select.empty()) keep = [this](pid_t pid) { return watched_.contains(pid); };
  auto period = profile_->period(keep);
  if (!period) {
    ++profile_failures_;
    fmt::print(stderr, "uscope: profiles: {}\n", period.error().message);
    return;
  }
  // Samples lost by cause, summed over the periods (and the sessions) so far.
  for (const auto& [cause, n] : period->losses) {
    auto it = std::find_if(profile_losses_.begin(), profile_losses_.end(),
                           [&](const auto& l) { return l.first == cause; });
    if (it == profile_losses_.end())
      profile_losses_.emplace_back(cause, n);
    else
      it->second += n;
  }
  // The rings filled while the period was read (its first symbolizes every process's code).
  tick();
  const auto read = Runner::Clock::now();
  if (auto r = profile_export_->export_period(std::move(*period)); !r) {
    ++profile_failures_;
    if (verbose_) fmt::print(stderr, "uscope: profiles: {}\n", r.error().message);
  }
  if (verbose_)
    fmt::print(
        stderr, "uscope: profile period read in {} ms, exported in {} ms\n",
        std::chrono::duration_cast<std::chrono::milliseconds>(read - began).count(),
        std::chrono::duration_cast<std::chrono::milliseconds>(Runner::Clock::now() - read).count());
  if (Runner::Clock::now() - profile_started_ < kProfileSessionLife) return;
  // A new session: its maps go. Its program's load stalls the loop, so the rings are read first.
  tick();
  profile_->stop();
  profile_.reset();
  if (auto r = start_profiling(); !r) fmt::print(stderr, "uscope: {}\n", r.error().message);
}

int NodeAgent::run() {
  Runner& r = *runner_;
  auto functions = parse_patterns(config_.functions);
  if (!functions) {
    fmt::print(stderr, "uscope: metrics.functions: {}\n", functions.error().message);
    return 2;
  }
  functions_ = std::move(*functions);
  // The profiler first: its program's load (the verifier: ~0.25 s of CPU) and the kernel's
  // symbols come before any HTTP ring exists to fill while the loop is busy with them.
  if (config_.profiles)
    if (auto p = start_profiling(); !p) {
      fmt::print(stderr, "uscope: {}\n", p.error().message);
      return 1;
    }
  rescan();
  r.watch(events_->fd(), POLLIN, [this](short) {
    for (const ProcessEvent& e : events_->read()) {
      if (e.kind == ProcessEvent::Exit) {
        drop(e.pid);
      } else {  // an exec: another program now, or a selected one starting
        // Unless /proc showed the process after it (a rescan that ran before this event was
        // read): dropping it then would detach a watched process's probes for nothing.
        if (auto it = watched_.find(e.pid); it != watched_.end() && e.at < it->second.seen)
          continue;
        drop(e.pid);
        consider(e.pid);
      }
    }
    if (uint64_t n = events_->take_overflows()) {
      process_event_overflows_ += n;
      rescan();
    }
  });
  r.every(kTick, [this] { tick(); });
  r.every(kHarvest, [this] {
    for (auto& [pid, w] : watched_)
      if (w.http) w.http->harvest();
  });
  if (config_.go_runtime_metrics || !functions_.empty())
    r.every(kReadInterval, [this] { read_intervals(); });
  r.every(kRescan, [this] { rescan(); });
  r.every(kListenerBeat, [this] { listener_->serve(); });
  if (pusher_) r.every(config_.otlp_period, [this] { push_otlp(); });
  if (config_.profiles) r.every(config_.profile_period, [this] { export_profile_period(); });
  r.on_hangup([this] { reload(); });
  fmt::print(stderr,
             "uscope: agent serving http://{}/metrics; watching {} process(es); Ctrl-C or "
             "SIGTERM to stop, SIGHUP to re-read the config\n",
             config_.listen.text(), watched_.size());
  StopReason why = r.run();
  const size_t n = watched_.size();
  if (profile_) {
    export_profile_period();  // the last, partial period
    profile_->stop();
    profile_.reset();
  }
  if (profile_export_) profile_export_->drain();
  watched_.clear();
  fmt::print(stderr, "uscope: agent stopped ({}); {} process(es) released\n", describe(why), n);
  return 0;
}

}  // namespace uscope::cli
