#include "cli/profile_session.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <span>

#include "attach/perf_events.h"
#include "discover/object_store.h"
#include "discover/unwind_cache.h"
#include "plan/alloc_plan.h"
#include "plan/go_park_plan.h"
#include "sink/unwind_stats_output.h"
#include "symbolize/profile_builder.h"

namespace uscope::cli {

namespace {

// New-process records handed out per wake-up: a fork storm cannot hold up signals or -d.
constexpr size_t kRecordsPerDrain = 256;
// Exits of processes not (yet) sampled that are kept (see ProfileSession::unseen_exits_).
constexpr size_t kUnseenExits = 1024;

Result<void> check_pids_exist(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids)
    if (kill(pid, 0) != 0 && errno == ESRCH)
      return fail("no process with PID {}: give the PID of a running process", pid);
  return {};
}

// The value of a long at `addr` in process `pid`'s memory.
std::optional<int64_t> read_long(pid_t pid, uint64_t addr) {
  UniqueFd mem(open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDONLY | O_CLOEXEC));
  int64_t v = 0;
  if (mem.get() < 0 || pread(mem.get(), &v, sizeof v, static_cast<off_t>(addr)) != sizeof v)
    return std::nullopt;
  return v;
}

// memleak: the allocator's probes, and for a Go program where its heap sampler's rate is.
Result<void> plan_memleak(const ProfileTarget& t, const TargetContext& ctx,
                          ProfileSettings& settings, std::vector<std::string>& found) {
  ObjectCache cache(ctx);
  auto plan = plan_allocators(cache, ctx);
  if (!plan) return tl::unexpected(plan.error());
  if (plan->go_rate_address) {
    uint64_t addr = plan->go_rate_address;
    if (plan->go_rate_pie) {
      const MappedObject* main = ctx.process ? ctx.process->main_object() : nullptr;
      auto elf = main ? ElfFile::open(main->open_path) : Result<ElfFile>(fail("not running"));
      auto bias = main && elf ? load_bias(*main, *elf) : std::nullopt;
      if (!bias)
        return fail(
            "memleak -c cannot follow a position-independent Go program's heap: where its "
            "runtime.MemProfileRate is depends on where it is loaded; start it, then give -p PID");
      addr += *bias;
    }
    settings.go_rate_address = addr;
    // The linker turns Go's heap profiling off in a program that never calls
    // runtime.MemProfile (runtime/pprof, net/http/pprof): its sampler then picks nothing.
    if (ctx.process)
      if (auto rate = read_long(ctx.process->pid(), addr); rate && *rate <= 0)
        fmt::print(stderr,
                   "uscope: Go's heap sampler is off in this program (runtime.MemProfileRate is "
                   "{}: it never calls runtime.MemProfile, as runtime/pprof and net/http/pprof "
                   "do); uscope follows the blocks Go samples, so it sees none of its Go heap "
                   "until the program sets the rate\n",
                   *rate);
  }
  settings.alloc_sites = std::move(plan->sites);
  found = std::move(plan->found);
  settings.sample_bytes = t.sample_bytes;
  settings.on_cpu = false;
  settings.kernel_stacks = false;  // a block's stack is the user code that asked for it
  return {};
}

}  // namespace

Result<void> check_target(const ProfileTarget& t) {
  int targets = !t.pids.empty() + t.all + !t.command.empty();
  if (targets == 0) return fail("give what to profile: -p PID, -c CMD or -a (every process)");
  if (targets > 1) return fail("give one of -p PID, -c CMD or -a");
  for (pid_t pid : t.pids)
    if (pid <= 0) return fail("-p {}: a PID is a positive number", pid);
  if (t.idle && !t.all) return fail("--idle goes with -a");
  if (t.user_only && t.kernel_only)
    return fail("-U keeps only user frames and -K only kernel frames: give one of them");
  if (t.off_cpu && t.wall)
    return fail("--wall already holds the off-CPU time (and the on-CPU time beside it): give one");
  if (t.min_block_us < 0) return fail("--min-block {}: give microseconds >= 0", t.min_block_us);
  if (t.min_block_us > 0 && !t.off_cpu && !t.wall)
    return fail("--min-block filters off-CPU waits: give it with --off-cpu or --wall");
  if (t.wakers && !t.off_cpu && !t.wall)
    return fail("--wakers says who ended each off-CPU wait: give it with --off-cpu or --wall");
  if (t.idle && (t.off_cpu || t.wall))
    return fail("--idle samples the idle task on-CPU: it has no off-CPU time to show");
  if (t.memleak && (t.all || t.pids.size() > 1))
    return fail("memleak follows one process's allocator: give -p PID or -c CMD");
  return check_sample_frequency(t.frequency_hz);
}

