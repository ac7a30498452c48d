// `uscope stat`: a Go program's runtime, per interval: live goroutines, goroutines created and
// exited, GC cycles, stop-the-world pauses; a summary at the end. Entry uprobes on the runtime
// (plan/go_stat_plan.h): counts in the kernel, the world's stops and starts as timed events, and
// the live goroutines from a census of the target's memory.
#include <fmt/chrono.h>
#include <fmt/core.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/session.h"
#include "collect/go_goroutines.h"
#include "collect/hit_counts.h"
#include "collect/trace_program.h"
#include "discover/process.h"
#include "model/go_stat.h"
#include "plan/go_stat_plan.h"
#include "sink/go_stat_output.h"
#include "util/output_buffer.h"

namespace uscope::cli {

namespace {

struct StatOptions {
  SessionOptions session;
  bool no_move = false;
};

std::string clock_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:%H:%M:%S}", tm);
}

int run_stat(const StatOptions& o) {
  if (!o.session.pid && o.session.command.empty())
    return report_error("uscope stat needs a Go program: -p PID or -c 'COMMAND'", kExitUsage);
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  auto plan = plan_go_stat(cache, {.target = "", .move_sites = !o.no_move});
  if (!plan) return report_error(plan.error().message);
  if (o.session.verbose) {
    print_sites(plan->counts.sites);
    print_sites(plan->stw.sites);
    if (plan->goroutines)
      fmt::print(stderr, "uscope: live goroutines from runtime.allgs; {}\n",
                 plan->goroutines->sources);
  }
  if (!plan->goroutines)
    fmt::print(stderr, "uscope: live goroutines unknown: {}\n", plan->no_goroutines);

  std::vector<AttachSite> counted;
  for (const auto& s : plan->counts.sites) counted.push_back(s.attach);
  auto counts = HitCounts::attach(counted, (*session)->target_filter(), !o.session.no_multi, false);
  if (!counts)
    return report_error((*session)->explain_attach_failure(counts.error(), counted).message);
  auto program =
      TraceProgram::load(plan->stw.recipes, (*session)->target_filter(), !o.session.no_multi);
  if (!program) return report_error(program.error().message);
  std::vector<AttachSite> stw_sites;
  for (const auto& s : plan->stw.sites) stw_sites.push_back(s.attach);
  if (auto r = program->attach(stw_sites); !r)
    return report_error((*session)->explain_attach_failure(r.error(), stw_sites).message);

  GoRuntimeStats stats;
  GoStatLosses losses;
  uint64_t read_events = 0;
  auto on_event = [&](const uscope_event& ev, std::span<const uint8_t>) {
    ++read_events;
    if (ev.probe_id >= plan->stw_event.size()) {
      ++losses.malformed;
      return;
    }
    if (plan->stw_event[ev.probe_id] == GoRuntimeEvent::StopTheWorld)
      stats.world_stopped(ev.tgid, ev.ts);
    else
      stats.world_started(ev.tgid, ev.ts);
  };
  if (auto r = program->open_events(on_event); !r) return report_error(r.error().message);
  fmt::print(stderr,
             "uscope: watching the Go runtime of {} ({}): goroutines, GC, stop-the-world; Ctrl-C "
             "to stop\n",
             plan->object, plan->go_version);

  // The live goroutines, read once the target runs its own binary (-c: after the exec).
  std::optional<uint64_t> bias;
  auto census = [&](bool target_gone) -> std::optional<GoroutineCount> {
    if (!plan->goroutines || target_gone) return std::nullopt;
    if (!bias) {
      auto obj = cache.get("");
      auto process = Process::open((*session)->watch_pid());
      if (obj && process && process->main_object())
        bias = load_bias(*process->main_object(), (*obj)->elf);
    }
    if (bias)
      if (auto n = count_goroutines((*session)->watch_pid(), *plan->goroutines, *bias)) return *n;
    // The target ending under the read, before the session sees it gone: no census, no loss.
    if (process_exiting((*session)->watch_pid())) return std::nullopt;
    ++losses.census_failures;
    return std::nullopt;
  };
  std::optional<Error> read_error;
  auto totals = [&]() -> std::optional<GoRuntimeCounts> {
    auto values = counts->read();
    if (!values) {
      read_error = values.error();
      return std::nullopt;
    }
    GoRuntimeCounts t;
    for (size_t i = 0; i < plan->counts.sites.size(); ++i) {
      uint64_t n = (*values)[plan->counts.sites[i].attach.cookie];
      switch (plan->counted_event[i]) {
        case GoRuntimeEvent::Created:
          t.created += n;
          break;
        case GoRuntimeEvent::Exited:
          t.exited += n;
          break;
        case GoRuntimeEvent::GcCycle:
          t.gc_cycles += n;
          break;
        default:
          break;
      }
    }
    return t;
  };

  OutputBuffer out(output->fd());
  const GoStatSink sink = go_stat_sink(output->format);
  uint64_t lines_not_written = 0;
  auto emit = [&](const std::string& text) {
    if (!out.has_room()) {
      ++lines_not_written;
      return;
    }
    out.append(text);
  };
  using clock = std::chrono::steady_clock;
  auto interval_start = clock::now();
  auto end_interval = [&](bool target_gone) {
    auto t = totals();
    if (!t) return;
    auto now = clock::now();
    double seconds = std::chrono::duration<double>(now - interval_start).count();
    interval_start = now;
    auto i = stats.end_interval(*t, census(target_gone), seconds);
    const std::string at = clock_now();
    emit(sink.line(i, at));
  };
  if (!sink.header.empty()) emit(sink.header);
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);
  interval_start = clock::now();

  EventLoop::Callbacks cb;
  read_events_in_loop(*program, cb, read_error);
  cb.output = &out;
  cb.interval = [&] {
    while (cb.drain()) {
    }
    end_interval(false);
  };
  cb.done = [&] { return read_error.has_value(); };
  StopReason why = (*session)->run(cb);
  const bool gone = why == StopReason::TargetExited || why == StopReason::TargetExeced;
  // The counts are final once the probes are out; the events they left are all read.
  counts->detach();
  program->detach();
  while (!read_error && cb.drain()) {
  }
  if (read_error) return report_error(read_error->message);
  end_interval(gone);
  if (read_error) return report_error("cannot read the counters: " + read_error->message);
  auto counters = program->counters();
  if (!counters) return report_error("cannot read the event counters: " + counters.error().message);
  uint64_t emitted = 0;
  for (const auto& c : *counters) {
    losses.ring_lost += c.lost;
    emitted += c.emitted;
  }
  losses.malformed += program->short_records();
  if (emitted > read_events) losses.unread = emitted - read_events;
  losses.unmatched_starts = stats.unmatched_starts();
  losses.open_pauses = stats.open_pauses();
  GoStatSummary about{plan->object, plan->go_version, describe(why), plan->no_goroutines};
  emit(sink.summary(stats, losses, about));
  finish_output(out, lines_not_written);
  return kExitOk;
}

}  // namespace

