// `uscope memleak`: blocks a process allocated and has not freed, by the stack that allocated
// them, as bcc's memleak reports them. Uprobes on its allocator's functions (plan/alloc_plan.h)
// follow each block from allocation to free in BPF (profile.bpf.c); at each -i and at the end the
// stacks still holding blocks are printed, the ones that grew most first, and -o writes them as a
// profile of bytes (pprof's inuse_space, a flame graph, folded stacks).
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/profile_session.h"
#include "sink/memleak_report.h"
#include "sink/output_format.h"
#include "sink/profile_sink.h"

namespace uscope::cli {

namespace {

struct MemleakOptions {
  ProfileTarget target;
  std::string output;
  std::string format;
  size_t top = 10;
};

Result<void> check_options(const MemleakOptions& o) {
  if (o.target.pids.empty() && o.target.command.empty())
    return fail("give the process whose allocations to follow: -p PID or -c CMD");
  return check_target(o.target);
}

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One report of what is outstanding now; the profile it was made of.
Result<Profile> report(ProfileSession& s, MemleakReport& r) {
  auto p = s.snapshot();
  if (!p) return p;
  auto counts = s.program().alloc_counts();
  if (!counts) return tl::unexpected(counts.error());
  r.write(*p, *counts, unix_now_ns(), stdout);
  return p;
}

int run_memleak(const MemleakOptions& o) {
  if (auto r = check_options(o); !r) return report_error(r.error().message, kExitUsage);
  std::optional<OutputFormat> format;
  if (!o.output.empty() || !o.format.empty()) {
    auto f = choose_format(o.format, o.output, profile_formats(), OutputFormat::Pprof);
    if (!f) return report_error(f.error().message, kExitUsage);
    format = *f;
  }
  auto out = OutputFile::open(o.output);
  if (!out) return report_error(out.error().message);
  auto session = ProfileSession::open(o.target);
  if (!session) return report_error(session.error().message);
  ProfileSession& s = **session;
  if (o.target.verbose)
    for (const auto& line : s.allocators()) fmt::print(stderr, "uscope: following {}\n", line);
  if (auto r = s.start(); !r) return report_error(r.error().message);

  MemleakReport reporter(o.top);
  auto why = s.run_refreshing([&]() -> Result<void> {
    if (auto p = report(s, reporter); !p) return tl::unexpected(p.error());
    return {};
  });
  if (!why) return report_error(why.error().message);
  fmt::print(stderr, "uscope: {}\n", s.stop_text(*why));
  auto profile = report(s, reporter);
  if (!profile) return report_error(profile.error().message);
  if (format) {
    ProfileSinkOptions sink;
    sink.top = o.top;
    sink.title =
        fmt::format("uscope memleak {}: bytes outstanding by stack", describe_target(o.target));
    if (auto r = write_profile(*profile, *format, out->get(), sink); !r)
      return report_error(r.error().message);
    if (auto r = out->close(); !r) return report_error(r.error().message);
  }
  print_profile_summary(*profile, stderr);
  if (o.target.verbose) s.print_unwind_stats();
  return kExitOk;
}

}  // namespace

// What `uscope memleak --help` ends with; docs/memleak.md shows the same examples.
constexpr const char* kMemleakExamples = R"(Examples:
  uscope memleak -p PID -i 10
      every 10 seconds, the stacks holding blocks not freed, the ones that grew most first
  uscope memleak -c './server --port 8080' -d 60
      a command's blocks still allocated after a minute (or when it exits)
  uscope memleak --sample-bytes 512K -p PID -i 30
      sampled, for allocation-heavy programs: sizes estimated and said so
  uscope memleak -p PID -d 60 -o heap.pb.gz
      also as pprof's inuse_space and inuse_objects (go tool pprof -top heap.pb.gz)

Reference: docs/memleak.md)";

void add_memleak_command(CLI::App& app, Run& run) {
  auto o = std::make_shared<MemleakOptions>();
  o->target.memleak = true;
  auto* cmd = app.add_subcommand(
      "memleak", "Blocks allocated and not freed, by stack: where memory grows (bcc's memleak)");
  cmd->add_option("-p,--pid", o->target.pids, "Follow process PID's allocations");
  cmd->add_option("-c,--command", o->target.command,
                  "Start CMD (quoted, with its arguments) and follow it until it exits");
  cmd->add_option("-d,--duration", o->target.duration_s, "Stop after SECONDS")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-i,--interval", o->target.interval_s,
                  "Report every SECONDS (the stacks that grew most since the last report first)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--sample-bytes", o->target.sample_bytes,
                  "Follow one block per SIZE bytes allocated on average (512K, 1M), not every "
                  "block: the sizes reported are estimates, and say so")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber);
  cmd->add_option("--top", o->top, "Stacks shown per report (default 10)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", o->output,
                  "Also write the outstanding blocks at the end to FILE as a profile of bytes (its "
                  "extension picks the format: .pb.gz .svg .folded .speedscope.json .txt)");
  cmd->add_option("--format", o->format, "-o's format: pprof, svg, folded, speedscope or text");
  cmd->add_flag("--lines", o->target.lines, "Source lines and inlined functions (reads DWARF)");
  cmd->add_flag("-v,--verbose", o->target.verbose, "Name the allocator functions followed");
  add_examples(cmd, kMemleakExamples);
  cmd->callback([&run, o] { run = [o] { return run_memleak(*o); }; });
}

}  // namespace uscope::cli
