#include "sink/unwind_stats_output.h"

#include <fmt/core.h>

#include "sink/profile_writers.h"

namespace uscope {

std::string unwind_stats_text(const UnwindLoadStats& s) {
  auto ms = [](std::chrono::microseconds us) { return static_cast<double>(us.count()) / 1000; };
  return fmt::format(
      "unwind tables: {} objects with CFI, {} by frame pointer, {} failed; {} rows, {:.2f} MiB in "
      "BPF maps, {} rules, {} mapping keys for {} processes; {} built in {:.1f} ms, {} from the "
      "cache in {:.1f} ms",
      s.tables, s.frame_pointer_objects, s.failed, grouped(s.rows),
      static_cast<double>(s.table_bytes) / (1 << 20), s.rules, s.mapping_keys, s.processes,
      s.built, ms(s.build_time), s.from_cache, ms(s.cache_time));
}

void print_unwind_stats(const UnwindLoadStats& stats, std::FILE* out) {
  fmt::print(out, "uscope: {}\n", unwind_stats_text(stats));
  for (const std::string& e : stats.errors) fmt::print(out, "uscope:   no table: {}\n", e);
  std::fflush(out);
}

}  // namespace uscope
