#include "collect/trace_program.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "attach/bpf_features.h"
#include "collect/percpu_sum.h"
#include "trace.skel.h"

namespace uscope {

RecipeCounters sum_of(std::span<const RecipeCounters> counters) {
  RecipeCounters t;
  for (const auto& c : counters) {
    t.hits += c.hits;
    t.emitted += c.emitted;
    t.lost += c.lost;
    t.filtered += c.filtered;
    t.read_errors += c.read_errors;
    t.no_entry += c.no_entry;
    t.entry_save_failed += c.entry_save_failed;
    t.matched += c.matched;
    t.entry_repeated += c.entry_repeated;
    t.malformed += c.malformed;
    t.stack_failed += c.stack_failed;
    t.truncated += c.truncated;
    t.agg_full += c.agg_full;
    t.stack_table_full += c.stack_table_full;
    t.abandoned += c.abandoned;
  }
  return t;
}

namespace {

// Whether a recipe reads a string or a buffer from the process: what a page it has not touched
// yet would break (a value behind a pointer was most often just written by the process).
bool reads_strings(const uscope_recipe& r) {
  for (uint32_t i = 0; i < r.n_ops && i < TRACE_MAX_OPS; ++i) {
    uint8_t c = r.ops[i].code;
    if (c == TOP_EMIT_STR || c == TOP_STREQ || c == TOP_EMIT_GOIFACE) return true;
  }
  return false;
}

}  // namespace

TraceProgram::TraceProgram(BpfObject obj, size_t recipes, std::vector<int32_t> hist_slot,
                           std::vector<bool> sleepable, std::optional<UprobeProgram> plain,
                           std::optional<UprobeProgram> sleeping)
    : obj_(std::move(obj)),
      n_recipes_(recipes),
      hist_slot_(std::move(hist_slot)),
      sleepable_(std::move(sleepable)),
      plain_(std::move(plain)),
      sleeping_(std::move(sleeping)) {}
TraceProgram::TraceProgram(TraceProgram&&) noexcept = default;
TraceProgram& TraceProgram::operator=(TraceProgram&&) noexcept = default;
// Members are destroyed in reverse order: ring buffer, links, then the programs and maps.
TraceProgram::~TraceProgram() = default;

Result<TraceProgram> TraceProgram::load(std::span<const uscope_recipe> recipes,
                                        const TargetFilter& target, bool use_multi,
                                        uint32_t ring_bytes, uint32_t agg_keys,
                                        const UnwindMaps* unwind) {
  if (recipes.empty()) return fail("nothing to trace");
  // The recipe interpreter runs its ops with bpf_loop(): without it the verifier would reject
  // the program with a log no user can act on.
  if (!has_bpf_loop())
    return fail(
        "this kernel lacks bpf_loop (Linux 5.17+ needed): uscope's tracing program cannot run "
        "here; `uscope count` and `uscope check` still work");
  auto obj = BpfObject::open(trace__open, trace__destroy, "uscope's tracing program");
  if (!obj) return tl::unexpected(obj.error());
  if (auto r = obj->set_target(target); !r) return tl::unexpected(r.error());
  auto n = static_cast<uint32_t>(recipes.size());
  // A histogram row only for the recipes that fill one (latency's return halves).
  std::vector<uscope_recipe> loaded(recipes.begin(), recipes.end());
  std::vector<int32_t> hist_slot(n, -1);
  uint32_t rows = 0;
  for (uint32_t i = 0; i < n; ++i)
    if (loaded[i].flags & TRACE_F_HISTOGRAM) {
      loaded[i].hist_slot = rows;
      hist_slot[i] = static_cast<int32_t>(rows++);
    }
  if (!ring_bytes) ring_bytes = bpf_map__max_entries(obj->map("events"));
  auto page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  if (ring_bytes < page || (ring_bytes & (ring_bytes - 1)))
    return fail("ring buffer size {} bytes: use a power of two of at least {}", ring_bytes, page);
  if (auto r = obj->set_rodata("wakeup_bytes", uint64_t{ring_bytes / 4}); !r)
    return tl::unexpected(r.error());
  // Only what the recipes use is verified (trace.bpf.c, trace_flags_used and trace_ops_used).
  uint32_t flags = 0;
  uint64_t ops = 0;
  for (const auto& r : recipes) {
    flags |= r.flags;
    for (uint32_t i = 0; i < std::min<uint32_t>(r.n_ops, TRACE_MAX_OPS); ++i)
      if (r.ops[i].code < TOP_NUM_OPS) ops |= TRACE_OP_BIT(r.ops[i].code);
  }
  if (auto r = obj->set_rodata("trace_flags_used", flags); !r) return tl::unexpected(r.error());
  if (auto r = obj->set_rodata("trace_ops_used", ops); !r) return tl::unexpected(r.error());
  if ((flags & (TRACE_F_STACK | TRACE_F_AGG_USTACK)) && unwind == nullptr)
    return fail("user stacks need the unwinder's maps");
  if (auto r = unwind ? unwind->share_with(*obj) : UnwindMaps::leave_unused(*obj); !r)
    return tl::unexpected(r.error());
  std::vector<std::pair<const char*, uint32_t>> sizes = {
      {"recipes", n},
      {"counters", n * TRACE_NUM_COUNTERS},
      {"latency", std::max(rows, 1u)},
      {"events", ring_bytes},
      {"aggregates", flags & TRACE_F_AGGREGATE ? (agg_keys ? agg_keys : kDefaultAggregateKeys) : 1},
      {"stack_traces", flags & TRACE_F_AGG_USTACK ? kStackTraceSlots : 1},
  };
  // The entry table is preallocated (megabytes, milliseconds to create): one slot when no recipe
  // uses it.
  if (!(flags & (TRACE_F_SAVE_ENTRY | TRACE_F_DEPTH))) sizes.emplace_back("entries", 1);
  sizes.emplace_back("call_depth", flags & TRACE_F_DEPTH ? kCallDepthThreads : 1);
  for (const auto& [map, entries] : sizes)
    if (auto r = obj->set_max_entries(map, entries); !r) return tl::unexpected(r.error());
  // A probe whose recipes read strings or buffers runs sleepable where the kernel can (its first
  // call then reads a page the process has not touched yet right, in the kernel); the others stay
  // non-sleepable, which costs less per hit (docs/BENCHMARKS.md, table B). Entry and return
  // halves of one probe go together.
  // A probe that takes user stacks stays non-sleepable: the unwinder's mappings are an LPM trie,
  // which sleepable programs may not use.
  std::vector<bool> sleepable(n, false);
  if (has_sleepable_uprobes()) {
    std::vector<uint32_t> reading, stacks;
    for (const auto& r : recipes) {
      if (reads_strings(r)) reading.push_back(r.probe_id);
      if (r.flags & (TRACE_F_STACK | TRACE_F_AGG_USTACK)) stacks.push_back(r.probe_id);
    }
    auto has = [](const std::vector<uint32_t>& v, uint32_t id) {
      return std::find(v.begin(), v.end(), id) != v.end();
    };
    for (uint32_t i = 0; i < n; ++i)
      sleepable[i] = has(reading, recipes[i].probe_id) && !has(stacks, recipes[i].probe_id);
  }
  bool any_sleepable = std::find(sleepable.begin(), sleepable.end(), true) != sleepable.end();
  bool any_plain = std::find(sleepable.begin(), sleepable.end(), false) != sleepable.end();
  if (auto r = obj->set_max_entries("scratches", any_sleepable ? 1 + TRACE_SLEEP_SLOTS : 1); !r)
    return tl::unexpected(r.error());
  auto* skel = obj->skeleton<::trace>();
  // Each pair not used is left out of the load (each program costs a verification).
  auto pair = [&](bpf_program* single, bpf_program* multi, bool used) {
    std::optional<UprobeProgram> p;
    if (used) {
      p.emplace(single, multi, use_multi, target);
    } else {
      bpf_program__set_autoload(single, false);
      bpf_program__set_autoload(multi, false);
    }
    return p;
  };
  auto plain = pair(skel->progs.trace_single, skel->progs.trace_multi, any_plain);
  auto sleeping =
      pair(skel->progs.trace_single_sleepable, skel->progs.trace_multi_sleepable, any_sleepable);
  if (auto r = obj->load(); !r) return tl::unexpected(r.error());
  int fd = obj->map_fd("recipes");
  for (uint32_t i = 0; i < n; ++i)
    if (bpf_map_update_elem(fd, &i, &loaded[i], BPF_ANY))
      return fail_errno(errno, "cannot store recipe {}: {}", i, std::strerror(errno));
  return TraceProgram(std::move(*obj), recipes.size(), std::move(hist_slot), std::move(sleepable),
                      std::move(plain), std::move(sleeping));
}

Result<void> TraceProgram::attach(const std::vector<AttachSite>& sites, bool skip_refused) {
  std::vector<AttachSite> plain, sleeping;
  for (const auto& s : sites)
    (s.cookie < sleepable_.size() && sleepable_[s.cookie] ? sleeping : plain).push_back(s);
  refused_.clear();
  // The groups attach in the order of their first site: a plan that needs a probe in before
  // another (TRACE_F_DEPTH's returns before their entries) lists it first.
  std::array order = {std::pair{&plain_, &plain}, std::pair{&sleeping_, &sleeping}};
  if (!sleeping.empty() && sleeping.front().cookie == sites.front().cookie)
    std::swap(order[0], order[1]);
  for (auto [p, group] : order) {
    if (group->empty()) continue;
    if (!*p) return fail("no program loaded for {} sites", group->size());
    if (auto r = (*p)->attach(*group, skip_refused); !r) return r;
    const auto& refused = (*p)->links().refused();
    refused_.insert(refused_.end(), refused.begin(), refused.end());
  }
  return {};
}

void TraceProgram::detach() {
  if (plain_) plain_->links().detach_all();
  if (sleeping_) sleeping_->links().detach_all();
}

bool TraceProgram::uses_multi() const {
  return plain_ ? plain_->multi() : sleeping_ && sleeping_->multi();
}

size_t TraceProgram::link_count() const {
  return (plain_ ? plain_->links().link_count() : 0) +
         (sleeping_ ? sleeping_->links().link_count() : 0);
}

Result<void> TraceProgram::open_events(EventHandler on_event) {
  events_ = std::make_unique<EventSink>();
  events_->handler = std::move(on_event);
  auto ring = RingReader::open(
      obj_.map_fd("events"), [sink = events_.get()](const void* data, size_t size) {
        if (size < sizeof(uscope_event)) {
          ++sink->short_records;
          return;
        }
        uscope_event ev;
        std::memcpy(&ev, data, sizeof(ev));
        sink->handler(ev, std::span<const uint8_t>(static_cast<const uint8_t*>(data) + sizeof(ev),
                                                   size - sizeof(ev)));
      });
  if (!ring) return tl::unexpected(ring.error());
  ring_.emplace(std::move(*ring));
  return {};
}

Result<std::vector<RecipeCounters>> TraceProgram::counters() const {
  PerCpuSum counters(obj_.map_fd("counters"));
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
    c.entry_repeated = v[TC_ENTRY_REPEATED];
    c.malformed = v[TC_MALFORMED];
    c.stack_failed = v[TC_STACK_FAILED];
    c.truncated = v[TC_TRUNCATED];
    c.agg_full = v[TC_AGG_FULL];
    c.stack_table_full = v[TC_STACK_TABLE_FULL];
    c.abandoned = v[TC_ABANDONED];
  }
  return out;
}

