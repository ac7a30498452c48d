#include "sink/aggregate_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "sink/histogram_bars.h"

namespace uscope {

void print_counts(std::vector<CountRow> rows, OutputFormat format, std::FILE* out) {
  std::erase_if(rows, [](const CountRow& r) { return r.count == 0; });
  std::stable_sort(rows.begin(), rows.end(),
                   [](const CountRow& a, const CountRow& b) { return a.count < b.count; });
  if (format == OutputFormat::Json) {
    for (const auto& r : rows)
      fmt::print(
          out, "{}\n",
          nlohmann::json{
              {"kind", "count"}, {"function", r.function}, {"object", r.object}, {"count", r.count}}
              .dump());
    std::fflush(out);
    return;
  }
  size_t w = 4;
  for (const auto& r : rows) w = std::max(w, r.function.size());
  w = std::min<size_t>(w, 60);
  fmt::print(out, "{:<{}} {:>12}  {}\n", "FUNC", w, "COUNT", "OBJECT");
  for (const auto& r : rows)
    fmt::print(out, "{:<{}} {:>12}  {}\n", r.function, w, r.count, r.object);
  std::fflush(out);
}

uint64_t histogram_percentile(std::span<const uint64_t> buckets, double p) {
  uint64_t total = 0;
  for (uint64_t b : buckets) total += b;
  if (total == 0) return 0;
  // Nearest rank: the smallest bucket holding at least ceil(p * total) of the samples.
  auto want =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p * static_cast<double>(total))));
  uint64_t seen = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    seen += buckets[b];
    if (seen >= want) return b >= 63 ? UINT64_MAX : (2ull << b) - 1;
  }
  return 0;
}

void print_latency(const LatencyRow& row, OutputFormat format, std::FILE* out) {
  const uint64_t not_calls = row.entries_repeated + row.entries_not_recorded;
  uint64_t unmatched =
      row.entries > row.matched + not_calls ? row.entries - row.matched - not_calls : 0;
  if (format == OutputFormat::Json) {
    nlohmann::json buckets = nlohmann::json::array();
    for (size_t b = 0; b < row.buckets.size(); ++b)
      if (row.buckets[b])
        buckets.push_back({{"low_ns", b == 0 ? 0 : 1ull << b},
                           {"high_ns", (2ull << b) - 1},
                           {"count", row.buckets[b]}});
    fmt::print(out, "{}\n",
               nlohmann::json{{"kind", "latency"},
                              {"function", row.function},
                              {"object", row.object},
                              {"calls", row.matched},
                              {"entries", row.entries},
                              {"entries_without_return", unmatched},
                              {"returns_without_entry", row.returns_without_entry},
                              {"entries_repeated", row.entries_repeated},
                              {"entries_not_recorded", row.entries_not_recorded},
                              {"p50_ns_upper", histogram_percentile(row.buckets, 0.5)},
                              {"p99_ns_upper", histogram_percentile(row.buckets, 0.99)},
                              {"buckets", buckets}}
                   .dump());
    std::fflush(out);
    return;
  }
  fmt::print(out, "\n{} ({}): {} calls", row.function, row.object, row.matched);
  if (row.matched)
    fmt::print(out, ", p50 < {} ns, p99 < {} ns", histogram_percentile(row.buckets, 0.5) + 1,
               histogram_percentile(row.buckets, 0.99) + 1);
  fmt::print(out, "\n");
  print_histogram_bars(
      row.buckets,
      [](size_t b) {
        uint64_t lo = b == 0 ? 0 : 1ull << b, hi = (2ull << b) - 1;
        return fmt::format("{:>10} -> {:<10}", lo, hi);
      },
      BarStyle::Bcc, out, "nsecs");
  if (unmatched)
    fmt::print(out,
               "  {} entries without a return: still running at exit, the thread exited, or "
               "recursion deeper than the kernel's 64 return probes\n",
               unmatched);
  if (row.returns_without_entry)
    fmt::print(out,
               "  {} returns without a recorded entry (called before the probes were attached, "
               "or the entry table was full)\n",
               row.returns_without_entry);
  if (row.entries_repeated)
    fmt::print(out,
               "  {} entry hits were not calls: Go re-ran the function's first instruction after "
               "growing the goroutine's stack\n",
               row.entries_repeated);
  if (row.entries_not_recorded)
    fmt::print(out, "  {} entries not recorded (the goroutine's stack bounds were unreadable)\n",
               row.entries_not_recorded);
  std::fflush(out);
}

}  // namespace uscope
