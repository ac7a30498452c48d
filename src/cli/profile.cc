// `uscope profile`: a CPU profiler. cpu-clock perf events sample every CPU at -F Hz; the BPF
// side (profile.bpf.c) counts stacks in the kernel; at the end (and every -i) the counts become a
// profile (symbolize/profile_builder.h) written in the format --format or -o names.
#include <fmt/core.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "attach/perf_events.h"
#include "cli/command.h"
#include "cli/session.h"
#include "collect/exit_maps.h"
#include "collect/profile_program.h"
#include "collect/unwind_follower.h"
#include "discover/object_store.h"
#include "discover/unwind_cache.h"
#include "sink/output_format.h"
#include "sink/profile_sink.h"
#include "sink/unwind_stats_output.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/profile_builder.h"
#include "symbolize/symbolizer.h"
#include "util/progress_line.h"
#include "util/unique_fd.h"

namespace uscope::cli {

namespace {

// A sample is taken only when the timer fires while the process runs on that CPU, so a process
// gets frequency x its CPU seconds samples (not x wall seconds): at bcc's 49 Hz a process on a
// third of a CPU gave ~160 samples a minute. 99 Hz as perf and bpftrace users type it (py-spy:
// 100), off the beat of 100 Hz timers; -a costs one timer per CPU whatever the rate.
constexpr uint64_t kDefaultFrequencyHz = 99;
// New-process records handed out per wake-up: a fork storm cannot hold up signals or -d.
constexpr size_t kRecordsPerDrain = 256;

struct ProfileOptions {
  std::vector<pid_t> pids;
  bool all = false;
  bool idle = false;
  std::string command;
  uint64_t frequency_hz = kDefaultFrequencyHz;
  double duration_s = 0;
  double interval_s = 0;
  std::string output;
  std::string format;
  bool threads = false;
  bool user_only = false;
  bool kernel_only = false;
  bool lines = false;
  bool verbose = false;
  size_t top = ProfileSinkOptions{}.top;
};

// Option combinations that cannot work, named before anything is opened.
Result<void> check_options(const ProfileOptions& o) {
  int targets = !o.pids.empty() + o.all + !o.command.empty();
  if (targets == 0) return fail("give what to profile: -p PID, -c CMD or -a (every process)");
  if (targets > 1) return fail("give one of -p PID, -c CMD or -a");
  for (pid_t pid : o.pids)
    if (pid <= 0) return fail("-p {}: a PID is a positive number", pid);
  if (o.idle && !o.all) return fail("--idle goes with -a");
  if (o.user_only && o.kernel_only)
    return fail("-U keeps only user frames and -K only kernel frames: give one of them");
  if (o.interval_s > 0 && o.output.empty())
    return fail("-i rewrites a file every interval: give it with -o FILE");
  return check_sample_frequency(o.frequency_hz);
}

Result<void> check_pids_exist(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids)
    if (kill(pid, 0) != 0 && errno == ESRCH)
      return fail("no process with PID {}: give the PID of a running process", pid);
  return {};
}

// Several -p PIDs: the session ends when all of them have exited (one is watched by the loop).
class ExitWatch {
 public:
  void add(pid_t pid) {
    watching_ = true;
    int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) fds_.emplace_back(fd);  // else it has exited already
  }
  bool all_exited() const {
    if (!watching_) return false;
    for (const auto& fd : fds_) {
      pollfd p{fd.get(), POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) return false;
    }
    return true;
  }

 private:
  bool watching_ = false;
  std::vector<UniqueFd> fds_;
};

std::string describe_target(const ProfileOptions& o) {
  if (o.all) return "every process";
  if (!o.command.empty()) return fmt::format("'{}'", o.command);
  if (o.pids.size() == 1) return fmt::format("PID {}", o.pids[0]);
  return fmt::format("{} processes", o.pids.size());
}

