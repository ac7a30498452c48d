#pragma once
// A distribution of durations kept in bounded memory (HTTP request times, GC pauses).
#include <cstdint>
#include <map>
#include <vector>

namespace uscope {

// Durations in a log-linear histogram: exact below 64 ns, then 64 buckets per power of two, so a
// percentile is within 1/64 (1.6%) of the true value and memory stays bounded (at most ~3,700
// buckets per route, held sparsely) whatever the request rate. Min and max are exact.
class DurationHistogram {
 public:
  void add(uint64_t ns);
  // Adds every duration of `other` (two routes found to be one).
  void merge(const DurationHistogram& other);
  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  uint64_t sum() const { return sum_; }
  // The q-quantile (0 < q <= 1) by the nearest-rank method: the bucket's midpoint, clamped to
  // [min, max]; 0 when empty.
  uint64_t quantile(double q) const;

  // Counts over explicit bounds in seconds (an OpenTelemetry histogram): element i counts the
  // durations in (bounds[i-1], bounds[i]], the last one those above every bound. A log-linear
  // bucket goes where its midpoint goes, so a duration within 1.6% of a bound may be counted on
  // the bound's other side.
  std::vector<uint64_t> counts_within(const std::vector<double>& bounds) const;

  static uint32_t bucket_of(uint64_t ns);
  static uint64_t bucket_low(uint32_t bucket);   // smallest value in the bucket
  static uint64_t bucket_high(uint32_t bucket);  // largest value in the bucket

 private:
  std::map<uint32_t, uint64_t> buckets_;
  uint64_t count_ = 0, min_ = 0, max_ = 0, sum_ = 0;
};

}  // namespace uscope
