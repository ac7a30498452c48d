#include "sink/unwind_stats_output.h"

#include <fmt/core.h>

#include "sink/profile_writers.h"

namespace uscope {

std::string unwind_stats_text(const UnwindLoadStats& s) {
  auto ms = [](std::chrono::microseconds us) { return static_cast<double>(us.count()) / 1000; };
  return fmt::format(
      "unwind tables: {} objects with CFI, {} by frame pointer, {} failed; {} rows, {:.2f} MiB in "
      "BPF maps, {} rules, {} mapping keys for {} process{}; {} built in {:.1f} ms, {} from the "
      "cache in {:.1f} ms",
      s.tables, s.frame_pointer_objects, s.failed, grouped(s.rows),
      static_cast<double>(s.table_bytes) / (1 << 20), s.rules, s.mapping_keys, s.processes,
      s.processes == 1 ? "" : "es", s.built, ms(s.build_time), s.from_cache, ms(s.cache_time));
}

void print_unwind_stats(const UnwindLoadStats& stats,
                        const std::vector<std::pair<std::string, uint64_t>>& walks,
                        std::FILE* out) {
  fmt::print(out, "uscope: {}\n", unwind_stats_text(stats));
  auto count = [&](std::string_view name) -> uint64_t {
    for (const auto& [n, v] : walks)
      if (n == name) return v;
    return 0;
  };
  fmt::print(out,
             "uscope: user frames: {} by CFI, {} by frame pointer (no CFI), {} by frame pointer "
             "while their tables loaded\n",
             grouped(count("frames_cfi")), grouped(count("frames_fp")),
             grouped(count("frames_unloaded")));
  for (const std::string& e : stats.errors) fmt::print(out, "uscope:   no table: {}\n", e);
  std::fflush(out);
}

}  // namespace uscope
