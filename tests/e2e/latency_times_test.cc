// The times `uscope latency` reports, checked against the traced program's own clock: a fixture
// function sleeps until its clock says a known time has passed and prints what it measured
// around each call (timed_calls.c, gotimed.go). Every duration uscope measures lies between the
// call's own reading and its caller's, so each call's bucket, and each percentile, is bounded
// by the fixture's numbers whatever the load: no timing assumption, and a wrong unit or a value
// put one bucket off fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// What one call took by the fixture's clock: `inner` inside the call, `outer` around it.
struct Took {
  uint64_t inner = 0;
  uint64_t outer = 0;
};

std::vector<Took> fixture_times(const std::string& out) {
  std::vector<Took> calls;
  for (const auto& line : lines_with(out, "took ")) {
    std::istringstream in(line.substr(line.find("took ") + 5));
    Took t;
    if (in >> t.inner >> t.outer) calls.push_back(t);
  }
  return calls;
}

// uscope's power-of-two bucket: b holds [2^b, 2^(b+1)), b = 0 also 0.
int bucket_of(uint64_t ns) {
  return ns < 2 ? 0 : 63 - __builtin_clzll(ns);
}

nlohmann::json latency_row(const std::string& out) {
  for (const auto& j : json_lines(out))
    if (j["kind"] == "latency") return j;
  return nullptr;
}

// Mid-bucket times (1.5 * 2^k ns), so that a call usually lands well inside its bucket:
// 5 x 1.6 ms (bucket 20), 3 x 12.6 ms (bucket 23), 2 x 50 ms (bucket 25).
std::string known_times() {
  std::string args;
  for (int i = 0; i < 5; ++i) args += " " + std::to_string(3ull << 19);
  for (int i = 0; i < 3; ++i) args += " " + std::to_string(3ull << 22);
  for (int i = 0; i < 2; ++i) args += " " + std::to_string(3ull << 24);
  return args;
}

// Each call's bucket is between those of its inner and outer times: for every bucket t, the
// calls uscope put at t or above are at least those whose inner time is, and at most those whose
// outer time is. Likewise the nearest-rank percentiles.
void expect_times_match(const nlohmann::json& row, const std::vector<Took>& calls) {
  ASSERT_FALSE(row.is_null());
  ASSERT_EQ(calls.size(), 10u) << "the fixture's own times";
  EXPECT_EQ(row["calls"], calls.size()) << row.dump();
  std::vector<uint64_t> got(64, 0);
  uint64_t total = 0;
  for (const auto& b : row["buckets"]) {
    const uint64_t low = b["low_ns"], high = b["high_ns"];
    const int at = bucket_of(low);
    EXPECT_EQ(high, (2ull << at) - 1) << b.dump();
    got[at] += b["count"].get<uint64_t>();
    total += b["count"].get<uint64_t>();
  }
  EXPECT_EQ(total, calls.size()) << row.dump();
  std::vector<int> low, high;
  for (const auto& c : calls) {
    ASSERT_LE(c.inner, c.outer);
    low.push_back(bucket_of(c.inner));
    high.push_back(bucket_of(c.outer));
  }
  for (int t = 0; t < 64; ++t) {
    uint64_t at_or_above = 0;
    for (int b = t; b < 64; ++b) at_or_above += got[b];
    const auto count_from = [t](const std::vector<int>& v) {
      return static_cast<uint64_t>(
          std::count_if(v.begin(), v.end(), [t](int b) { return b >= t; }));
    };
    EXPECT_GE(at_or_above, count_from(low)) << "bucket " << t << ": " << row.dump();
    EXPECT_LE(at_or_above, count_from(high)) << "bucket " << t << ": " << row.dump();
  }
  std::sort(low.begin(), low.end());
  std::sort(high.begin(), high.end());
  for (auto [p, key] : {std::pair{0.5, "p50_ns_upper"}, std::pair{0.99, "p99_ns_upper"}}) {
    const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(calls.size())));
    const uint64_t upper = row[key];
    EXPECT_GE(upper, (2ull << low[rank - 1]) - 1) << key << ": " << row.dump();
    EXPECT_LE(upper, (2ull << high[rank - 1]) - 1) << key << ": " << row.dump();
  }
}

TEST(latency_times, c_function_lands_in_the_bucket_of_the_time_it_took) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("native/timed_calls");
  auto r = uscope({"latency", "--json", "-c", exe + known_times(), exe + ":take_ns"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto row = latency_row(r.out);
  expect_times_match(row, fixture_times(r.out));
  EXPECT_EQ(row["entries_without_return"], 0) << row.dump();
  EXPECT_TRUE(links_released("trace_"));
}

TEST(latency_times, go_function_lands_in_the_bucket_of_the_time_it_took) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = fixture("go/gotimed");
  auto r = uscope({"latency", "--json", "-c", exe + known_times(), exe + ":main.takeNs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto row = latency_row(r.out);
  expect_times_match(row, fixture_times(r.out));
  EXPECT_EQ(row["entries_without_return"], 0) << row.dump();
  EXPECT_EQ(row["entries_not_recorded"], 0) << row.dump();
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
