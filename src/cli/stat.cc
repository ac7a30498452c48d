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
#include "cli/go_stat_job.h"
#include "cli/runtime_tool.h"
#include "cli/session.h"
#include "sink/go_stat_output.h"
#include "sink/runtime_stat_output.h"
#include "util/output_buffer.h"

namespace uscope::cli {

namespace {

struct StatOptions {
  SessionOptions session;
  bool no_move = false;
  std::string runtime;  // -l: a managed runtime's stat
};

std::string clock_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  return fmt::format("{:%H:%M:%S}", tm);
}

int run_stat(const StatOptions& o) {
  if (!o.session.pid && o.session.command.empty())
    return report_error("uscope stat needs a program: -p PID or -c 'COMMAND'", kExitUsage);
  auto output = open_output(o.session.output);
  if (!output) return output.error();
  auto session = Session::open(o.session);
  if (!session) return report_error(session.error().message);
  ObjectCache cache((*session)->context());
  // A program that is no Go: its runtime's own probes (Java, Python, Ruby), as bcc's ustat.
  auto main_object = cache.get("");
  if (!o.runtime.empty() || (main_object && !(*main_object)->is_go))
    return run_runtime_session(**session, *output, o.session, o.runtime, runtime_stat_events(),
                               "stat",
                               "the collections, threads, classes and exceptions",
                               [](const RuntimePlan& plan, OutputFormat format, OutputBuffer& out) {
                                 return std::make_unique<RuntimeStatOutput>(plan, format, out);
                               });
  auto job = GoStatJob::attach(**session, cache, !o.no_move, !o.session.no_multi);
  if (!job) return report_error(job.error().message);
  const GoStatPlan& plan = (*job)->plan();
  if (o.session.verbose) {
    print_sites(plan.counts.sites);
    print_sites(plan.stw.sites);
    if (plan.goroutines)
      fmt::print(stderr, "uscope: live goroutines from runtime.allgs; {}\n",
                 plan.goroutines->sources);
  }
  if (!plan.goroutines)
    fmt::print(stderr, "uscope: live goroutines unknown: {}\n", plan.no_goroutines);
  fmt::print(stderr,
             "uscope: watching the Go runtime of {} ({}): goroutines, GC, stop-the-world; Ctrl-C "
             "to stop\n",
             plan.object, plan.go_version);

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
  auto end_interval = [&](bool target_gone) {
    if (auto i = (*job)->end_interval(target_gone)) emit(sink.line(*i, clock_now()));
  };
  if (!sink.header.empty()) emit(sink.header);
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);
  (*job)->begin();

  std::optional<Error> read_error;
  EventLoop::Callbacks cb;
  read_events_in_loop((*job)->events(), cb, read_error);
  cb.output = &out;
  cb.interval = [&] {
    while (cb.drain()) {
    }
    end_interval(false);
  };
  cb.done = [&] { return read_error.has_value() || (*job)->read_error().has_value(); };
  StopReason why = (*session)->run(cb);
  const bool gone = why == StopReason::TargetExited || why == StopReason::TargetExeced;
  // The counts are final once the probes are out; the events they left are all read.
  (*job)->detach();
  while (!read_error && cb.drain()) {
  }
  if (read_error) return report_error(read_error->message);
  end_interval(gone);
  if (const auto& e = (*job)->read_error())
    return report_error("cannot read the counters: " + e->message);
  auto losses = (*job)->losses();
  if (!losses) return report_error(losses.error().message);
  GoStatSummary about{plan.object, plan.go_version, describe(why), plan.no_goroutines};
  emit(sink.summary((*job)->stats(), *losses, about));
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
  uscope stat -p JAVA_OR_PYTHON_OR_RUBY_PID
      a managed runtime's collections, GC time, threads, classes and exceptions each second

Reference: docs/stat.md)";

void add_stat_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<StatOptions>();
  opts->session.interval_s = 1;
  auto* cmd = app.add_subcommand(
      "stat",
      "A Go, Java, Python or Ruby program's runtime per second: GC cycles and pauses, "
      "goroutines or threads, classes, exceptions");
  add_session_options(cmd, opts->session, true, false);
  cmd->add_flag("--no-move", opts->no_move, "Always probe a function's first instruction");
  cmd->add_option("-l,--language", opts->runtime,
                  "The managed runtime: java, python, ruby (detected when the program is no Go)");
  cmd->footer(
      "Probes (entry uprobes only): runtime.newproc1 (created), runtime.goexit0 (exited), "
      "runtime.gcMarkTermination (GC cycles), runtime.stopTheWorldWithSema to "
      "startTheWorldWithSema (a stop-the-world pause). GOROUTINES is runtime.NumGoroutine()'s "
      "count, read from the program's memory each interval (needs its symbol table). Java, "
      "Python and Ruby: the runtime's own USDT probes of collections, threads, classes loaded "
      "and exceptions (none that fires at every call).");
  add_examples(cmd, kStatExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_stat(*opts); }; });
}

}  // namespace uscope::cli
