#include "model/go_stat.h"

#include <algorithm>

namespace uscope {

void GoRuntimeStats::world_stopped(uint32_t tgid, uint64_t ts_ns) {
  stopped_at_[tgid] = ts_ns;  // a second stop without a start: the later one counts
}

void GoRuntimeStats::world_started(uint32_t tgid, uint64_t ts_ns) {
  auto it = stopped_at_.find(tgid);
  if (it == stopped_at_.end()) {
    ++unmatched_starts_;
    return;
  }
  uint64_t ns = ts_ns > it->second ? ts_ns - it->second : 0;
  stopped_at_.erase(it);
  pauses_.add(ns);
  ++interval_pauses_;
  interval_pause_ns_ += ns;
  interval_pause_max_ns_ = std::max(interval_pause_max_ns_, ns);
}

GoStatInterval GoRuntimeStats::end_interval(const GoRuntimeCounts& total,
                                            std::optional<GoroutineCount> live, double seconds) {
  GoStatInterval i;
  i.seconds = seconds;
  // The kernel's counters only grow; a smaller reading would be a bug, never a negative rate.
  auto delta = [](uint64_t now, uint64_t before) { return now > before ? now - before : 0; };
  i.counts.created = delta(total.created, totals_.created);
  i.counts.exited = delta(total.exited, totals_.exited);
  i.counts.gc_cycles = delta(total.gc_cycles, totals_.gc_cycles);
  totals_.created = std::max(totals_.created, total.created);
  totals_.exited = std::max(totals_.exited, total.exited);
  totals_.gc_cycles = std::max(totals_.gc_cycles, total.gc_cycles);
  i.pauses = interval_pauses_;
  i.pause_ns = interval_pause_ns_;
  i.pause_max_ns = interval_pause_max_ns_;
  interval_pauses_ = interval_pause_ns_ = interval_pause_max_ns_ = 0;
  i.live = live;
  if (live) {
    if (!first_live_) first_live_ = live;
    last_live_ = live;
  }
  seconds_ += seconds;
  return i;
}

}  // namespace uscope
