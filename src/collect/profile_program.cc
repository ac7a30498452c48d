#include "collect/profile_program.h"

#include <bpf/bpf.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "bpf/profile.h"
#include "bpf/unwind.h"
#include "collect/begun_waits.h"
#include "collect/map_entries.h"
#include "collect/percpu_sum.h"
#include "profile.skel.h"

namespace uscope {

namespace {

// A single process's stacks fit in fewer slots than a whole host's; see ProfileSettings.
constexpr uint32_t kStackSlotsProcess = 8192;
constexpr uint32_t kStackSlotsHost = 16384;
// Threads off their CPU at once that the off-CPU profile follows (~90 bytes each, as they block).
constexpr uint32_t kOffCpuThreads = 65536;
// Goroutines parked at once that the off-CPU profile of a Go program follows (~150 bytes each).
constexpr uint32_t kGoParked = 1 << 18;
// Blocks memleak follows at once (~100 bytes of kernel memory each, as they are allocated): bcc's
// memleak keeps a million.
constexpr uint32_t kMaxBlocks = 1 << 20;

// The stable names of the counters that are losses, as Profile::losses carries them.
constexpr std::pair<profile_counter, const char*> kLossNames[] = {
    {PC_USER_FAILED, "user_stack_failed"},         {PC_KERNEL_FAILED, "kernel_stack_failed"},
    {PC_KERNEL_COLLIDED, "kernel_stack_collided"}, {PC_MAP_FULL, "map_full"},
    {PC_NEW_PROCESS_LOST, "process_record_lost"},  {PC_USER_STACKS_FULL, "user_stacks_full"},
    {PC_STACK_RECORD_LOST, "stack_record_lost"},   {PC_OFFCPU_START_FULL, "off_cpu_threads_full"},
};
constexpr std::pair<profile_counter, const char*> kAllocLossNames[] = {
    {PC_ALLOCS_FULL, "alloc_blocks_full"},
    {PC_ALLOC_ROWS_FULL, "alloc_rows_full"},
    {PC_ALLOC_THREAD_LOST, "alloc_thread_lost"},
};

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // bpf_ktime_get_ns()'s clock
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// memleak's sampling tables (bpf/profile.h). A sampler whose gaps between sampled bytes are
// exponential with mean R (a Poisson process over the bytes allocated: --sample-bytes, and Go's
// own heap sampler) picks a block of s bytes with chance p = 1 - e^(-s/R), so it stands for s/p
// bytes and 1/p blocks: the weights, in units of R, do not depend on R. The gaps are drawn with
// mean `rate` (0: every block followed, no gaps).
void fill_sampling_tables(profile* skel, uint64_t rate) {
  auto* ro = skel->rodata;
  for (uint32_t k = 0; k < ALLOC_WEIGHT_STEPS; ++k) {
    const double x = (k + 0.5) / 64.0;
    ro->alloc_weights[k] =
        static_cast<uint32_t>(std::lround(x / -std::expm1(-x) * ALLOC_WEIGHT_ONE));
  }
  ro->alloc_sample_bytes = rate;
  for (uint32_t i = 0; rate && i < ALLOC_GAPS; ++i) {
    const double u = (i + 0.5) / ALLOC_GAPS;
    ro->alloc_gaps[i] = static_cast<uint64_t>(-std::log(u) * static_cast<double>(rate)) + 1;
  }
}

StackStatus status_of_id(int32_t id) {
  switch (id) {
    case PROFILE_STACK_NONE:
      return StackStatus::NotCollected;
    case PROFILE_STACK_COLLIDED:
      return StackStatus::Collided;
    case PROFILE_STACK_HASHED:
    case PROFILE_STACK_SEEDED:
      return StackStatus::Ok;
    default:
      return id < 0 ? StackStatus::Failed : StackStatus::Ok;
  }
}

}  // namespace

Result<BpfObject> ProfileProgram::open_and_load(const ProfileSettings& settings, bool exits) {
  auto object = BpfObject::open(profile__open, profile__destroy, "the profiler");
  if (!object) return object;
  if (settings.unwind)
    if (auto r = settings.unwind->share_with(*object); !r) return tl::unexpected(r.error());
  BpfObject& o = *object;
  TargetFilter filter;
  if (settings.pids.size() == 1) filter.tgid = settings.pids[0];
  filter.only_after_exec = settings.only_after_exec;
  auto flag = [](bool b) { return static_cast<uint32_t>(b ? 1 : 0); };
  uint32_t slots = settings.stack_slots    ? settings.stack_slots
                   : settings.pids.empty() ? kStackSlotsHost
                                           : kStackSlotsProcess;
  const bool memleak = !settings.alloc_sites.empty();
  bool go_heap = false;
  for (const AttachSite& s : settings.alloc_sites)
    go_heap |= ALLOC_COOKIE_FN(s.cookie) == ALLOC_GO_SAMPLE;
  if (memleak) {
    fill_sampling_tables(o.skeleton<profile>(), settings.sample_bytes);
    o.skeleton<profile>()->rodata->go_mem_profile_rate = settings.go_rate_address;
  }
  for (auto r :
       {o.set_target(filter), o.set_rodata("use_targets", flag(settings.pids.size() > 1)),
        o.set_rodata("include_idle", flag(settings.include_idle)),
        o.set_rodata("per_thread", flag(settings.per_thread)),
        o.set_rodata("user_stacks", flag(settings.user_stacks)),
        o.set_rodata("kernel_stacks", flag(settings.kernel_stacks)),
        o.set_rodata("offcpu_min_ns", settings.min_block_ns),
        o.set_autoload("offcpu_switch", settings.off_cpu),
        o.set_autoload("offcpu_waking", settings.wakers),
        o.set_autoload("profile_sample", settings.on_cpu), o.set_autoload("alloc_enter", memleak),
        o.set_autoload("alloc_return", memleak), o.set_autoload("alloc_free", memleak),
        o.set_autoload("alloc_go", go_heap),
        o.set_autoload("offcpu_go", !settings.go_park_sites.empty()),
        o.set_max_entries("go_parked", settings.go_park_sites.empty() ? 1 : kGoParked),
        o.set_max_entries("allocs",
                          memleak ? (settings.max_blocks ? settings.max_blocks : kMaxBlocks) : 1),
        o.set_max_entries("live", memleak ? 2 * slots : 1),
        o.set_max_entries("offcpu_start", settings.off_cpu ? kOffCpuThreads : 1),
        o.set_max_entries("stacks", settings.kernel_stacks ? slots : 1),
        o.set_max_entries("ustacks", settings.user_stacks ? slots : 1),
        // Distinct (thread, stacks) pairs outnumber stacks, and keys cost little.
        o.set_max_entries("counts", 2 * slots),
        o.set_max_entries("targets",
                          std::max<uint32_t>(1, static_cast<uint32_t>(settings.pids.size()))),
        exits ? ExitMaps::configure(o, settings.pids) : o.set_autoload("exit_maps", false)})
    if (!r) return tl::unexpected(r.error());
  if (auto r = o.load(); !r) return tl::unexpected(r.error());
  return object;
}

Result<ProfileProgram> ProfileProgram::load(const ProfileSettings& settings,
                                            NewProcessHandler on_new, NewStackHandler on_stack) {
  if (settings.user_stacks && settings.unwind == nullptr)
    return fail("user stacks need the unwinder's maps");
  bool exits = static_cast<bool>(settings.on_exit);
  auto object = open_and_load(settings, exits);
  std::optional<Error> exits_error;
  if (!object && exits) {
    // A kernel without what the exits' program needs (bpf_iter_task_vma, 6.7; the mm still there
    // at sched_process_exit, 6.16): the profile runs without it, at the cost of a second load.
    exits_error = object.error();
    exits = false;
    object = open_and_load(settings, false);
  }
  if (!object) return tl::unexpected(object.error());
  ProfileProgram p(std::move(*object));
  p.exits_error_ = std::move(exits_error);
  p.on_cpu_ = settings.on_cpu;
  p.off_cpu_ = settings.off_cpu;
  p.min_block_ns_ = settings.min_block_ns;
  p.wakers_ = settings.wakers;
  p.memleak_ = !settings.alloc_sites.empty();
  p.alloc_sites_ = settings.alloc_sites;
  p.go_park_sites_ = settings.go_park_sites;
  p.go_wait_reasons_ = settings.go_wait_reasons;
  p.alloc_pid_ = settings.pids.size() == 1 ? settings.pids[0] : -1;
  p.pids_ = settings.pids;
  p.only_after_exec_ = settings.only_after_exec;
  p.per_thread_ = settings.per_thread;
  p.user_stacks_ = settings.user_stacks;
  p.kernel_stacks_ = settings.kernel_stacks;
  p.go_parked_ = settings.go_parked;
  BpfObject& o = p.object_;
  if (settings.pids.size() > 1) {
    uint8_t one = 1;
    for (pid_t pid : settings.pids) {
      auto key = static_cast<uint32_t>(pid);
      if (bpf_map_update_elem(o.map_fd("targets"), &key, &one, BPF_ANY))
        return fail_errno(errno, "cannot add PID {} to the profiler's targets: {}", pid,
                          std::strerror(errno));
    }
  }
  p.new_processes_ = std::make_unique<NewProcesses>();
  p.new_processes_->handler = std::move(on_new);
  p.new_processes_->on_stack = std::move(on_stack);
  p.new_processes_->ustacks_fd = o.map_fd("ustacks");
  auto ring = RingReader::open(
      o.map_fd("events"), [state = p.new_processes_.get()](const void* data, size_t size) {
        if (size < sizeof(uint32_t) * 2) {
          ++state->short_records;
          return;
        }
        const auto* head = static_cast<const profile_new_process*>(data);
        if (head->kind == PROFILE_RECORD_STACK) {
          if (size < sizeof(profile_new_stack)) {
            ++state->short_records;
            return;
          }
          const auto* rec = static_cast<const profile_new_stack*>(data);
          unwind_stack stack{};
          if (state->on_stack && !bpf_map_lookup_elem(state->ustacks_fd, &rec->hash, &stack)) {
            const std::vector<uint64_t> frames(
                stack.frames, stack.frames + std::min<size_t>(stack.len, UNWIND_MAX_FRAMES));
            state->on_stack(static_cast<pid_t>(rec->tgid), frames);
          }
          return;
        }
        if (size < sizeof(profile_new_process)) {
          ++state->short_records;
          return;
        }
        state->handler(static_cast<pid_t>(head->tgid),
                       std::string_view(head->comm, strnlen(head->comm, sizeof head->comm)));
      });
  if (!ring) return tl::unexpected(ring.error());
  p.ring_.emplace(std::move(*ring));
  if (exits) {
    auto e = ExitMaps::attach(o, settings.pids, settings.on_exit);
    if (e)
      p.exits_ = std::move(*e);
    else
      p.exits_error_ = e.error();
  }
  return p;
}

Result<void> ProfileProgram::start(uint64_t frequency_hz) {
  if (memleak_) {
    // Entry probes before return probes, frees before either: a block is never followed whose
    // free could go unseen, and a return never runs without its entry half.
    alloc_links_ = std::make_unique<UprobeLinks>(alloc_pid_);
    std::vector<AttachSite> frees, entries, returns, go;
    for (const AttachSite& s : alloc_sites_) {
      const uint32_t fn = ALLOC_COOKIE_FN(s.cookie);
      (s.retprobe                                             ? returns
       : fn == ALLOC_FREE || fn == ALLOC_MUNMAP               ? frees
       : fn == ALLOC_GO_SAMPLE || fn == ALLOC_GO_FREE_SPECIAL ? go
                                                              : entries)
          .push_back(s);
    }
    for (auto [program, sites] :
         {std::pair{"alloc_free", &frees}, std::pair{"alloc_enter", &entries},
          std::pair{"alloc_return", &returns}, std::pair{"alloc_go", &go}})
      if (!sites->empty())
        if (auto r = alloc_links_->attach_each(object_.program(program), *sites); !r) return r;
    return {};
  }
  if (off_cpu_) {
    object_.skeleton<profile>()->bss->offcpu_since_ns = monotonic_ns();
    auto attach = [&](LinkPtr& link, const char* program, const char* tracepoint) -> Result<void> {
      link.reset(bpf_program__attach(object_.program(program)));
      if (link) return {};
      int err = errno;
      return fail_errno(err, "cannot attach to the scheduler's {} tracepoint: {}", tracepoint,
                        std::strerror(err));
    };
    // The waking side first: a wait the switch records is then never woken unseen.
    if (wakers_)
      if (auto r = attach(waking_link_, "offcpu_waking", "sched_waking"); !r) return r;
    if (auto r = attach(switch_link_, "offcpu_switch", "sched_switch"); !r) return r;
    if (!go_park_sites_.empty()) {
      // runtime.execute before runtime.gopark: a park is never recorded whose end goes unseen.
      go_links_ = std::make_unique<UprobeLinks>(alloc_pid_);
      std::vector<AttachSite> sites = go_park_sites_;
      std::stable_sort(sites.begin(), sites.end(), [](const AttachSite& a, const AttachSite& b) {
        return a.cookie == GO_SCHED_EXECUTE && b.cookie != GO_SCHED_EXECUTE;
      });
      if (auto r = go_links_->attach_each(object_.program("offcpu_go"), sites); !r) return r;
    }
  }
  if (!on_cpu_) return {};
  if (off_cpu_) sample_ns_ = 1'000'000'000 / std::max<uint64_t>(frequency_hz, 1);
  return events_.attach_cpu_clock(object_.program("profile_sample"), frequency_hz);
}

Result<ProfileProgram::BegunFollowed> ProfileProgram::follow_begun_waits() {
  BegunFollowed followed;
  if (!off_cpu_ || only_after_exec_) return followed;
  const uint64_t since = object_.skeleton<profile>()->bss->offcpu_since_ns;
  // A wait put in with the stacks read, under a new token; whether it stayed (its thread or
  // goroutine not run since its read: its entry is not the switch program's already, and is
  // taken out again when it ran in between, since that wait has ended).
  auto follow = [&](int fd, const auto& key, profile_offcpu_start& st, UserWalk& user,
                    std::vector<uint64_t>& kernel, const auto& still, pid_t pid) {
    const uint64_t token = begun_.size() + 1;
    st.key.user_stack_id = user_stacks_ ? PROFILE_STACK_SEEDED : PROFILE_STACK_NONE;
    st.key.user_stack = token;
    st.since_ns = since;
    if (bpf_map_update_elem(fd, &key, &st, BPF_NOEXIST)) return false;
    if (!still()) {
      profile_offcpu_start now{};
      if (bpf_map_lookup_elem(fd, &key, &now) == 0 && now.key.user_stack == token &&
          now.since_ns == since)
        bpf_map_delete_elem(fd, &key);
      return false;
    }
    if (new_processes_->on_stack && !user.frames.empty())
      new_processes_->on_stack(pid, user.frames);
    begun_[token] = {std::move(user.frames), user.end, std::move(kernel)};
    return true;
  };
  auto comm_of = [](profile_key& key, const std::string& comm) {
    std::memcpy(key.comm, comm.data(), std::min(comm.size(), sizeof key.comm - 1));
  };
  for (pid_t pid : pids_) {
    const ParkedGoroutineLayout* go =
        go_parked_ && !go_park_sites_.empty() && pid == alloc_pid_ ? &*go_parked_ : nullptr;
    auto begun = read_begun_waits(pid, user_stacks_, go);
    if (!begun)
      return with_context(fmt::format("the waits of process {} begun before", pid), begun.error());
    if (new_processes_->handler) new_processes_->handler(pid, begun->comm);
    for (BegunWait& w : begun->waits) {
      const auto tid = static_cast<uint32_t>(w.tid);
      profile_offcpu_start st{};
      st.key.pid = static_cast<uint32_t>(pid);
      if (per_thread_) st.key.tid = tid;
      comm_of(st.key, per_thread_ ? w.comm : begun->comm);
      st.key.reason = w.reason;
      st.key.kernel_stack_id = kernel_stacks_ ? PROFILE_STACK_SEEDED : PROFILE_STACK_NONE;
      if (follow(
              object_.map_fd("offcpu_start"), tid, st, w.user, w.kernel,
              [&] { return still_waiting(pid, w.tid, w.switches); }, pid))
        ++followed.threads;
    }
    for (BegunGoroutine& g : begun->goroutines) {
      // As the gopark probe has them: the process's, no kernel stack, Go's reason.
      const go_parked_key key{static_cast<uint32_t>(pid), 0, g.parked.g};
      profile_offcpu_start st{};
      st.key.pid = static_cast<uint32_t>(pid);
      comm_of(st.key, begun->comm);
      st.key.reason = OFFCPU_GO_PARK;
      st.key.go_wait = g.parked.wait;
      st.key.kernel_stack_id = PROFILE_STACK_NONE;
      st.key.waker_user_stack_id = PROFILE_STACK_NONE;
      st.key.waker_kernel_stack_id = PROFILE_STACK_NONE;
      std::vector<uint64_t> no_kernel;
      if (follow(
              object_.map_fd("go_parked"), key, st, g.user, no_kernel,
              [&] { return still_parked(pid, *go, g.parked); }, pid))
        ++followed.goroutines;
    }
    if (go && !begun->no_goroutines.empty()) followed.no_goroutines = begun->no_goroutines;
  }
  return followed;
}

void ProfileProgram::stop() {
  if (alloc_links_) alloc_links_->detach_all();
  if (go_links_) go_links_->detach_all();
  events_.detach_all();
  switch_link_.reset();
  waking_link_.reset();
}

Result<void> ProfileProgram::read_samples(StackAggregator& out) {
  int counts_fd = object_.map_fd("counts"), stacks_fd = object_.map_fd("stacks");
  int user_fd = object_.map_fd("ustacks");
  // A user stack by its hash, with how its walk ended; read once per call.
  std::unordered_map<uint64_t, std::optional<unwind_stack>> user_stacks;
  // A wait begun before the profile: the stacks follow_begun_waits() read.
  auto begun_stack = [&](uint64_t token, bool user, StackStatus& status,
                         int* end) -> std::vector<uint64_t> {
    auto it = begun_.find(token);
    const std::vector<uint64_t>* frames = it == begun_.end() ? nullptr
                                          : user             ? &it->second.user
                                                             : &it->second.kernel;
    if (!frames || frames->empty()) {
      status = StackStatus::Failed;
      return {};
    }
    if (user && end) *end = it->second.user_end;
    if (user && it->second.user_end == UNWIND_END_TRUNCATED) status = StackStatus::Truncated;
    return *frames;
  };
  // `lost`: what a stack that cannot be read costs the profile (samples; one per off-CPU row).
  auto user_stack = [&](int32_t id, uint64_t hash, StackStatus& status, int* end,
                        uint64_t lost) -> std::vector<uint64_t> {
    if (id == PROFILE_STACK_SEEDED) return begun_stack(hash, true, status, end);
    if (id != PROFILE_STACK_HASHED) return {};
    auto it = user_stacks.find(hash);
    if (it == user_stacks.end()) {
      unwind_stack st{};
      bool found = bpf_map_lookup_elem(user_fd, &hash, &st) == 0;
      it = user_stacks.emplace(hash, found ? std::optional(st) : std::nullopt).first;
    }
    if (!it->second || it->second->len == 0) {
      unreadable_stacks_ += lost;
      status = StackStatus::Failed;
      return {};
    }
    const unwind_stack& st = *it->second;
    if (end) *end = st.end;
    if (st.end == UNWIND_END_TRUNCATED) status = StackStatus::Truncated;
    return {st.frames, st.frames + std::min<uint32_t>(st.len, UNWIND_MAX_FRAMES)};
  };
  // A stack id is shared by every key whose stack it is: each is read once per call.
  std::unordered_map<int32_t, std::vector<uint64_t>> stacks;
  unreadable_stacks_ = 0;  // each read counts the whole profile again
  auto stack = [&](int32_t id, StackStatus& status, uint64_t count) -> std::vector<uint64_t> {
    if (id < 0) return {};
    auto it = stacks.find(id);
    if (it == stacks.end()) {
      uint64_t frames[PROFILE_MAX_FRAMES] = {};
      auto key = static_cast<uint32_t>(id);
      std::vector<uint64_t> addresses;
      if (bpf_map_lookup_elem(stacks_fd, &key, frames) == 0)
        for (uint64_t f : frames) {
          if (f == 0) break;  // the kernel zero-fills past the last frame
          addresses.push_back(f);
        }
      it = stacks.emplace(id, std::move(addresses)).first;
    }
    if (it->second.empty()) {
      unreadable_stacks_ += count;
      status = StackStatus::Failed;
    } else if (it->second.size() == PROFILE_MAX_FRAMES) {
      status = StackStatus::Truncated;  // as deep as the map keeps: the outermost may be cut
    }
    return it->second;
  };

  auto add = [&](const profile_key& key, uint64_t count) {
    StackSample s;
    s.pid = static_cast<pid_t>(key.pid);
    s.tid = static_cast<pid_t>(key.tid);
    s.comm.assign(key.comm, strnlen(key.comm, sizeof key.comm));
    s.user_status = status_of_id(key.user_stack_id);
    s.kernel_status = status_of_id(key.kernel_stack_id);
    s.reason =
        static_cast<uint8_t>(key.reason < OFFCPU_NUM_REASONS ? key.reason : uint32_t{OFFCPU_OTHER});
    if (key.reason == OFFCPU_GO_PARK)
      s.wait = key.go_wait < go_wait_reasons_.size() && !go_wait_reasons_[key.go_wait].empty()
                   ? go_wait_reasons_[key.go_wait]
                   : fmt::format("wait reason {}", key.go_wait);
    s.count = key.reason == OFFCPU_ON_CPU && sample_ns_ ? count * sample_ns_ : count;
    const uint64_t lost = key.reason == OFFCPU_ON_CPU ? count : 1;
    s.user = user_stack(key.user_stack_id, key.user_stack, s.user_status, &s.user_end, lost);
    s.kernel = key.kernel_stack_id == PROFILE_STACK_SEEDED
                   ? begun_stack(key.user_stack, false, s.kernel_status, nullptr)
                   : stack(key.kernel_stack_id, s.kernel_status, lost);
    if (key.waker_tid != 0) {
      s.waker_pid = static_cast<pid_t>(key.waker_pid);
      s.waker_tid = key.waker_tid == UINT32_MAX ? -1 : static_cast<pid_t>(key.waker_tid);
      s.waker_comm.assign(key.waker_comm, strnlen(key.waker_comm, sizeof key.waker_comm));
      StackStatus ignored = StackStatus::Ok;
      s.waker_user =
          user_stack(key.waker_user_stack_id, key.waker_user_stack, ignored, nullptr, lost);
      s.waker_kernel = stack(key.waker_kernel_stack_id, ignored, lost);
    }
    out.add(std::move(s));
  };
  if (memleak_) {
    // Rows whose blocks were all freed are left out; a row below zero (a racing free's
    // subtraction read before its allocation's addition) as zero.
    return for_each_map_entry<alloc_row_key, alloc_row>(
        object_.map_fd("live"), "memleak's outstanding blocks",
        [&](const alloc_row_key& rkey, const alloc_row& row) {
          if (row.bytes <= 0 || row.blocks <= 0) return;
          StackSample s;
          s.pid = static_cast<pid_t>(rkey.pid);
          s.comm.assign(row.comm, strnlen(row.comm, sizeof row.comm));
          s.kernel_status = StackStatus::NotCollected;
          s.user_status = status_of_id(rkey.user_stack_id);
          s.count = static_cast<uint64_t>(row.bytes);
          s.blocks = (static_cast<uint64_t>(row.blocks) + ALLOC_BLOCK_ONE / 2) / ALLOC_BLOCK_ONE;
          s.user = user_stack(rkey.user_stack_id, rkey.user_stack, s.user_status, &s.user_end, 1);
          out.add(std::move(s));
        });
  }
  // `counts` is never deleted from: the walk races no delete.
  if (auto r = for_each_map_entry<profile_key, uint64_t>(counts_fd, "the profiler's counts", add);
      !r)
    return r;
  if (!off_cpu_) return {};
  // Threads waiting now: their wait so far, so that a thread blocked all along is in the profile.
  // Entries come and go as threads run: one gone between two calls is skipped, and a walk cut
  // short by them is the read's, not an error.
  const uint64_t now = monotonic_ns();
  auto waiting = [&](const auto&, const profile_offcpu_start& st) {
    if (now > st.since_ns && now - st.since_ns >= min_block_ns_) add(st.key, now - st.since_ns);
  };
  (void)for_each_map_entry<uint32_t, profile_offcpu_start>(object_.map_fd("offcpu_start"),
                                                           "the off-CPU waits", waiting);
  // And goroutines parked now, likewise.
  if (!go_park_sites_.empty())
    (void)for_each_map_entry<go_parked_key, profile_offcpu_start>(object_.map_fd("go_parked"),
                                                                  "the parked goroutines", waiting);
  return {};
}

Result<std::vector<uint64_t>> ProfileProgram::counters() const {
  PerCpuSum sum(object_.map_fd("counters"));
  std::vector<uint64_t> out(PROFILE_NUM_COUNTERS);
  for (uint32_t i = 0; i < PROFILE_NUM_COUNTERS; ++i) {
    auto v = sum.sum(i);
    if (!v) return with_context("the profiler's counters", v.error());
    out[i] = *v;
  }
  return out;
}

Result<AllocCounts> ProfileProgram::alloc_counts() const {
  auto c = counters();
  if (!c) return tl::unexpected(c.error());
  return AllocCounts{(*c)[PC_ALLOC_CALLS], (*c)[PC_ALLOCS_TRACKED], (*c)[PC_FREES],
                     (*c)[PC_FREES_UNKNOWN], (*c)[PC_ALLOCS_ESTIMATED]};
}

Result<uint64_t> ProfileProgram::samples_seen() const {
  return PerCpuSum(object_.map_fd("counters")).sum(PC_SAMPLES);
}

Result<std::vector<std::pair<std::string, uint64_t>>> ProfileProgram::losses() const {
  auto c = counters();
  if (!c) return tl::unexpected(c.error());
  std::vector<std::pair<std::string, uint64_t>> out;
  for (auto [counter, name] : kLossNames) out.emplace_back(name, (*c)[counter]);
  out.emplace_back("stack_unreadable", unreadable_stacks_);
  if (memleak_)
    for (auto [counter, name] : kAllocLossNames) out.emplace_back(name, (*c)[counter]);
  if (off_cpu_) {
    out.emplace_back("off_cpu_short", (*c)[PC_OFFCPU_SHORT]);
    out.emplace_back("off_cpu_unseen", (*c)[PC_OFFCPU_UNSEEN]);
    out.emplace_back("off_cpu_unseen_ns", (*c)[PC_OFFCPU_UNSEEN_NS]);
    if (!go_park_sites_.empty()) out.emplace_back("go_parked_full", (*c)[PC_GO_PARKED_FULL]);
  }
  out.emplace_back("process_record_short", new_processes_ ? new_processes_->short_records : 0);
  return out;
}

}  // namespace uscope