Result<std::vector<uint64_t>> TraceProgram::histogram(uint32_t recipe) const {
  if (recipe >= hist_slot_.size() || hist_slot_[recipe] < 0)
    return fail("recipe {} has no latency histogram", recipe);
  uint32_t row = static_cast<uint32_t>(hist_slot_[recipe]);
  uscope_histogram h{};
  if (bpf_map_lookup_elem(obj_.map_fd("latency"), &row, &h))
    return fail_errno(errno, "cannot read latency histogram {}: {}", row, std::strerror(errno));
  return std::vector<uint64_t>(std::begin(h.buckets), std::end(h.buckets));
}

Result<std::vector<AggregateRow>> TraceProgram::aggregates() const {
  return read_aggregate_map(obj_.map_fd("aggregates"));
}

Result<void> TraceProgram::set_epoch(uint32_t epoch) {
  const uint32_t zero = 0;
  if (bpf_map_update_elem(obj_.map_fd("agg_epoch"), &zero, &epoch, BPF_ANY))
    return fail_errno(errno, "cannot set the aggregation epoch: {}", std::strerror(errno));
  return {};
}

Result<std::vector<AggregateRow>> TraceProgram::take_aggregates(uint32_t epoch) {
  return take_aggregate_rows(obj_.map_fd("aggregates"), epoch);
}

Result<std::vector<uint64_t>> TraceProgram::user_stack(const AggregateRow& row) const {
  return read_stack_trace(obj_.map_fd("stack_traces"), row);
}

}  // namespace uscope