ProfileMeasure measure_of(const ProfileTarget& target) {
  if (target.memleak) return ProfileMeasure::LiveBytes;
  if (target.wall) return ProfileMeasure::WallTime;
  return target.off_cpu ? ProfileMeasure::OffCpuTime : ProfileMeasure::CpuSamples;
}

std::string describe_target(const ProfileTarget& t) {
  if (t.all) return "every process";
  if (!t.command.empty()) return fmt::format("'{}'", t.command);
  if (t.pids.size() == 1) return fmt::format("PID {}", t.pids[0]);
  return fmt::format("{} processes", t.pids.size());
}

void ExitWatch::add(pid_t pid) {
  watching_ = true;
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) fds_.emplace_back(fd);  // else it has exited already
}

bool ExitWatch::all_exited() const {
  if (!watching_) return false;
  for (const auto& fd : fds_) {
    pollfd p{fd.get(), POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
  }
  return true;
}

ProfileSession::ProfileSession(const ProfileTarget& t) : target_(t) {}

Result<std::unique_ptr<ProfileSession>> ProfileSession::open(const ProfileTarget& t,
                                                             Runner* shared) {
  if (auto r = check_pids_exist(t.pids); !r) return tl::unexpected(r.error());
  std::unique_ptr<ProfileSession> s(new ProfileSession(t));
  SessionOptions so;
  so.pid = t.pids.size() == 1 ? t.pids[0] : 0;
  so.command = t.command;
  so.duration_s = t.duration_s;
  so.interval_s = t.interval_s;
  so.verbose = t.verbose;
  auto session = Session::open(so, shared);
  if (!session) return tl::unexpected(session.error());
  s->session_ = std::move(*session);
  Session& session_ref = *s->session_;

  // The maps of a process as it exits: one that lived shorter than uscope takes to read its maps
  // (a -c command, a child, a process met with -a) still has its stacks named.
  SymbolizerOptions symbolizer_options;
  symbolizer_options.lines = t.lines;
  ProfileSession* self = s.get();
  symbolizer_options.catch_up = [self] {
    if (self->exit_maps_) self->exit_maps_->catch_up();
  };
  s->symbolizer_ = std::make_unique<Symbolizer>(symbolizer_options);
  Symbolizer& symbolizer = *s->symbolizer_;
  // Maps are read while the processes live, so that one that exits mid-profile stays named.
  for (pid_t pid : t.pids) symbolizer.remember(pid);
  auto on_exit = [self](Process last) {
    const pid_t pid = last.pid();
    if (self->processes_.contains(pid)) return self->symbolizer_->adopt(std::move(last));
    if (self->unseen_exits_.insert_or_assign(pid, std::move(last)).second)
      self->unseen_order_.push_back(pid);
    if (self->unseen_order_.size() > kUnseenExits) {
      self->unseen_exits_.erase(self->unseen_order_.front());
      self->unseen_order_.pop_front();
    }
  };
  auto on_new = [self](pid_t pid, std::string_view comm) {
    self->symbolizer_->remember(pid);
    if (auto node = self->unseen_exits_.extract(pid))
      self->symbolizer_->adopt(std::move(node.mapped()));
    if (self->processes_.insert(pid).second && self->target_.verbose)
      fmt::print(stderr, "uscope: sampling process {} ({})\n", pid, comm);
  };

  ProfileSettings settings;
  settings.pids = t.pids;
  if (session_ref.launched()) {
    settings.pids = {session_ref.watch_pid()};
    symbolizer.started_as(session_ref.watch_pid(), session_ref.started_as());
    settings.only_after_exec = true;
  }
  settings.include_idle = t.idle;
  settings.per_thread = t.threads;
  settings.user_stacks = !t.kernel_only;
  settings.kernel_stacks = !t.user_only;
  settings.on_cpu = !t.off_cpu;
  settings.off_cpu = t.off_cpu || t.wall;
  settings.min_block_ns = static_cast<uint64_t>(t.min_block_us * 1000);
  settings.wakers = t.wakers;
  // A Go program's goroutines: their parks in Go's scheduler, beside its threads' waits.
  if (settings.off_cpu && (so.pid || session_ref.launched())) {
    ObjectCache cache(session_ref.context());
    auto go = plan_go_parks(cache, session_ref.context().process);
    if (!go) return tl::unexpected(go.error());
    settings.go_park_sites = std::move(go->sites);
    settings.go_wait_reasons = std::move(go->wait_reasons);
    settings.go_parked = go->parked;
    if (!go->no_parked.empty() && !settings.go_park_sites.empty())
      fmt::print(stderr, "uscope: goroutines parked before the profile are not counted: {}\n",
                 go->no_parked);
    s->goroutines_ = !settings.go_park_sites.empty();
  }
  if (t.memleak)
    if (auto r = plan_memleak(t, session_ref.context(), settings, s->allocators_); !r)
      return tl::unexpected(r.error());
  if (settings.user_stacks) {
    auto u = UnwindMaps::create(ObjectStore::shared(), UnwindCache::open_default());
    if (!u) return tl::unexpected(u.error());
    s->unwind_ = std::move(*u);
    settings.unwind = s->unwind_.get();
  }
  // Runtimes' frames (Python, Java, V8) are named from the process's memory: read them as
  // their stacks first appear, so that a process that exits mid-profile stays named.
  auto on_stack = [self](pid_t pid, std::span<const uint64_t> frames) {
    self->symbolizer_->read_runtime_code(pid, frames);
  };
  if (s->unwind_)
    s->unwind_->on_runtime([verbose = t.verbose](pid_t, const std::string& line) {
      if (verbose || line.find("native frames only") != std::string::npos ||
          line.find("frames not named") != std::string::npos)
        fmt::print(stderr, "uscope: {}\n", line);
    });
  if (!t.kernel_only) settings.on_exit = on_exit;
  auto program = ProfileProgram::load(settings, on_new, on_stack);
  if (!program) return tl::unexpected(program.error());
  s->program_.emplace(std::move(*program));
  // The exits' snapshots live in the profiler's own object (one parse of the kernel's BTF).
  s->exit_maps_ = s->program_->exit_maps();
  // An older kernel: see EventSymbols::follow_exits.
  if (const auto& e = s->program_->exit_maps_error())
    fmt::print(stderr,
               "uscope: the maps of exiting processes cannot be kept ({}): a process gone "
               "before uscope read its maps shows [unknown: process gone]\n",
               e->message);
  if (s->unwind_) {
    s->follower_.emplace(*s->unwind_);
    if (auto r = s->follower_->listen(s->program_->ring()); !r) return tl::unexpected(r.error());
    // Tables before the first sample; processes met later (-a, children, a dlopen) ask.
    for (pid_t pid : settings.pids) {
      auto r = session_ref.prepare_unwind(*s->unwind_, pid);
      if (!r && t.verbose) fmt::print(stderr, "uscope: {}\n", r.error().message);
    }
  }
  if (t.pids.size() > 1)
    for (pid_t pid : t.pids) s->exits_.add(pid);
  return s;
}

Result<void> ProfileSession::start() {
  if (auto r = program_->start(target_.frequency_hz); !r)
    return tl::unexpected(session_->explain_attach_failure(r.error(), {}));
  start_unix_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  start_ = std::chrono::steady_clock::now();
  if (auto r = session_->start(); !r) return r;
  // Threads of the given processes already waiting, goroutines parked: their waits count from
  // now, with the stacks they wait in, read now.
  const auto follow_start = std::chrono::steady_clock::now();
  if (auto begun = program_->follow_begun_waits(); !begun) {
    fmt::print(stderr, "uscope: {}: those waits are counted apart, as begun before the profile\n",
               begun.error().message);
  } else {
    if (!begun->no_goroutines.empty())
      fmt::print(stderr, "uscope: goroutines parked before now are not counted: {}\n",
                 begun->no_goroutines);
    if (target_.verbose && (target_.off_cpu || target_.wall))
      fmt::print(
          stderr,
          "uscope: already waiting: {} thread{}, {} goroutine{}: counted from now, where "
          "they wait (read in {:.1f} ms)\n",
          begun->threads, begun->threads == 1 ? "" : "s", begun->goroutines,
          begun->goroutines == 1 ? "" : "s",
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - follow_start)
              .count());
  }
  if (target_.memleak)
    fmt::print(stderr,
               "uscope: following the blocks {} allocates and frees ({} functions{}), by stack; "
               "Ctrl-C to stop\n",
               describe_target(target_), allocators_.size(),
               target_.sample_bytes
                   ? fmt::format(", one block per {} bytes sampled", target_.sample_bytes)
                   : "");
  else if (target_.off_cpu)
    fmt::print(stderr,
               "uscope: profiling {} off-CPU (the time its threads {}wait, by stack){}; "
               "Ctrl-C to stop\n",
               describe_target(target_), goroutines_ ? "and goroutines " : "",
               target_.min_block_us > 0
                   ? fmt::format(", waits of {} us or more", target_.min_block_us)
                   : "");
  else
    fmt::print(stderr, "uscope: profiling {} {}at {} Hz on {} CPUs; Ctrl-C to stop\n",
               describe_target(target_),
               target_.wall ? "wall-clock (on-CPU samples and off-CPU waits) " : "",
               target_.frequency_hz, program_->cpus_sampled());
  return {};
}

