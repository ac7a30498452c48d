// `uscope profile`: a CPU profiler. cpu-clock perf events sample every CPU at -F Hz; the BPF
// side (profile.bpf.c) counts stacks in the kernel; at the end (and every -i) the counts become a
// profile (symbolize/profile_builder.h) written in the format --format or -o names.
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/profile_session.h"
#include "sink/output_format.h"
#include "sink/profile_sink.h"
#include "util/progress_line.h"

namespace uscope::cli {

namespace {

struct ProfileOptions {
  ProfileTarget target;
  std::string output;
  std::string format;
  size_t top = ProfileSinkOptions{}.top;
};

Result<void> check_options(const ProfileOptions& o) {
  if (auto r = check_target(o.target); !r) return r;
  if (o.target.interval_s > 0 && o.output.empty())
    return fail("-i rewrites a file every interval: give it with -o FILE");
  return {};
}

ProfileSinkOptions sink_options(const ProfileOptions& o, const Profile& p) {
  ProfileSinkOptions s;
  s.top = o.top;
  std::string comm;
  if (!p.samples.empty() && p.process_count() == 1) comm = p.samples[0].comm;
  const char* mode = o.target.off_cpu ? "--off-cpu " : o.target.wall ? "--wall " : "";
  s.title = fmt::format("uscope profile {}{}{}", mode, describe_target(o.target),
                        comm.empty() ? "" : fmt::format(" ({})", comm));
  return s;
}

// -i and the end with -i: the whole file replaced at once, never seen half written.
Result<Profile> rewrite(ProfileSession& session, const ProfileOptions& o, OutputFormat format) {
  auto p = session.snapshot();
  if (!p) return p;
  auto r = replace_file(o.output, 0644, [&](std::FILE* f) {
    return write_profile(*p, format, f, sink_options(o, *p));
  });
  if (!r) return tl::unexpected(r.error());
  return p;
}

int run_profile(const ProfileOptions& o) {
  if (auto r = check_options(o); !r) return report_error(r.error().message, kExitUsage);
  auto format = choose_format(o.format, o.output, profile_formats(), OutputFormat::Text);
  if (!format) return report_error(format.error().message, kExitUsage);
  // Before sampling: an output that cannot be written fails now, not after a long profile.
  auto out = OutputFile::open(o.output);
  if (!out) return report_error(out.error().message);
  auto session = ProfileSession::open(o.target);
  if (!session) return report_error(session.error().message);
  ProfileSession& s = **session;
  if (auto r = s.start(); !r) return report_error(r.error().message);

  ProgressLine progress(std::chrono::milliseconds(500));  // elapsed, samples, processes
  auto why = s.run_refreshing(
      [&]() -> Result<void> {
        progress.clear();
        if (auto r = rewrite(s, o, *format); !r) return tl::unexpected(r.error());
        return {};
      },
      [&](EventLoop::Callbacks& cb) {
        cb.done = [&, done = cb.done] {
          if (progress.due()) {
            auto seen = s.program().samples_seen();
            auto elapsed =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started());
            progress.show(fmt::format("sampling {:.1f} s, {} samples, {} processes",
                                      elapsed.count(), seen ? *seen : 0, s.processes_seen()));
          }
          return done();
        };
      });
  progress.clear();
  if (!why) return report_error(why.error().message);
  fmt::print(stderr, "uscope: {}\n", s.stop_text(*why));

  Result<Profile> profile = tl::unexpected(Error{});
  if (o.target.interval_s > 0) {
    profile = rewrite(s, o, *format);
  } else {
    profile = s.snapshot();
    if (profile) {
      if (auto r = write_profile(*profile, *format, out->get(), sink_options(o, *profile)); !r)
        return report_error(r.error().message);
      if (auto r = out->close(); !r) return report_error(r.error().message);
    }
  }
  if (!profile) return report_error(profile.error().message);
  print_profile_summary(*profile, stderr);
  if (o.target.verbose) s.print_unwind_stats();
  return kExitOk;
}

}  // namespace

