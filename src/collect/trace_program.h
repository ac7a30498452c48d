#pragma once
// The generic tracing program (trace.bpf.c) loaded with one recipe per attach site, attached, and
// read back: ring-buffer events (user stacks travel in them), per-recipe counters, latency
// histograms.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "attach/bpf_loader.h"
#include "attach/unwind_maps.h"
#include "bpf/trace.h"
#include "collect/aggregates.h"
#include "collect/ring_reader.h"
#include "util/result.h"

namespace uscope {

// One recipe's counters (trace.h, enum uscope_counter), summed over CPUs.
struct RecipeCounters {
  uint64_t hits = 0, emitted = 0, lost = 0, filtered = 0, read_errors = 0, no_entry = 0,
           entry_save_failed = 0, matched = 0;
  uint64_t entry_repeated = 0;    // Go: entries run again for a recorded call (TC_ENTRY_REPEATED)
  uint64_t malformed = 0;         // malformed recipe or oversized event: dropped
  uint64_t stack_failed = 0;      // written without its user stack
  uint64_t truncated = 0;         // written with a string cut
  uint64_t agg_full = 0;          // a new key found the aggregates map full: that hit not counted
  uint64_t stack_table_full = 0;  // a ustack key's stack found the stack table full (stack_failed)
  uint64_t abandoned =
      0;  // Go: recorded calls dropped unfinished, their goroutine gone (TC_ABANDONED)
};

// Every counter of `counters` (one per recipe) summed.
RecipeCounters sum_of(std::span<const RecipeCounters> counters);

class TraceProgram {
 public:
  // The BPF side wakes the reader only when the ring is a quarter full (a wake-up per event
  // would cost the target microseconds per hit). The reader must therefore also consume on a
  // timer with this period, or a trickle of events would wait for the next wake-up.
  static constexpr int kPollPeriodMs = 10;

  // `target.tgid` 0 traces every process. Uses uprobe_multi links when `use_multi` and available.
  // `ring_bytes` sizes the event ring buffer (a power of two of at least a page; 0 = default).
  // `unwind`: the unwinder's maps, which recipes that take user stacks (TRACE_F_STACK) walk.
  // `agg_keys` bounds the rows of the aggregates map (TRACE_F_AGGREGATE recipes; 0 = default).
  static Result<TraceProgram> load(std::span<const uscope_recipe> recipes,
                                   const TargetFilter& target, bool use_multi,
                                   uint32_t ring_bytes = 0, uint32_t agg_keys = 0,
                                   const UnwindMaps* unwind = nullptr);
  static constexpr uint32_t kDefaultAggregateKeys = 10240;
  // 4096 stacks of up to TRACE_MAX_FRAMES frames: 4 MiB, preallocated by the kernel.
  static constexpr uint32_t kStackTraceSlots = 4096;
  // Threads whose call depth TRACE_F_DEPTH keeps at once (an LRU: the least recent ages out).
  static constexpr uint32_t kCallDepthThreads = 16384;
  TraceProgram(TraceProgram&&) noexcept;
  TraceProgram& operator=(TraceProgram&&) noexcept;
  ~TraceProgram();

  // Each site's cookie is the index of its recipe. With `skip_refused`, sites the kernel cannot
  // probe are left out (see refused()).
  Result<void> attach(const std::vector<AttachSite>& sites, bool skip_refused = false);
  const std::vector<UprobeLinks::Refused>& refused() const { return refused_; }
  // The loaded programs, for their run time in the kernel's BPF stats (collect/bpf_run_stats.h).
  std::vector<int> program_fds() const { return obj_.program_fds(); }
  std::string load_summary() const { return obj_.load_summary(); }  // for -v
  void detach();
  bool uses_multi() const;
  size_t link_count() const;
  // Whether the probes that read strings or buffers run sleepable (see trace.bpf.c, read_user):
  // such a read then faults in a page the process has not touched yet, on its first call.
  bool sleepable_reads() const { return sleeping_.has_value(); }

  // Events are handed to `on_event` from consume(): the header and the payload after it
  // (data_len bytes of fields, then stack_len bytes of user stack; see EventDecoder).
  using EventHandler =
      std::function<void(const uscope_event& ev, std::span<const uint8_t> payload)>;
  Result<void> open_events(EventHandler on_event);
  int events_epoll_fd() const { return ring_ ? ring_->epoll_fd() : -1; }
  // The event ring's reader (after open_events), for another ring to share its epoll fd.
  RingReader* ring() { return ring_ ? &*ring_ : nullptr; }
  // At most `max_events` events (RingReader::consume); nothing before open_events().
  Result<ConsumeResult> consume(size_t max_events) {
    return ring_ ? ring_->consume(max_events) : Result<ConsumeResult>{};
  }
  // Records too short to hold a header: never written by trace.bpf.c, counted and skipped.
  uint64_t short_records() const { return events_ ? events_->short_records : 0; }

  Result<std::vector<RecipeCounters>> counters() const;
  // The log2 latency histogram (TRACE_HIST_BUCKETS) of a TRACE_F_HISTOGRAM recipe.
  Result<std::vector<uint64_t>> histogram(uint32_t recipe) const;
  // Every row of the aggregates map, cumulative since load.
  Result<std::vector<AggregateRow>> aggregates() const;
  // Rows counted from now on go under `epoch` (uscope_agg_key.epoch; 0 at load).
  Result<void> set_epoch(uint32_t epoch);
  // The rows of `epoch`, deleted as they are read (take_aggregate_rows: set_epoch() to another
  // epoch a while before).
  Result<std::vector<AggregateRow>> take_aggregates(uint32_t epoch);
  // The user stack of a row's `ustack` key, innermost first (read_stack_trace).
  Result<std::vector<uint64_t>> user_stack(const AggregateRow& row) const;

 private:
  // The event handler and its loss counter; on the heap, so that moving the program keeps the
  // pointer the ring reader's handler holds valid.
  struct EventSink {
    EventHandler handler;
    uint64_t short_records = 0;
  };
  TraceProgram(BpfObject obj, size_t recipes, std::vector<int32_t> hist_slot,
               std::vector<bool> sleepable, std::optional<UprobeProgram> plain,
               std::optional<UprobeProgram> sleeping);

  BpfObject obj_;
  size_t n_recipes_ = 0;
  std::vector<int32_t> hist_slot_;  // by recipe: its row of `latency`, -1 without a histogram
  std::vector<bool> sleepable_;     // by recipe: its sites go to the sleepable programs
  // After obj_: detached before the programs are destroyed. `plain_` holds the probes that read
  // no strings (and all of them without sleepable programs), `sleeping_` the others.
  std::optional<UprobeProgram> plain_, sleeping_;
  std::vector<UprobeLinks::Refused> refused_;  // of both
  std::unique_ptr<EventSink> events_;
  std::optional<RingReader> ring_;  // after events_: freed before the handler it calls
};

}  // namespace uscope
