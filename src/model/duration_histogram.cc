#include "model/duration_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace uscope {

namespace {
// Exact values below 2^kSubBits, then 2^kSubBits buckets per power of two.
constexpr uint32_t kSubBits = 6;
constexpr uint64_t kSub = uint64_t{1} << kSubBits;
}  // namespace

uint32_t DurationHistogram::bucket_of(uint64_t ns) {
  if (ns < kSub) return static_cast<uint32_t>(ns);
  uint32_t e = 63 - static_cast<uint32_t>(std::countl_zero(ns));  // ns in [2^e, 2^(e+1))
  uint64_t sub = (ns >> (e - kSubBits)) & (kSub - 1);
  return static_cast<uint32_t>(kSub + (e - kSubBits) * kSub + sub);
}

uint64_t DurationHistogram::bucket_low(uint32_t b) {
  if (b < kSub) return b;
  uint32_t e = (b - kSub) / kSub + kSubBits;
  uint64_t sub = (b - kSub) % kSub;
  return (uint64_t{1} << e) + (sub << (e - kSubBits));
}

uint64_t DurationHistogram::bucket_high(uint32_t b) {
  if (b < kSub) return b;
  uint32_t e = (b - kSub) / kSub + kSubBits;
  return bucket_low(b) + (uint64_t{1} << (e - kSubBits)) - 1;
}

void DurationHistogram::add(uint64_t ns) {
  ++buckets_[bucket_of(ns)];
  min_ = count_ ? std::min(min_, ns) : ns;
  max_ = std::max(max_, ns);
  sum_ += ns;
  ++count_;
}

void DurationHistogram::merge(const DurationHistogram& other) {
  if (!other.count_) return;
  for (auto [b, n] : other.buckets_) buckets_[b] += n;
  min_ = count_ ? std::min(min_, other.min_) : other.min_;
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
  count_ += other.count_;
}

uint64_t DurationHistogram::quantile(double q) const {
  if (!count_) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * double(count_)));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (auto [b, n] : buckets_) {
    seen += n;
    if (seen < rank) continue;
    uint64_t low = bucket_low(b), high = bucket_high(b);
    return std::clamp(low + (high - low) / 2, min(), max_);
  }
  return max_;
}

std::vector<uint64_t> DurationHistogram::counts_within(const std::vector<double>& bounds) const {
  std::vector<uint64_t> out(bounds.size() + 1, 0);
  for (const auto& [bucket, n] : buckets_) {
    const double mid = (static_cast<double>(bucket_low(bucket)) + bucket_high(bucket)) / 2e9;
    const size_t i =
        static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), mid) - bounds.begin());
    out[i] += n;
  }
  return out;
}

}  // namespace uscope