// What `uscope stat --help` ends with; man uscope-stat is made from that help, and
// docs/stat.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kStatExamples = R"(Examples:
  uscope stat -p PID
      a Go program's goroutines, GC cycles and pauses each second, until Ctrl-C
  uscope stat -p PID -i 5 -d 60
      every 5 seconds for a minute
  uscope stat -c ./goapp --json
      a command, as JSON Lines

Reference: docs/stat.md)";

void add_stat_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<StatOptions>();
  opts->session.interval_s = 1;
  auto* cmd = app.add_subcommand(
      "stat", "A Go program's runtime per second: goroutines, GC cycles, stop-the-world pauses");
  add_session_options(cmd, opts->session, true, false);
  cmd->add_flag("--no-move", opts->no_move, "Always probe a function's first instruction");
  cmd->footer(
      "Probes (entry uprobes only): runtime.newproc1 (created), runtime.goexit0 (exited), "
      "runtime.gcMarkTermination (GC cycles), runtime.stopTheWorldWithSema to "
      "startTheWorldWithSema (a stop-the-world pause). GOROUTINES is runtime.NumGoroutine()'s "
      "count, read from the program's memory each interval (needs its symbol table).");
  add_examples(cmd, kStatExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_stat(*opts); }; });
}

}  // namespace uscope::cli
