#pragma once
// Go net/http's requests of one process, as `uscope http` and the agent read them: the probes of
// plan/http_plan.h attached to the session's process, and each event decoded into an HttpExchange
// handed to the caller (`http` prints it and keeps RED per route; the agent counts it into
// OpenTelemetry's request-duration histograms), with every loss counted.
#include <functional>
#include <memory>
#include <optional>

#include "cli/session.h"
#include "collect/event_decoder.h"
#include "collect/trace_program.h"
#include "model/http_red.h"
#include "plan/http_plan.h"

namespace uscope::cli {

class HttpJob {
 public:
  struct Options {
    // plan.aggregate_bounds_ns set: exchanges are counted in the kernel and read by harvest(),
    // no event crosses the ring (the agent: its rings could not keep up with busy servers).
    HttpPlanOptions plan;
    bool use_multi = true;
    uint32_t ring_bytes = 0;      // 0: the trace program's default
    uint32_t aggregate_keys = 0;  // counted in the kernel: rows of the two epochs (0: default)
  };
  using OnExchange = std::function<void(HttpExchange&)>;
  // Counted in the kernel: `tally.count` exchanges like `x` (its duration unset).
  using OnTally = std::function<void(const HttpExchange& x, const HttpTally& tally)>;
  // Plans and attaches the probes of the session's process; events are read by the session's
  // loop (events() with run_event_session); counted in the kernel, by harvest().
  static Result<std::unique_ptr<HttpJob>> start(const Session& session, ObjectCache& cache,
                                                const Options& options, OnExchange on_exchange,
                                                OnTally on_tally = {});
  // The trace program detaches as it goes; nothing more is read (`http` has written its summary).
  ~HttpJob() = default;
  HttpJob(const HttpJob&) = delete;
  HttpJob& operator=(const HttpJob&) = delete;

  const HttpPlan& plan() const { return plan_; }
  TraceProgram& events() { return *program_; }
  // Counted in the kernel: hands on_tally what was counted under the epoch the previous call
  // left, deletes it, and leaves the current one. Call it on a steady beat of a fraction of a
  // second or more: that is how long a run has to finish adding to a row before it is read
  // (take_aggregate_rows).
  void harvest();
  // Detaches the probes and reads what is left (bounded); idempotent.
  void stop();
  // Losses so far by cause (the program's counters, which stay readable after the detach, and
  // what the reader could not use). `unfinished` is final only once stopped (stop()).
  HttpLosses losses() const;
  const std::optional<Error>& read_error() const { return read_error_; }
  size_t links() const { return program_->link_count(); }
  // The trace program's BPF programs, for their run time (collect/bpf_run_stats.h).
  std::vector<int> program_fds() const { return program_->program_fds(); }

 private:
  HttpJob(HttpPlan plan, OnExchange on_exchange, OnTally on_tally)
      : plan_(std::move(plan)),
        decoder_(plan_.trace),
        on_exchange_(std::move(on_exchange)),
        on_tally_(std::move(on_tally)) {}
  void on_event(const uscope_event& ev, std::span<const uint8_t> payload);
  // The rows of `epoch`, read and deleted, to on_tally.
  void take(uint32_t epoch);
  // Served requests that began and never ended (HttpLosses::unfinished), from the counters of
  // the server probe's sites: its entry, its ends and where a recorded request is dropped.
  uint64_t unfinished(std::span<const RecipeCounters> counters) const;

  HttpPlan plan_;
  EventDecoder decoder_;
  OnExchange on_exchange_;
  OnTally on_tally_;
  bool aggregated_ = false;
  size_t buckets_ = 0;  // aggregated: the plan's bounds and one
  uint32_t epoch_ = 0;  // what the kernel counts under now
  HttpTally tally_;     // reused from row to row
  std::optional<TraceProgram> program_;
  DecodedEvent decoded_;
  uint64_t events_read_ = 0, not_http_ = 0, status_unknown_ = 0, truncated_ = 0;
  std::optional<Error> read_error_;
  bool stopped_ = false;
};

}  // namespace uscope::cli