EventLoop::Callbacks ProfileSession::callbacks() {
  EventLoop::Callbacks cb;
  cb.data_fd = program_->new_process_fd();
  if (follower_) cb.data_poll = UnwindFollower::kServePeriod;  // a deferred reload comes due
  cb.drain = [this] {
    auto r = program_->consume(kRecordsPerDrain);
    if (!r) {
      failure_ = r.error();
      return false;
    }
    if (follower_) follower_->serve();
    return r->more_pending;
  };
  cb.done = [this] {
    if (exit_maps_) exit_maps_->catch_up();  // every wake-up: a full ring would lose exits
    all_exited_ = exits_.all_exited();
    return failure_.has_value() || all_exited_;
  };
  return cb;
}

Result<StopReason> ProfileSession::run(const EventLoop::Callbacks& cb) {
  StopReason why = session_->run(cb);
  program_->stop();
  if (failure_) return tl::unexpected(*failure_);
  if (auto r = program_->consume_all(); !r) return tl::unexpected(r.error());
  if (exit_maps_) exit_maps_->catch_up();
  return why;
}

Result<StopReason> ProfileSession::run_refreshing(
    const std::function<Result<void>()>& refresh,
    const std::function<void(EventLoop::Callbacks&)>& extend) {
  std::optional<Error> failure;
  EventLoop::Callbacks cb = callbacks();
  cb.interval = [&] {
    if (auto r = refresh(); !r) failure = r.error();
  };
  if (extend) extend(cb);
  cb.done = [&, done = cb.done] { return done() || failure.has_value(); };
  auto why = run(cb);
  if (!why) return why;
  if (failure) return tl::unexpected(*failure);
  return why;
}