// What the whole run needs at the end and at every -i.
struct ProfileRun {
  const ProfileOptions& options;
  OutputFormat format;
  ProfileProgram& program;
  Symbolizer& symbolizer;
  // Read only when a sample first holds a kernel frame: /proc/kallsyms is ~130k lines, a few MB
  // and milliseconds of CPU that a profile of user code does not need.
  bool kernel_names;             // not -U
  const UnwindFollower* unwind;  // null with -K
  int64_t start_unix_ns;
  std::chrono::steady_clock::time_point start;
  std::optional<KernelSymbols> kernel;
  bool kernel_tried;

  Result<Profile> snapshot() {
    StackAggregator stacks;
    if (auto r = program.read_samples(stacks); !r) return tl::unexpected(r.error());
    load_kernel_symbols(stacks);
    Profile p = build_profile(stacks.samples(), symbolizer, kernel ? &*kernel : nullptr);
    auto losses = program.losses();
    if (!losses) return tl::unexpected(losses.error());
    p.losses = std::move(*losses);
    if (unwind) {
      auto walks = unwind->walk_counts();
      if (!walks) return tl::unexpected(walks.error());
      // Every walk that did not reach its thread's entry, by why it stopped.
      for (auto& [name, n] : *walks)
        if (name != "entry" && name.rfind("frames_", 0) != 0)
          p.losses.emplace_back("walk_" + name, n);
    }
    p.frequency_hz = options.frequency_hz;
    p.start_unix_ns = start_unix_ns;
    p.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    p.user_frames = !options.kernel_only;
    p.kernel_frames = !options.user_only;
    return p;
  }

  void load_kernel_symbols(const StackAggregator& stacks) {
    if (!kernel_names || kernel_tried) return;
    bool kernel_frames = false;
    for (const auto& s : stacks.samples()) kernel_frames |= !s.kernel.empty();
    if (!kernel_frames) return;
    kernel_tried = true;
    auto k = KernelSymbols::load();
    if (k)
      kernel.emplace(std::move(*k));
    else
      fmt::print(stderr, "uscope: kernel frames stay unnamed: {}\n", k.error().message);
  }

  ProfileSinkOptions sink_options(const Profile& p) const {
    ProfileSinkOptions s;
    s.top = options.top;
    std::string comm;
    if (!p.samples.empty() && p.process_count() == 1) comm = p.samples[0].comm;
    s.title = fmt::format("uscope profile {}{}", describe_target(options),
                          comm.empty() ? "" : fmt::format(" ({})", comm));
    return s;
  }

  // -i and the end with -i: the whole file replaced at once, never seen half written.
  Result<Profile> rewrite() {
    auto p = snapshot();
    if (!p) return p;
    auto r = replace_file(options.output, 0644, [&](std::FILE* f) {
      return write_profile(*p, format, f, sink_options(*p));
    });
    if (!r) return tl::unexpected(r.error());
    return p;
  }
};

