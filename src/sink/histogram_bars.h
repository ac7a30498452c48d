#pragma once
// The one renderer of a histogram as text bars: the buckets from the first to the last that is
// not zero, each a row with its label, its count and a bar scaled to the peak bucket. Two looks,
// as their users know them: bcc's funclatency (latency) and bpftrace's hist()/lhist() (hist,
// count --by ... and latency --by).
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>

namespace uscope {

enum class BarStyle {
  // "   nsecs : count      distribution" over "LABEL : COUNT      |*****     |", 40 wide
  Bcc,
  // "LABEL COUNT |@@@@@     |", 52 wide, the labels padded to the longest
  Bpftrace,
};

// Prints nothing when every bucket is zero. `label(b)`: bucket b's label (Bcc: its "lo -> hi"
// columns); `unit`: Bcc's header over the labels ("nsecs").
void print_histogram_bars(std::span<const uint64_t> buckets,
                          const std::function<std::string(size_t b)>& label, BarStyle style,
                          std::FILE* out, const std::string& unit = "");

}  // namespace uscope
