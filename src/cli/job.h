#pragma once
// A job: one kind of work (count, latency, hist, ...) that loads, attaches, collects into a model
// and stops (docs/DEVELOPING.md, "Jobs"). It never prints and never picks a format: it hands its
// model to the sink the command chose, at each -i and once at the end.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "cli/output_options.h"
#include "cli/session.h"
#include "collect/event_loop.h"
#include "collect/overhead_meter.h"
#include "collect/trace_program.h"
#include "model/overhead.h"
#include "plan/planner.h"
#include "util/output_buffer.h"
#include "util/result.h"

namespace uscope::cli {

class Job {
 public:
  virtual ~Job() = default;
  // Loads and attaches, then lets the session's target start; nothing stays attached when it
  // fails.
  virtual Result<void> start() = 0;
  // What the session's loop wakes the job for (its ring, -i, its own checks).
  virtual EventLoop::Callbacks callbacks() = 0;
  // Detaches every probe and hands the last model to the sink; an error says what could not be
  // read.
  virtual Result<void> stop(StopReason why) = 0;
  // After stop: what the probes cost; nullopt when their counters cannot be read.
  virtual std::optional<Overhead> overhead() = 0;
};

// What a table job asks of the loop: its table at each -i, and at every wake-up its overhead
// meter sampled and the session ended once a read of its counters failed (`read_error` set).
EventLoop::Callbacks table_job_callbacks(std::function<void()> emit_table, OverheadMeter& meter,
                                         const std::optional<Error>& read_error);

// The planned sites with the BPF runs `hits` gives per cookie: the overhead estimate's input.
std::vector<OverheadSite> costed_sites(std::span<const PlannedSite> sites,
                                       const std::function<uint64_t(uint64_t cookie)>& hits);
// What the trace program's probes at `sites` cost (latency, count --by, hist); nullopt when its
// counters cannot be read.
std::optional<Overhead> trace_program_overhead(TraceProgram& program,
                                               std::span<const PlannedSite> sites,
                                               OverheadMeter& meter, const Session& session);

// The sink of the table commands (count, latency, hist): each table rendered in the output's
// format into a buffer that the loop writes when the output takes it, so a blocked stdout never
// holds up signals, -d or -i.
class TableOutput {
 public:
  explicit TableOutput(const CommandOutput& output) : output_(output), out_(output.fd()) {}
  // Appends what `print` writes in `format()`; a table that does not fit is counted.
  void append(const std::function<void(std::FILE*)>& print);
  OutputFormat format() const { return output_.format; }

 private:
  friend int run_job(Session& session, Job& job, TableOutput& out, bool verbose);
  const CommandOutput& output_;
  OutputBuffer out_;
  uint64_t not_written_ = 0;
};

// Runs one job on the session until a stop, then the rest of its tables, why it stopped (text
// only) and what its probes cost on stderr. The exit code.
int run_job(Session& session, Job& job, TableOutput& out, bool verbose);

}  // namespace uscope::cli
