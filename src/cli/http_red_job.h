#pragma once
// One Go process's HTTP RED for the agent: `uscope http`'s probes (plan/http_plan.h) attached to
// it, their events read on the agent's shared runner into OpenTelemetry's http.server/client
// request-duration histograms (agent/http_metrics.h), with every loss counted.
#include <functional>
#include <memory>
#include <optional>

#include "agent/http_metrics.h"
#include "cli/session.h"
#include "collect/event_decoder.h"
#include "collect/trace_program.h"
#include "model/http_red.h"
#include "plan/http_plan.h"
#include "util/runner.h"

namespace uscope::cli {

class HttpRedJob {
 public:
  // Plans and attaches the probes of the session's process; drain() reads their events.
  static Result<std::unique_ptr<HttpRedJob>> start(const Session& session, ObjectCache& cache,
                                                   size_t max_series);
  ~HttpRedJob();
  HttpRedJob(const HttpRedJob&) = delete;
  HttpRedJob& operator=(const HttpRedJob&) = delete;

  // Reads what the ring holds, a bounded batch at a time; true when more is left. The agent
  // calls it on its own timer: each job's BPF side wakes its reader only when its ring is a
  // quarter full, and a timer per job would wake the agent hundreds of times a second.
  bool drain();
  // Detaches the probes and reads what is left; idempotent.
  void stop();

  const HttpMetrics& metrics() const { return metrics_; }
  // Losses so far by cause (the program's counters and what the reader dropped).
  HttpLosses losses() const;
  size_t links() const { return program_ ? program_->link_count() : 0; }
  // The trace program's BPF programs, for their run time (collect/bpf_run_stats.h).
  std::vector<int> program_fds() const;

 private:
  HttpRedJob() = default;
  void on_event(const uscope_event& ev, std::span<const uint8_t> payload);

  std::optional<HttpPlan> plan_;
  std::optional<TraceProgram> program_;
  std::optional<EventDecoder> decoder_;
  HttpMetrics metrics_;
  DecodedEvent decoded_;
  uint64_t events_read_ = 0, not_http_ = 0, status_unknown_ = 0;
  std::optional<Error> read_error_;
  bool stopped_ = false;
};

}  // namespace uscope::cli