// What `uscope profile --help` ends with; man uscope-profile is made from that help, and
// docs/profile.md shows the same examples (tests/e2e/help_test.cc checks both).
constexpr const char* kProfileExamples = R"(Examples:
  uscope profile -p PID -d 10
      the top functions of a process over 10 seconds, as a table
  uscope profile -p PID -d 30 -o cpu.svg
      an interactive flame graph
  uscope profile -c './bench --iters 1000000' -o cpu.folded
      folded stacks of a command, until it exits (FlameGraph, speedscope)
  uscope profile -a -F 99 -d 10 -o cpu.pb.gz
      every process on the host, as pprof (go tool pprof -top cpu.pb.gz)
  uscope profile -p 1,2 -p 3 --threads -o cpu.speedscope.json
      several processes, one stack per thread
  uscope profile -p PID -i 5 -o cpu.svg
      rewrite cpu.svg every 5 seconds until Ctrl-C
  uscope profile --off-cpu -p PID -d 10 -o off.svg
      where its threads wait (lock, sleep, I/O, run queue), weighted by time
  uscope profile --wall --threads -p PID -d 10
      each thread's wall time: running and waiting, by stack

Reference: docs/profile.md)";

void add_profile_command(CLI::App& app, Run& run) {
  auto o = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand("profile", "Sample the CPU's stacks: where programs spend time");
  cmd->add_option("-p,--pid", o->target.pids, "Profile process PID (several: -p 1,2 or -p 1 -p 2)")
      ->delimiter(',');
  cmd->add_flag("-a,--all", o->target.all, "Profile every process on the host");
  cmd->add_flag("--idle", o->target.idle,
                "With -a, also the idle task (pid 0): CPUs doing nothing");
  cmd->add_option("-c,--command", o->target.command,
                  "Start CMD (quoted, with its arguments) and profile it until it exits");
  cmd->add_option("-F,--frequency", o->target.frequency_hz,
                  fmt::format("Samples per second on each CPU (default {})", kDefaultFrequencyHz));
  cmd->add_option("-d,--duration", o->target.duration_s, "Stop after SECONDS")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-i,--interval", o->target.interval_s,
                  "Rewrite -o FILE every SECONDS until the end")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", o->output,
                  "Write to FILE (its extension picks the format: .folded .svg .pb.gz "
                  ".speedscope.json .txt)");
  cmd->add_option("--format", o->format,
                  "text (the top functions; default), folded, pprof, svg or speedscope");
  cmd->add_option("--top", o->top,
                  fmt::format("Rows of the top table (default {})", ProfileSinkOptions{}.top))
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--threads", o->target.threads, "One stack per thread, not per process");
  cmd->add_flag("-U,--user-only", o->target.user_only, "Only user frames");
  cmd->add_flag("-K,--kernel-only", o->target.kernel_only, "Only kernel frames");
  cmd->add_flag("--lines", o->target.lines, "Source lines and inlined functions (reads DWARF)");
  cmd->add_flag("-v,--verbose", o->target.verbose, "Name each process as it is first sampled");
  cmd->add_flag("--off-cpu", o->target.off_cpu,
                "Where threads wait instead of run: time off-CPU by stack (user and kernel), with "
                "why (lock, sleep, I/O, run queue) as each stack's leaf; weights are nanoseconds");
  cmd->add_flag("--wall", o->target.wall,
                "Wall-clock time: on-CPU samples (1/F s each) and off-CPU waits in one profile; "
                "with --threads, each thread's adds up to its wall time");
  cmd->add_flag("--wakers", o->target.wakers,
                "With --off-cpu or --wall: who woke each waiting thread, its stack above the "
                "wait's (bcc's offwaketime)");
  cmd->add_option("--min-block", o->target.min_block_us,
                  "With --off-cpu or --wall: leave out waits shorter than USECS (counted apart)");
  add_examples(cmd, kProfileExamples);
  cmd->callback([&run, o] { run = [o] { return run_profile(*o); }; });
}

}  // namespace uscope::cli