void ProfileSession::install(std::function<void(StopReason)> stopped) {
  session_->install(callbacks(), std::move(stopped));
}

void ProfileSession::stop() {
  session_->uninstall();
  program_->stop();
  if (exit_maps_) exit_maps_->catch_up();
}

std::string ProfileSession::stop_text(StopReason why) const {
  return all_exited_ ? "every target exited" : describe(why);
}

void ProfileSession::load_kernel_symbols(const StackAggregator& stacks) {
  if (target_.user_only || kernel_tried_) return;
  bool kernel_frames = false;
  for (const auto& s : stacks.samples()) kernel_frames |= !s.kernel.empty();
  if (kernel_frames) load_kernel_symbols();
}

void ProfileSession::load_kernel_symbols() {
  if (target_.user_only || kernel_tried_) return;
  kernel_tried_ = true;
  auto k = KernelSymbols::load();
  if (k)
    kernel_.emplace(std::move(*k));
  else
    fmt::print(stderr, "uscope: kernel frames stay unnamed: {}\n", k.error().message);
}

Result<Profile> ProfileSession::snapshot() {
  StackAggregator stacks;
  if (auto r = program_->read_samples(stacks); !r) return tl::unexpected(r.error());
  load_kernel_symbols(stacks);
  return build(stacks.samples(), start_unix_ns_, start_);
}