int run_profile(const ProfileOptions& o) {
  if (auto r = check_options(o); !r) return report_error(r.error().message, kExitUsage);
  auto format = choose_format(o.format, o.output, profile_formats(), OutputFormat::Text);
  if (!format) return report_error(format.error().message, kExitUsage);
  if (auto r = check_pids_exist(o.pids); !r) return report_error(r.error().message);
  // Before sampling: an output that cannot be written fails now, not after a long profile.
  auto out = OutputFile::open(o.output);
  if (!out) return report_error(out.error().message);

  SessionOptions so;
  so.pid = o.pids.size() == 1 ? o.pids[0] : 0;
  so.command = o.command;
  so.duration_s = o.duration_s;
  so.interval_s = o.interval_s;
  so.verbose = o.verbose;
  auto session = Session::open(so);
  if (!session) return report_error(session.error().message);

  // The maps of a process as it exits: one that lived shorter than uscope takes to read its maps
  // (a -c command, a child, a process met with -a) still has its stacks named. Owned by the
  // program, whose object holds them.
  ExitMaps* exit_maps = nullptr;
  SymbolizerOptions symbolizer_options;
  symbolizer_options.lines = o.lines;
  symbolizer_options.catch_up = [&exit_maps] {
    if (exit_maps) exit_maps->catch_up();
  };
  Symbolizer symbolizer(symbolizer_options);
  // Maps are read while the processes live, so that one that exits mid-profile stays named.
  std::set<pid_t> processes;
  for (pid_t pid : o.pids) symbolizer.remember(pid);
  // Exits of processes not (yet) sampled: kept a while, in case their first sample's news is
  // still on its way; the oldest go first, so that -a on a busy host holds a bounded amount.
  constexpr size_t kUnseenExits = 1024;
  std::map<pid_t, Process> unseen_exits;
  std::deque<pid_t> unseen_order;
  auto on_exit = [&](Process last) {
    const pid_t pid = last.pid();
    if (processes.contains(pid)) return symbolizer.adopt(std::move(last));
    if (unseen_exits.insert_or_assign(pid, std::move(last)).second) unseen_order.push_back(pid);
    if (unseen_order.size() > kUnseenExits) {
      unseen_exits.erase(unseen_order.front());
      unseen_order.pop_front();
    }
  };
  auto on_new = [&](pid_t pid, std::string_view comm) {
    symbolizer.remember(pid);
    if (auto node = unseen_exits.extract(pid)) symbolizer.adopt(std::move(node.mapped()));
    if (processes.insert(pid).second && o.verbose)
      fmt::print(stderr, "uscope: sampling process {} ({})\n", pid, comm);
  };

  ProfileSettings settings;
  settings.pids = o.pids;
  if ((*session)->launched()) {
    settings.pids = {(*session)->watch_pid()};
    symbolizer.started_as((*session)->watch_pid(), (*session)->started_as());
    settings.only_after_exec = true;
  }
  settings.include_idle = o.idle;
  settings.per_thread = o.threads;
  settings.user_stacks = !o.kernel_only;
  settings.kernel_stacks = !o.user_only;
  std::unique_ptr<UnwindMaps> unwind;
  std::optional<UnwindFollower> follower;
  if (settings.user_stacks) {
    auto u = UnwindMaps::create(ObjectStore::shared(), UnwindCache::open_default());
    if (!u) return report_error(u.error().message);
    unwind = std::move(*u);
    settings.unwind = unwind.get();
  }
  if (!o.kernel_only) settings.on_exit = on_exit;
  auto program = ProfileProgram::load(settings, on_new);
  if (!program) return report_error(program.error().message);
  exit_maps = program->exit_maps();
  // An older kernel: see EventSymbols::follow_exits.
  if (const auto& e = program->exit_maps_error())
    fmt::print(stderr,
               "uscope: the maps of exiting processes cannot be kept ({}): a process gone "
               "before uscope read its maps shows [unknown: process gone]\n",
               e->message);
  if (unwind) {
    follower.emplace(*unwind);
    if (auto r = follower->listen(program->ring()); !r) return report_error(r.error().message);
    // Tables before the first sample; processes met later (-a, children, a dlopen) ask.
    for (pid_t pid : settings.pids) {
      auto r = (*session)->launched() ? unwind->expect_exec(pid) : unwind->load_process(pid);
      if (!r && o.verbose) fmt::print(stderr, "uscope: {}\n", r.error().message);
    }
  }
  ExitWatch exits;
  if (o.pids.size() > 1)
    for (pid_t pid : o.pids) exits.add(pid);

  if (auto r = program->start(o.frequency_hz); !r) return report_error(r.error().message);
  ProfileRun run{o,
                 *format,
                 *program,
                 symbolizer,
                 !o.user_only,
                 follower ? &*follower : nullptr,
                 std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count(),
                 std::chrono::steady_clock::now(),
                 {},
                 false};
  if (auto r = (*session)->start(); !r) return report_error(r.error().message);
  fmt::print(stderr, "uscope: profiling {} at {} Hz on {} CPUs; Ctrl-C to stop\n",
             describe_target(o), o.frequency_hz, program->cpus_sampled());

  ProgressLine progress(std::chrono::milliseconds(500));  // elapsed, samples, processes
  std::optional<Error> failure;
  bool all_exited = false;
  EventLoop::Callbacks cb;
  cb.data_fd = program->new_process_fd();
  cb.drain = [&] {
    auto r = program->consume(kRecordsPerDrain);
    if (!r) {
      failure = r.error();
      return false;
    }
    if (follower) follower->serve();
    return r->more_pending;
  };
  cb.interval = [&] {
    progress.clear();
    if (auto r = run.rewrite(); !r) failure = r.error();
  };
  cb.done = [&] {
    if (progress.due()) {
      auto seen = program->samples_seen();
      auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start);
      progress.show(fmt::format("sampling {:.1f} s, {} samples, {} processes", elapsed.count(),
                                seen ? *seen : 0, processes.size()));
    }
    if (exit_maps) exit_maps->catch_up();  // every wake-up: a full ring would lose exits
    all_exited = exits.all_exited();
    return failure.has_value() || all_exited;
  };
  StopReason why = (*session)->run(cb);
  program->stop();
  progress.clear();
  if (failure) return report_error(failure->message);
  if (auto r = program->consume_all(); !r) return report_error(r.error().message);
  if (exit_maps) exit_maps->catch_up();
  fmt::print(stderr, "uscope: {}\n", all_exited ? "every target exited" : describe(why));

  Result<Profile> profile = tl::unexpected(Error{});
  if (o.interval_s > 0) {
    profile = run.rewrite();
  } else {
    profile = run.snapshot();
    if (profile) {
      if (auto r = write_profile(*profile, *format, out->get(), run.sink_options(*profile)); !r)
        return report_error(r.error().message);
      if (auto r = out->close(); !r) return report_error(r.error().message);
    }
  }
  if (!profile) return report_error(profile.error().message);
  print_profile_summary(*profile, stderr);
  if (unwind && o.verbose) {
    auto walks = follower->walk_counts();
    print_unwind_stats(unwind->stats(), walks ? *walks : decltype(walks)::value_type{}, stderr);
  }
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

