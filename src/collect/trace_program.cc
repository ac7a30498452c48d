#include "collect/trace_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "collect/percpu_sum.h"
#include "trace.skel.h"

namespace uscope {

void TraceProgram::SkelDeleter::operator()(::trace* s) const {
  trace__destroy(s);
}
void TraceProgram::RingDeleter::operator()(ring_buffer* r) const {
  ring_buffer__free(r);
}

TraceProgram::TraceProgram(std::unique_ptr<::trace, SkelDeleter> skel, size_t recipes, pid_t tgid,
                           bool multi)
    : skel_(std::move(skel)), n_recipes_(recipes), multi_(multi), links_(tgid > 0 ? tgid : -1) {}
TraceProgram::TraceProgram(TraceProgram&&) noexcept = default;
TraceProgram& TraceProgram::operator=(TraceProgram&&) noexcept = default;
// Members are destroyed in reverse order: ring buffer, links, then the programs and maps.
TraceProgram::~TraceProgram() = default;

Result<TraceProgram> TraceProgram::load(std::span<const uscope_recipe> recipes, pid_t tgid,
                                        bool use_multi, uint32_t ring_bytes, bool only_after_exec) {
  if (recipes.empty()) return fail("nothing to trace");
  std::unique_ptr<::trace, SkelDeleter> skel(trace__open());
  if (!skel) return fail_errno(errno, "cannot open the BPF object: {}", std::strerror(errno));
  skel->rodata->target_tgid = tgid > 0 ? static_cast<uint32_t>(tgid) : 0;
  // uscope never traces itself unless asked to by PID (`uscope check` does).
  skel->rodata->self_tgid = tgid == getpid() ? 0 : static_cast<uint32_t>(getpid());
  skel->rodata->only_after_exec = only_after_exec;
  auto n = static_cast<uint32_t>(recipes.size());
  bpf_map__set_max_entries(skel->maps.recipes, n);
  bpf_map__set_max_entries(skel->maps.counters, n * TRACE_NUM_COUNTERS);
  bpf_map__set_max_entries(skel->maps.latency, n * TRACE_HIST_BUCKETS);
  if (ring_bytes) {
    auto page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
    if (ring_bytes < page || (ring_bytes & (ring_bytes - 1)))
      return fail("ring buffer size {} bytes: use a power of two of at least {}", ring_bytes, page);
    bpf_map__set_max_entries(skel->maps.events, ring_bytes);
  }
  // The entry table and the stack map are preallocated (megabytes, milliseconds to create):
  // sized down to one slot when no recipe uses them.
  uint32_t flags = 0;
  for (const auto& r : recipes) flags |= r.flags;
  if (!(flags & TRACE_F_SAVE_ENTRY)) bpf_map__set_max_entries(skel->maps.entries, 1);
  if (!(flags & TRACE_F_STACK)) bpf_map__set_max_entries(skel->maps.stacks, 1);
  bool multi =
      UprobeLinks::prepare_programs(skel->progs.trace_single, skel->progs.trace_multi, use_multi);
  if (int err = trace__load(skel.get()))
    return fail_errno(-err, "the kernel refused uscope's BPF program: {}", std::strerror(-err));
  int fd = bpf_map__fd(skel->maps.recipes);
  for (uint32_t i = 0; i < n; ++i)
    if (bpf_map_update_elem(fd, &i, &recipes[i], BPF_ANY))
      return fail_errno(errno, "cannot store recipe {}: {}", i, std::strerror(errno));
  return TraceProgram(std::move(skel), recipes.size(), tgid, multi);
}

Result<void> TraceProgram::attach(const std::vector<AttachSite>& sites, bool skip_refused) {
  links_.set_skip_refused(skip_refused);
  return multi_ ? links_.attach_multi(skel_->progs.trace_multi, sites)
                : links_.attach_each(skel_->progs.trace_single, sites);
}

int TraceProgram::on_sample(void* ctx, void* data, size_t size) {
  if (size < sizeof(uscope_event)) return 0;
  uscope_event ev;
  std::memcpy(&ev, data, sizeof(ev));
  size_t len = std::min<size_t>(ev.data_len, size - sizeof(ev));
  (*static_cast<EventHandler*>(ctx))(
      ev, std::span<const uint8_t>(static_cast<const uint8_t*>(data) + sizeof(ev), len));
  return 0;
}

Result<void> TraceProgram::open_events(EventHandler on_event) {
  handler_ = std::make_unique<EventHandler>(std::move(on_event));
  ring_.reset(ring_buffer__new(bpf_map__fd(skel_->maps.events), &TraceProgram::on_sample,
                               handler_.get(), nullptr));
  if (!ring_) return fail_errno(errno, "cannot open the ring buffer: {}", std::strerror(errno));
  return {};
}

int TraceProgram::events_epoll_fd() const {
  return ring_ ? ring_buffer__epoll_fd(ring_.get()) : -1;
}

Result<int> TraceProgram::consume() {
  if (!ring_) return 0;
  int n = ring_buffer__consume(ring_.get());
  if (n < 0) return fail_errno(-n, "reading the ring buffer: {}", std::strerror(-n));
  return n;
}

Result<std::vector<RecipeCounters>> TraceProgram::counters() const {
  PerCpuSum counters(bpf_map__fd(skel_->maps.counters));
  std::vector<RecipeCounters> out(n_recipes_);
  for (uint32_t r = 0; r < n_recipes_; ++r) {
    uint64_t v[TRACE_NUM_COUNTERS] = {};
    for (uint32_t c = 0; c < TRACE_NUM_COUNTERS; ++c) {
      auto n = counters.sum(r * TRACE_NUM_COUNTERS + c);
      if (!n) return tl::unexpected(n.error());
      v[c] = *n;
    }
    out[r] = {
        v[TC_HITS],     v[TC_EMITTED],           v[TC_LOST],   v[TC_FILTERED], v[TC_READ_ERRORS],
        v[TC_NO_ENTRY], v[TC_ENTRY_SAVE_FAILED], v[TC_MATCHED]};
  }
  return out;
}

Result<std::vector<uint64_t>> TraceProgram::histogram(uint32_t recipe) const {
  PerCpuSum buckets(bpf_map__fd(skel_->maps.latency));
  std::vector<uint64_t> out(TRACE_HIST_BUCKETS);
  for (uint32_t b = 0; b < TRACE_HIST_BUCKETS; ++b) {
    auto n = buckets.sum(recipe * TRACE_HIST_BUCKETS + b);
    if (!n) return tl::unexpected(n.error());
    out[b] = *n;
  }
  return out;
}

Result<std::vector<uint64_t>> TraceProgram::user_stack(int32_t stack_id) const {
  if (stack_id < 0) return fail("no stack captured (stack id {})", stack_id);
  std::vector<uint64_t> ips(127);
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stacks), &stack_id, ips.data()))
    return fail_errno(errno, "stack {} not found: {}", stack_id, std::strerror(errno));
  size_t n = 0;
  while (n < ips.size() && ips[n]) ++n;
  ips.resize(n);
  return ips;
}

}  // namespace uscope
