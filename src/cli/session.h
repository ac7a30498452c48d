#pragma once
// What trace, count and latency share: the target options (-p, -c, -d, -M, -i), turning them into
// a planning context, and the session's end (why it stopped, the launched command's fate).
#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "attach/bpf_loader.h"
#include "attach/unwind_maps.h"
#include "attach/uprobe_links.h"
#include "cli/output_options.h"
#include "collect/event_decoder.h"
#include "collect/event_loop.h"
#include "collect/trace_program.h"
#include "discover/launched_command.h"
#include "discover/process.h"
#include "model/event_losses.h"
#include "plan/planner.h"
#include "util/output_buffer.h"

namespace uscope::cli {

struct SessionOptions {
  pid_t pid = 0;
  std::string command;
  double duration_s = 0;
  double interval_s = 0;
  uint64_t max_events = 0;
  OutputOptions output;  // --format, -o, --json
  bool verbose = false;
  bool no_multi = false;  // force one link per site (comparison, old kernels)
};

// -p, -c, -d, --format, -o, --json, -v; `with_interval` adds -i, `with_max_events` adds -M.
void add_session_options(CLI::App* cmd, SessionOptions& o, bool with_interval,
                         bool with_max_events);

// Parses count/latency patterns; the error names the pattern.
Result<std::vector<ProbeSpec>> parse_patterns(const std::vector<std::string>& texts);

// One tracing session from its target to its end: capabilities checked, the process to watch
// opened or the command to start prepared, and the stop signals routed to the event loop before
// anything attaches, so that every way out goes through the loop and its detach.
class Session {
 public:
  // `shared`: the agent's runner, on which the session is install()ed beside others; nullptr: a
  // runner of the session's own, for run(). On a shared runner the agent learns of the target's
  // exec from the kernel's process events, so the session does not look for one itself.
  static Result<std::unique_ptr<Session>> open(const SessionOptions& o, Runner* shared = nullptr);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Where probes go; points into this session, which is why it does not move.
  const TargetContext& context() const { return context_; }
  pid_t watch_pid() const { return context_.pid; }
  // -c: the watched process is uscope's fork until its exec; BPF programs gate on the exec.
  bool launched() const { return command_.has_value(); }
  // -c: the command's program as its command line names it (symlinks kept); "" otherwise.
  std::string started_as() const { return command_ ? command_->started_as() : ""; }
  // Which processes the BPF programs act on.
  TargetFilter target_filter() const { return {watch_pid(), launched()}; }
  // The unwinder's tables for `pid` before its first walk: a -p target's loaded now; a -c
  // command's made ready for its exec, with the files it starts with loaded in advance.
  Result<void> prepare_unwind(UnwindMaps& maps, pid_t pid) const;
  // A failed attach, or what happened to the target in the meantime when that explains it.
  Error explain_attach_failure(const Error& failure, std::span<const AttachSite> sites) const;
  // Lets a launched command exec (no-op without -c).
  Result<void> start();
  // Runs the event loop until a stop.
  StopReason run(const EventLoop::Callbacks& cb);
  // On a shared runner: see EventLoop::install and uninstall.
  void install(const EventLoop::Callbacks& cb, std::function<void(StopReason)> stopped) {
    loop_->install(cb, std::move(stopped));
  }
  void uninstall() { loop_->uninstall(); }
  // The launched command's CPU time, when the loop reaped it (wait4).
  std::optional<CpuTime> reaped_target_cpu_time() const { return loop_->child_cpu_time(); }
  // The target's command line (-p: as /proc shows it now; -c: as given); nullopt without one.
  std::optional<std::string> command_line() const;

 private:
  Session() = default;
  std::optional<Process> process_;
  std::optional<LaunchedCommand> command_;
  std::string command_text_;
  TargetContext context_;
  std::optional<EventLoop> loop_;
};

// Before the probes attach (trace, count, latency, hist): says on stderr, once each, which files
// the watched process does not map yet (their probes wait for it to map them: a dlopen), and what
// is known of probes that need a runtime flag or fire rarely (plan/probe_notes.h).
void announce_plan(const Session& session, const ObjectCache& cache,
                   std::span<const PlannedSite> sites);

// count and latency write their tables through an OutputBuffer on stdout (or the -o file), which
// the event loop writes only when the output takes it: a blocked stdout never holds up signals,
// -d or -i.
// Appends what `print` writes; false (nothing appended) when the buffer is full.
bool append_printed(OutputBuffer& out, const std::function<void(std::FILE*)>& print);
// At the end of a session: writes the rest within a short deadline (a stop takes effect at once),
// saying on stderr when the output did not take it.
void finish_output(OutputBuffer& out, uint64_t tables_not_written);

// The event commands (http, tls): the trace program loaded with `plan`'s recipes for the
// session's target and attached at its sites (one uprobe_multi link per object unless
// `no_multi`); a failed attach explained by what happened to the target. `ring_bytes` and
// `agg_keys`: see TraceProgram::load.
Result<TraceProgram> attach_trace_plan(const Session& session, const TracePlan& plan, bool no_multi,
                                       uint32_t ring_bytes = 0, uint32_t agg_keys = 0);
// A stop must take effect within ~100 ms: after the detach (tens of ms: the kernel waits for an
// RCU grace period), what the ring buffer holds is read for at most kStopDrain (trace's loop and
// run_event_session alike). After the target ended, an output that takes nothing is waited for
// kStalledOutput.
inline constexpr auto kStopDrain = std::chrono::milliseconds(20);
inline constexpr auto kStalledOutput = std::chrono::seconds(1);
// Then runs the loop, reading `program`'s events (handed to the handler
// given to open_events()) with `out` as the output, until a stop; detaches the probes; then reads
// what the ring holds, all of it when the target ended (exit or exec), else within a short
// deadline. A failed read lands in `read_error`.
StopReason run_event_session(Session& session, TraceProgram& program, OutputBuffer& out,
                             std::optional<Error>& read_error);
// Then the losses: the program's counters summed into `l`, events it emitted that the loop did
// not read counted as output_dropped, records the decoder or the ring reader could not take as
// malformed. `events_read`: what the event handler was given.
Result<void> add_program_losses(const TraceProgram& program, const EventDecoder& decoder,
                                uint64_t events_read, EventLosses& l);
// Then, after the summary is appended: writes the lines, all of them when the target ended, else
// within a short deadline, saying on stderr how many were not written.
void finish_event_output(StopReason why, OutputBuffer& out);

// Events per read of a ring buffer: bounds the work between two looks at signals and timers
// (~0.5 ms of formatting).
inline constexpr size_t kBatchEvents = 512;
// The loop reads `program`'s ring when it signals and on a timer (the BPF side batches its
// wake-ups), kBatchEvents records per call; a failed read lands in `read_error`.
void read_events_in_loop(TraceProgram& program, EventLoop::Callbacks& cb,
                         std::optional<Error>& read_error);

// Prints site placements (cost class, moved or not, role) and the sites left out to stderr for
// --verbose.
void print_sites(std::span<const PlannedSite> sites, std::span<const SkippedSite> skipped = {});

// trace: for --verbose, where each name of a spec on Go code was found ("uscope: main.work: tag
// in rbx, rcx (string), from DWARF").
void print_name_origins(const TracePlan& plan);

// trace: says on stderr how many functions its globs matched but could not probe (left out when
// planned, or refused by the kernel when attached), naming each with `verbose`.
void report_unprobed(const TracePlan& plan, std::span<const UprobeLinks::Refused> refused,
                     bool verbose);

}  // namespace uscope::cli
