// `uscope top`: the profiler (cli/profile_session.h: the same BPF program, unwinder and
// symbolizer as `uscope profile`) read every -d seconds into a live table of the hottest
// functions (sink/top_table.h), as perf top and py-spy top show them. On a terminal the table is
// redrawn in place until q, Ctrl-C or the target's exit; elsewhere one table is printed per
// refresh. Either way the last table, and the summary, are printed at the end.
#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/profile_session.h"
#include "cli/session.h"
#include "sink/profile_sink.h"
#include "sink/top_table.h"
#include "util/output_buffer.h"
#include "util/terminal_screen.h"

namespace uscope::cli {

namespace {

// py-spy top's refresh; perf top's is 2 s.
constexpr double kDefaultDelayS = 1;

struct TopOptions {
  ProfileTarget target;
  std::string sort = "self";
  size_t rows = 0;  // 0: the screen's height, or 25 off a terminal
};

int run_top(TopOptions o) {
  if (auto r = check_target(o.target); !r) return report_error(r.error().message, kExitUsage);
  auto session = ProfileSession::open(o.target);
  if (!session) return report_error(session.error().message);
  ProfileSession& s = **session;

  const bool terminal = isatty(STDOUT_FILENO);
  TopTableOptions table_options;
  table_options.sort = o.sort == "total" ? TopSort::Total : TopSort::Self;
  table_options.rows = o.rows > 0 ? o.rows : terminal ? SIZE_MAX : TopTableOptions{}.rows;
  table_options.title = describe_target(o.target);
  table_options.terminal = terminal;

  if (auto r = s.start(); !r) return report_error(r.error().message);
  std::optional<TerminalScreen> screen;
  if (terminal) {
    screen.emplace(STDOUT_FILENO, STDIN_FILENO);
    if (screen->keys_fd() >= 0) table_options.keys = "q quits";
  }
  TopTable table(table_options);

  // Tables go through the loop's output buffer, so that a terminal stopped by Ctrl-S or a pipe
  // nobody reads never holds up q, Ctrl-C or the target's exit. A table is written whole or not
  // at all: one due while the previous is not written yet is skipped, and counted at the end.
  OutputBuffer out(STDOUT_FILENO);
  uint64_t tables_skipped = 0;
  auto last = std::chrono::steady_clock::now();  // of the last table written
  auto refresh = [&](bool last_table) -> Result<void> {
    if (out.pending() > 0 && !last_table) {
      ++tables_skipped;
      return {};
    }
    auto profile = s.snapshot();
    if (!profile) return tl::unexpected(profile.error());
    auto now = std::chrono::steady_clock::now();
    double interval_s = std::chrono::duration<double>(now - last).count();
    last = now;
    if (terminal) {
      auto size = TerminalScreen::size(STDOUT_FILENO);
      table.resize(size.columns, size.lines);
    }
    Result<void> written;
    append_printed(out, [&](std::FILE* f) { written = table.write(*profile, interval_s, f); });
    return written;
  };

  auto why = s.run_refreshing([&] { return refresh(false); },
                              [&](EventLoop::Callbacks& cb) {
                                cb.output = &out;
                                if (!screen) return;
                                cb.interval();  // the frame at once, not a blank screen for -d s
                                if (screen->keys_fd() < 0) return;
                                cb.input_fd = screen->keys_fd();
                                cb.input = [&screen] { return screen->quit_typed(); };
                              });
  if (screen) {
    // The live table being drawn, finished briefly; then the terminal as it was, before anything
    // more is printed.
    if (!out.flush_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(50)))
      out.drop_pending();
    screen.reset();
  }
  if (!why) return report_error(why.error().message);
  fmt::print(stderr, "uscope: {}\n", s.stop_text(*why));

  // The last table (the samples since the last refresh, and since the start), plain: on a
  // terminal it stays on the screen after the live one is gone. Its rows by the whole session:
  // its refresh may be a few milliseconds long.
  table.leave_screen();
  table.sort_by_session();
  if (auto r = refresh(true); !r) return report_error(r.error().message);
  finish_output(out, tables_skipped);
  return kExitOk;
}

}  // namespace

// What `uscope top --help` ends with; man uscope-top is made from that help, and docs/top.md
// shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kTopExamples = R"(Examples:
  uscope top -p PID
      the hottest functions of a process, refreshed every second; q or Ctrl-C quits
  uscope top -c './bench --iters 1000000' --sort total
      of a command, until it exits, by the share of stacks each function is on
  uscope top -a -d 2 -n 40
      every process on the host, 40 rows, every 2 seconds
  uscope top -p PID -d 5 | head -40
      one plain table every 5 seconds on a pipe

Reference: docs/top.md)";

void add_top_command(CLI::App& app, Run& run) {
  auto o = std::make_shared<TopOptions>();
  o->target.interval_s = kDefaultDelayS;
  auto* cmd = app.add_subcommand("top", "A live table of the hottest functions, refreshed");
  cmd->add_option("-p,--pid", o->target.pids, "Sample process PID (several: -p 1,2 or -p 1 -p 2)")
      ->delimiter(',');
  cmd->add_flag("-a,--all", o->target.all, "Sample every process on the host");
  cmd->add_option("-c,--command", o->target.command,
                  "Start CMD (quoted, with its arguments) and sample it until it exits");
  cmd->add_option("-F,--frequency", o->target.frequency_hz,
                  fmt::format("Samples per second on each CPU (default {})", kDefaultFrequencyHz));
  cmd->add_option("-d,--delay", o->target.interval_s,
                  fmt::format("Refresh every SECONDS (default {})", kDefaultDelayS))
      ->check(CLI::PositiveNumber);
  cmd->add_option("--sort", o->sort,
                  "self (samples whose leaf is the function; default) or total (samples with "
                  "the function anywhere on the stack), over the last refresh")
      ->check(CLI::IsMember({"self", "total"}));
  cmd->add_option("-n,--rows", o->rows,
                  "Rows of the table (default: the screen's height; 25 off a terminal)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("-U,--user-only", o->target.user_only, "Only user frames");
  cmd->add_flag("-K,--kernel-only", o->target.kernel_only, "Only kernel frames");
  cmd->add_flag("-v,--verbose", o->target.verbose, "Name each process as it is first sampled");
  add_examples(cmd, kTopExamples);
  cmd->callback([&run, o] { run = [o] { return run_top(*o); }; });
}

}  // namespace uscope::cli