Reference: docs/profile.md)";

void add_profile_command(CLI::App& app, Run& run) {
  auto o = std::make_shared<ProfileOptions>();
  auto* cmd = app.add_subcommand("profile", "Sample the CPU's stacks: where programs spend time");
  cmd->add_option("-p,--pid", o->pids, "Profile process PID (several: -p 1,2 or -p 1 -p 2)")
      ->delimiter(',');
  cmd->add_flag("-a,--all", o->all, "Profile every process on the host");
  cmd->add_flag("--idle", o->idle, "With -a, also the idle task (pid 0): CPUs doing nothing");
  cmd->add_option("-c,--command", o->command,
                  "Start CMD (quoted, with its arguments) and profile it until it exits");
  cmd->add_option("-F,--frequency", o->frequency_hz,
                  fmt::format("Samples per second on each CPU (default {})", kDefaultFrequencyHz));
  cmd->add_option("-d,--duration", o->duration_s, "Stop after SECONDS")->check(CLI::PositiveNumber);
  cmd->add_option("-i,--interval", o->interval_s, "Rewrite -o FILE every SECONDS until the end")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", o->output,
                  "Write to FILE (its extension picks the format: .folded .svg .pb.gz "
                  ".speedscope.json .txt)");
  cmd->add_option("--format", o->format,
                  "text (the top functions; default), folded, pprof, svg or speedscope");
  cmd->add_option("--top", o->top,
                  fmt::format("Rows of the top table (default {})", ProfileSinkOptions{}.top))
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--threads", o->threads, "One stack per thread, not per process");
  cmd->add_flag("-U,--user-only", o->user_only, "Only user frames");
  cmd->add_flag("-K,--kernel-only", o->kernel_only, "Only kernel frames");
  cmd->add_flag("--lines", o->lines, "Source lines and inlined functions (reads DWARF)");
  cmd->add_flag("-v,--verbose", o->verbose, "Name each process as it is first sampled");
  add_examples(cmd, kProfileExamples);
  cmd->callback([&run, o] { run = [o] { return run_profile(*o); }; });
}

}  // namespace uscope::cli
