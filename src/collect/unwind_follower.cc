#include "collect/unwind_follower.h"

#include "bpf/unwind.h"
#include "collect/percpu_sum.h"

namespace uscope {

namespace {

constexpr std::pair<unwind_stat, const char*> kStatNames[] = {
    {UNWIND_STAT_FRAMES_CFI, "frames_cfi"},
    {UNWIND_STAT_FRAMES_FP, "frames_fp"},
    {UNWIND_STAT_FRAMES_UNLOADED, "frames_unloaded"},
    {UNWIND_STAT_REQUESTS_LOST, "requests_lost"},
    {UNWIND_STAT_PY_FRAMES, "frames_python"},
    {UNWIND_STAT_PY_NO_THREAD, "python_no_thread"},
    {UNWIND_STAT_PY_READ_FAILED, "python_read_failed"},
    {UNWIND_STAT_PY_UNMATCHED, "python_unmatched"},
    {UNWIND_STAT_HS_FRAMES, "frames_java"},
    {UNWIND_STAT_HS_NO_BLOB, "java_no_blob"},
    {UNWIND_STAT_HS_NO_RETURN, "java_no_return"},
    {UNWIND_STAT_HS_BAD_INTERP, "java_bad_interpreter_frame"},
    {UNWIND_STAT_V8_FRAMES, "frames_v8"},
};

}  // namespace

Result<void> UnwindFollower::listen(RingReader& reader) {
  return reader.add(maps_.request_ring_fd(), handler());
}

Result<void> UnwindFollower::listen_alone() {
  auto r = RingReader::open(maps_.request_ring_fd(), handler());
  if (!r) return tl::unexpected(r.error());
  own_.emplace(std::move(*r));
  return {};
}

RingReader::Handler UnwindFollower::handler() {
  return [this](const void* data, size_t size) {
    if (size < sizeof(unwind_request)) {
      ++short_records_;
      return;
    }
    const auto* r = static_cast<const unwind_request*>(data);
    auto pid = static_cast<pid_t>(r->tgid);
    if (r->kind == UNWIND_REQUEST_EXIT) {
      load_.erase(pid);
      execed_.erase(pid);
      forget_.insert(pid);
    } else {
      forget_.erase(pid);
      load_.insert(pid);
      if (r->kind == UNWIND_REQUEST_EXEC) execed_.insert(pid);
    }
  };
}

void UnwindFollower::serve() {
  if (own_) (void)own_->consume_all();  // requests are few: merged below, rate-limited by BPF
  for (pid_t pid : forget_) {
    maps_.forget(pid);
    loaded_at_.erase(pid);
  }
  forget_.clear();
  auto now = std::chrono::steady_clock::now();
  for (auto it = load_.begin(); it != load_.end();) {
    pid_t pid = *it;
    auto at = loaded_at_.find(pid);
    // Kept for a serve() after the interval, not dropped: the walker asks again only
    // UNWIND_REQUEST_INTERVAL_NS later, and only while its stacks are cut.
    if (at != loaded_at_.end() && now - at->second < kReloadInterval && !execed_.contains(pid)) {
      ++it;
      continue;
    }
    // A process gone by now is forgotten by load_process itself.
    (void)maps_.load_process(pid);
    // A load at an exec does not start the interval: ld.so maps the program's libraries right
    // after it, and the walker's first request for them is served at once.
    if (execed_.erase(pid))
      loaded_at_.erase(pid);
    else
      loaded_at_[pid] = now;
    ++reloads_;
    it = load_.erase(it);
  }
  maps_.retry_runtimes();
}

Result<std::vector<std::pair<std::string, uint64_t>>> UnwindFollower::walk_counts() const {
  PerCpuSum sum(maps_.stats_map_fd());
  std::vector<std::pair<std::string, uint64_t>> out;
  for (uint32_t end = 0; end < UNWIND_NUM_ENDS; ++end) {
    auto v = sum.sum(end);
    if (!v) return with_context("the unwinder's counters", v.error());
    out.emplace_back(unwind_end_name(end), *v);
  }
  for (auto [stat, name] : kStatNames) {
    auto v = sum.sum(stat);
    if (!v) return with_context("the unwinder's counters", v.error());
    out.emplace_back(name, *v);
  }
  out.emplace_back("request_short", short_records_);
  return out;
}

}  // namespace uscope
