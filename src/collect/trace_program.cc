#include "collect/trace_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "attach/bpf_features.h"
#include "collect/percpu_sum.h"
#include "trace.skel.h"

namespace uscope {

void TraceProgram::SkelDeleter::operator()(::trace* s) const {
  trace__destroy(s);
}
void TraceProgram::RingDeleter::operator()(ring_buffer* r) const {
  ring_buffer__free(r);
}

TraceProgram::TraceProgram(std::unique_ptr<::trace, SkelDeleter> skel, size_t recipes,
                           std::vector<int32_t> hist_slot, pid_t tgid, bool multi)
    : skel_(std::move(skel)),
      n_recipes_(recipes),
      hist_slot_(std::move(hist_slot)),
      multi_(multi),
      links_(tgid > 0 ? tgid : -1) {}
TraceProgram::TraceProgram(TraceProgram&&) noexcept = default;
TraceProgram& TraceProgram::operator=(TraceProgram&&) noexcept = default;
// Members are destroyed in reverse order: ring buffer, links, then the programs and maps.
TraceProgram::~TraceProgram() = default;

Result<TraceProgram> TraceProgram::load(std::span<const uscope_recipe> recipes, pid_t tgid,
                                        bool use_multi, uint32_t ring_bytes, bool only_after_exec,
                                        uint32_t agg_keys) {
  if (recipes.empty()) return fail("nothing to trace");
  // The recipe interpreter runs its ops with bpf_loop(): without it the verifier would reject
  // the program with a log no user can act on.
  if (!has_bpf_loop())
    return fail(
        "this kernel lacks bpf_loop (Linux 5.17+ needed): uscope's tracing program cannot run "
        "here; `uscope count` and `uscope check` still work");
  std::unique_ptr<::trace, SkelDeleter> skel(trace__open());
  if (!skel) return fail_errno(errno, "cannot open the BPF object: {}", std::strerror(errno));
  skel->rodata->target_tgid = tgid > 0 ? static_cast<uint32_t>(tgid) : 0;
  // uscope never traces itself unless asked to by PID (`uscope check` does).
  skel->rodata->self_tgid = tgid == getpid() ? 0 : static_cast<uint32_t>(getpid());
  skel->rodata->only_after_exec = only_after_exec;
  auto n = static_cast<uint32_t>(recipes.size());
  bpf_map__set_max_entries(skel->maps.recipes, n);
  bpf_map__set_max_entries(skel->maps.counters, n * TRACE_NUM_COUNTERS);
  // A histogram row only for the recipes that fill one (latency's return halves).
  std::vector<uscope_recipe> loaded(recipes.begin(), recipes.end());
  std::vector<int32_t> hist_slot(n, -1);
  uint32_t rows = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (loaded[i].flags & TRACE_F_HISTOGRAM) {
      loaded[i].hist_slot = rows;
      hist_slot[i] = static_cast<int32_t>(rows++);
    }
  bpf_map__set_max_entries(skel->maps.latency, std::max(rows, 1u));
  if (!ring_bytes) ring_bytes = bpf_map__max_entries(skel->maps.events);
  auto page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  if (ring_bytes < page || (ring_bytes & (ring_bytes - 1)))
    return fail("ring buffer size {} bytes: use a power of two of at least {}", ring_bytes, page);
  bpf_map__set_max_entries(skel->maps.events, ring_bytes);
  skel->rodata->wakeup_bytes = ring_bytes / 4;
  // The entry table is preallocated (megabytes, milliseconds to create): one slot when no
  // recipe uses it.
  uint32_t flags = 0;
  for (const auto& r : recipes) flags |= r.flags;
  if (!(flags & TRACE_F_SAVE_ENTRY)) bpf_map__set_max_entries(skel->maps.entries, 1);
  bpf_map__set_max_entries(
      skel->maps.aggregates,
      flags & TRACE_F_AGGREGATE ? (agg_keys ? agg_keys : kDefaultAggregateKeys) : 1);
  bpf_map__set_max_entries(skel->maps.stack_traces,
                           flags & TRACE_F_AGG_USTACK ? kStackTraceSlots : 1);
  bool multi =
      UprobeLinks::prepare_programs(skel->progs.trace_single, skel->progs.trace_multi, use_multi);
  if (int err = trace__load(skel.get()))
    return fail_errno(-err, "the kernel refused uscope's BPF program: {}", std::strerror(-err));
  int fd = bpf_map__fd(skel->maps.recipes);
  for (uint32_t i = 0; i < n; ++i)
    if (bpf_map_update_elem(fd, &i, &loaded[i], BPF_ANY))
      return fail_errno(errno, "cannot store recipe {}: {}", i, std::strerror(errno));
  return TraceProgram(std::move(skel), recipes.size(), std::move(hist_slot), tgid, multi);
}

Result<void> TraceProgram::attach(const std::vector<AttachSite>& sites, bool skip_refused) {
  links_.set_skip_refused(skip_refused);
  return multi_ ? links_.attach_multi(skel_->progs.trace_multi, sites)
                : links_.attach_each(skel_->progs.trace_single, sites);
}

namespace {
// Returned by the sample callback once the budget is used: libbpf 1.1 then stores the consumer
// position past this sample and returns it (ringbuf_process_ring()), so nothing is lost or seen
// twice. Any negative value does; this one is never reported as an error.
constexpr int kBudgetUsed = -ECANCELED;
}  // namespace

int TraceProgram::on_sample(void* ctx, void* data, size_t size) {
  auto* reader = static_cast<Reader*>(ctx);
  if (size < sizeof(uscope_event)) {
    ++reader->short_records;
  } else {
    uscope_event ev;
    std::memcpy(&ev, data, sizeof(ev));
    reader->handler(ev, std::span<const uint8_t>(static_cast<const uint8_t*>(data) + sizeof(ev),
                                                 size - sizeof(ev)));
  }
  if (reader->budget != SIZE_MAX && --reader->budget == 0) return kBudgetUsed;
  return 0;
}

Result<void> TraceProgram::open_events(EventHandler on_event) {
  reader_ = std::make_unique<Reader>();
  reader_->handler = std::move(on_event);
  ring_.reset(ring_buffer__new(bpf_map__fd(skel_->maps.events), &TraceProgram::on_sample,
                               reader_.get(), nullptr));
  if (!ring_) return fail_errno(errno, "cannot open the ring buffer: {}", std::strerror(errno));
  return {};
}

int TraceProgram::events_epoll_fd() const {
  return ring_ ? ring_buffer__epoll_fd(ring_.get()) : -1;
}

uint64_t TraceProgram::short_records() const {
  return reader_ ? reader_->short_records : 0;
}

Result<ConsumeResult> TraceProgram::consume(size_t max_events) {
  if (!ring_ || max_events == 0) return ConsumeResult{};
  reader_->budget = std::min(max_events, SIZE_MAX - 1);
  int n = ring_buffer__consume(ring_.get());
  size_t handed = std::min(max_events, SIZE_MAX - 1) - reader_->budget;
  reader_->budget = SIZE_MAX;
  if (n == kBudgetUsed) return ConsumeResult{handed, true};
  if (n < 0) return fail_errno(-n, "reading the ring buffer: {}", std::strerror(-n));
  return ConsumeResult{handed, false};
}

Result<size_t> TraceProgram::consume_all() {
  if (!ring_) return size_t{0};
  reader_->budget = SIZE_MAX;
  int n = ring_buffer__consume(ring_.get());
  if (n < 0) return fail_errno(-n, "reading the ring buffer: {}", std::strerror(-n));
  return static_cast<size_t>(n);
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
    RecipeCounters& c = out[r];
    c.hits = v[TC_HITS];
    c.emitted = v[TC_EMITTED];
    c.lost = v[TC_LOST];
    c.filtered = v[TC_FILTERED];
    c.read_errors = v[TC_READ_ERRORS];
    c.no_entry = v[TC_NO_ENTRY];
    c.entry_save_failed = v[TC_ENTRY_SAVE_FAILED];
    c.matched = v[TC_MATCHED];
    c.malformed = v[TC_MALFORMED];
    c.stack_failed = v[TC_STACK_FAILED];
    c.truncated = v[TC_TRUNCATED];
    c.agg_full = v[TC_AGG_FULL];
    c.stack_collided = v[TC_STACK_COLLIDED];
  }
  return out;
}

Result<std::vector<uint64_t>> TraceProgram::histogram(uint32_t recipe) const {
  if (recipe >= hist_slot_.size() || hist_slot_[recipe] < 0)
    return fail("recipe {} has no latency histogram", recipe);
  uint32_t row = static_cast<uint32_t>(hist_slot_[recipe]);
  uscope_histogram h{};
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.latency), &row, &h))
    return fail_errno(errno, "cannot read latency histogram {}: {}", row, std::strerror(errno));
  return std::vector<uint64_t>(std::begin(h.buckets), std::end(h.buckets));
}

Result<std::vector<AggregateRow>> TraceProgram::aggregates() const {
  return read_aggregate_map(bpf_map__fd(skel_->maps.aggregates));
}

Result<std::vector<uint64_t>> TraceProgram::user_stack(const AggregateRow& row) const {
  return read_stack_trace(bpf_map__fd(skel_->maps.stack_traces), row);
}

std::vector<int> TraceProgram::program_fds() const {
  std::vector<int> fds;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (bpf_program__fd(prog) >= 0) fds.push_back(bpf_program__fd(prog));
  }
  return fds;
}

}  // namespace uscope