Result<Profile> ProfileSession::period(const std::function<bool(pid_t)>& keep) {
  StackAggregator stacks;
  if (auto r = program_->read_samples(stacks); !r) return tl::unexpected(r.error());
  load_kernel_symbols(stacks);
  if (period_unix_ns_ == 0) {
    period_unix_ns_ = start_unix_ns_;
    period_start_ = start_;
  }
  std::vector<StackSample> fresh = periods_.next(stacks);
  if (keep) std::erase_if(fresh, [&](const StackSample& s) { return !keep(s.pid); });
  auto p = build(fresh, period_unix_ns_, period_start_);
  if (!p) return p;
  // The losses are cumulative too: the period's are the difference.
  auto cumulative = p->losses;
  for (auto& [cause, n] : p->losses)
    for (const auto& [before_cause, before] : period_losses_)
      if (before_cause == cause) n = n > before ? n - before : 0;
  period_losses_ = std::move(cumulative);
  period_unix_ns_ = p->start_unix_ns + p->duration_ns;
  period_start_ += std::chrono::nanoseconds(p->duration_ns);
  return p;
}

Result<Profile> ProfileSession::build(std::span<const StackSample> samples, int64_t from_unix_ns,
                                      std::chrono::steady_clock::time_point from) {
  Profile p = build_profile(samples, *symbolizer_, kernel_ ? &*kernel_ : nullptr);
  auto losses = program_->losses();
  if (!losses) return tl::unexpected(losses.error());
  p.losses = std::move(*losses);
  if (follower_) {
    auto walks = follower_->walk_counts();
    if (!walks) return tl::unexpected(walks.error());
    // Every walk that did not reach its thread's entry, by why it stopped.
    for (auto& [name, n] : *walks)
      if (name != "entry" && name.rfind("frames_", 0) != 0)
        p.losses.emplace_back("walk_" + name, n);
  }
  for (auto& loss : symbolizer_->losses()) p.losses.push_back(std::move(loss));
  p.measure = measure_of(target_);
  p.frequency_hz = target_.off_cpu || target_.memleak ? 0 : target_.frequency_hz;
  p.sample_bytes = target_.memleak ? target_.sample_bytes : 0;
  p.start_unix_ns = from_unix_ns;
  p.duration_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - from)
          .count();
  p.user_frames = !target_.kernel_only;
  p.kernel_frames = !target_.user_only && !target_.memleak;
  return p;
}

void ProfileSession::print_unwind_stats() const {
  if (!unwind_ || !follower_) return;
  auto walks = follower_->walk_counts();
  uscope::print_unwind_stats(unwind_->stats(), walks ? *walks : decltype(walks)::value_type{},
                             stderr);
}

}  // namespace uscope::cli
