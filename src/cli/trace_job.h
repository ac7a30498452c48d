#pragma once
// The job of `uscope trace`: bcc trace's probes, planned by the command, loaded into the trace
// program and attached; each event decoded, its %U/%K and -U/-K stacks symbolized, and handed to
// the command's TraceOutput; every loss counted (TraceTotals).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cli/job.h"
#include "cli/session.h"
#include "cli/trace_options.h"
#include "collect/event_decoder.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "collect/unwind_follower.h"
#include "model/trace_totals.h"
#include "sink/event_sink.h"
#include "util/output_buffer.h"

namespace uscope::cli {

struct TraceJobOptions {
  bool user_stack = false;    // -U: stacks walked by CFI in the kernel (unwind tables loaded)
  bool kernel_stack = false;  // -K
  uint32_t ring_bytes = 0;    // 0: the trace program's default
  std::string comm_filter;    // -n: only events whose comm contains it (tested here)
};

class TraceJob : public Job {
 public:
  // `sink` writes the events into `out`, the session's output.
  TraceJob(Session& session, const SessionOptions& so, const TracePlan& plan, TraceJobOptions o,
           EventSink& sink, OutputBuffer& out);
  Result<void> start() override;
  EventLoop::Callbacks callbacks() override;
  // Detaches, then reads and writes out what the ring holds: all of it when the target ended,
  // else within a short deadline; then counts the losses.
  Result<void> stop(StopReason why) override;
  std::optional<Overhead> overhead() override { return overhead_; }
  // After stop.
  const TraceTotals& totals() const { return totals_; }
  // After start (the agent's own metrics).
  size_t links() const { return program_ ? program_->link_count() : 0; }
  std::vector<int> program_fds() const {
    return program_ ? program_->program_fds() : std::vector<int>{};
  }

 private:
  bool limit_reached() const { return so_.max_events && sink_.events() >= so_.max_events; }
  void on_event(const uscope_event& ev, std::span<const uint8_t> payload);
  // One bounded batch of the ring (and the unwind tables' requests); true when more is left.
  bool drain();

  Session& session_;
  const SessionOptions& so_;
  const TracePlan& plan_;
  TraceJobOptions o_;
  EventSink& sink_;
  OutputBuffer& out_;
  EventSymbols symbols_;
  EventDecoder decoder_;
  OverheadMeter meter_;
  std::unique_ptr<UnwindMaps> unwind_;
  std::optional<TraceProgram> program_;
  std::optional<UnwindFollower> follower_;
  DecodedEvent decoded_;  // reused from event to event
  uint64_t read_events_ = 0, comm_filtered_ = 0;
  std::optional<Error> read_error_;
  TraceTotals totals_;
  std::optional<Overhead> overhead_;
};

}  // namespace uscope::cli
