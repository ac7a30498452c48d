#include "sink/histogram_bars.h"

#include <fmt/core.h>

#include <algorithm>
#include <vector>

namespace uscope {

namespace {
constexpr size_t kBccBarWidth = 40;
constexpr size_t kBpftraceBarWidth = 52;
}  // namespace

void print_histogram_bars(std::span<const uint64_t> buckets,
                          const std::function<std::string(size_t b)>& label, BarStyle style,
                          std::FILE* out, const std::string& unit) {
  size_t first = buckets.size(), last = 0;
  uint64_t peak = 0;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (!buckets[b]) continue;
    first = std::min(first, b);
    last = b;
    peak = std::max(peak, buckets[b]);
  }
  if (!peak) return;
  std::vector<std::string> labels;
  size_t label_width = 0;
  for (size_t b = first; b <= last; ++b) {
    labels.push_back(label(b));
    label_width = std::max(label_width, labels.back().size());
  }
  const size_t width = style == BarStyle::Bcc ? kBccBarWidth : kBpftraceBarWidth;
  if (style == BarStyle::Bcc)
    fmt::print(out, "{:>24} : {:<10} {}\n", unit, "count", "distribution");
  for (size_t b = first; b <= last; ++b) {
    std::string bar(static_cast<size_t>(width * buckets[b] / peak),
                    style == BarStyle::Bcc ? '*' : '@');
    const std::string& l = labels[b - first];
    if (style == BarStyle::Bcc)
      fmt::print(out, "{} : {:<10} |{:<{}}|\n", l, buckets[b], bar, width);
    else
      fmt::print(out, "{:<{}} {:>8} |{:<{}}|\n", l, label_width, buckets[b], bar, width);
  }
}

}  // namespace uscope
