// count --by, hist and latency --by attached for real, checked against the keyed_calls fixture's
// own counts of calls and values (tests/fixtures/native/keyed_calls.c): every key, count and
// bucket must match exactly.
#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// What keyed_calls does per phase: worker-k makes kCalls[k-1] calls record(10k + j%2, j - 5),
// which returns 2 * (j - 5).
constexpr long kCalls[3] = {50, 120, 7};
constexpr uint64_t kTotalCalls = 50 + 120 + 7;

std::string fixture_path() {
  return fixture("native/keyed_calls");
}
std::string probe(const std::string& kind) {
  return kind + ":" + fixture_path() + ":record";
}

template <class F>
void each_call(F f) {
  for (long k = 1; k <= 3; ++k)
    for (long j = 0; j < kCalls[k - 1]; ++j)
      f("worker-" + std::to_string(k), 10 * k + j % 2, j - 5);
}

// A JSON bucket's name: its lower bound, or "under" for the open lower end.
std::string bucket_name(const nlohmann::json& b) {
  return b.contains("low") ? std::to_string(b["low"].get<int64_t>()) : "under";
}

// bpftrace's log2 buckets: negative values apart, then 0, 1, [2, 4), [4, 8), ...
std::string log2_bucket(long v) {
  if (v < 0) return "under";
  if (v < 2) return std::to_string(v);
  long lo = 1;
  while (lo * 2 <= v) lo *= 2;
  return std::to_string(lo);
}

std::map<std::string, uint64_t> buckets_of(const nlohmann::json& row) {
  std::map<std::string, uint64_t> out;
  for (const auto& b : row["buckets"]) out[bucket_name(b)] += b["count"].get<uint64_t>();
  return out;
}

std::vector<nlohmann::json> rows_of(const std::string& out, const std::string& kind) {
  std::vector<nlohmann::json> rows;
  for (const auto& j : json_lines(out))
    if (j["kind"] == kind) rows.push_back(j);
  return rows;
}

TEST(aggregate, count_by_comm_and_arg_matches_the_fixture) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "--json", "--by", "comm,arg1", "-c", fixture_path(), probe("p")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::pair<std::string, int64_t>, uint64_t> want, got;
  each_call([&](const std::string& comm, long key, long) { ++want[{comm, key}]; });
  for (const auto& j : rows_of(r.out, "count"))
    got[{j["key"]["comm"], j["key"]["arg1"].get<int64_t>()}] += j["count"].get<uint64_t>();
  EXPECT_EQ(got, want) << r.out;
  auto summary = rows_of(r.out, "keys");
  ASSERT_EQ(summary.size(), 1u) << r.out;
  EXPECT_EQ(summary[0]["keys"], 6);
  EXPECT_EQ(summary[0]["not_counted_map_full"], 0);
  EXPECT_TRUE(links_released("trace_"));
}

TEST(aggregate, count_text_shows_the_top_keys_and_how_many_are_left_out) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "--by", "comm,arg1", "--top", "2", "-c", fixture_path(), probe("p")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("@[comm, arg1]  top 2 of 6 keys by count"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("@[worker-2, 20]:         60"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("@[worker-2, 21]:         60"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("worker-1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(4 more keys; --all)"), std::string::npos) << r.out;
}

TEST(aggregate, a_full_map_counts_what_it_could_not_keep) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "--json", "--by", "comm,arg1", "--max-keys", "2", "-c", fixture_path(),
                   probe("p")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t counted = 0;
  auto rows = rows_of(r.out, "count");
  EXPECT_EQ(rows.size(), 2u) << r.out;
  for (const auto& j : rows) counted += j["count"].get<uint64_t>();
  auto summary = rows_of(r.out, "keys");
  ASSERT_EQ(summary.size(), 1u) << r.out;
  uint64_t lost = summary[0]["not_counted_map_full"];
  EXPECT_GT(lost, 0u);
  EXPECT_EQ(counted + lost, kTotalCalls) << r.out;
}

TEST(aggregate, log2_histogram_per_comm_matches_the_fixture) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"hist", "--json", "--by", "comm", "-c", fixture_path(), probe("p"), "arg2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::map<std::string, uint64_t>> want, got;
  each_call([&](const std::string& comm, long, long v) { ++want[comm][log2_bucket(v)]; });
  for (const auto& j : rows_of(r.out, "hist")) got[j["key"]["comm"]] = buckets_of(j);
  EXPECT_EQ(got, want) << r.out;
}

TEST(aggregate, linear_histogram_of_the_return_value_matches_the_fixture) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"hist", "--json", "--linear", "-20,100,20", "-c", fixture_path(), probe("r"), "retval"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> want;
  each_call([&](const std::string&, long, long v) {
    long ret = 2 * v;
    std::string b = ret < -20    ? "under"
                    : ret >= 100 ? "100"
                                 : std::to_string(-20 + 20 * ((ret + 20) / 20));
    ++want[b];
  });
  auto rows = rows_of(r.out, "hist");
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(buckets_of(rows[0]), want) << r.out;
  EXPECT_EQ(rows[0]["count"], kTotalCalls);
}

TEST(aggregate, latency_by_entry_argument_times_every_call) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"latency", "--json", "--by", "arg1", "-c", fixture_path(), fixture_path() + ":record"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int64_t, uint64_t> want, got;
  each_call([&](const std::string&, long key, long) { ++want[key]; });
  for (const auto& j : rows_of(r.out, "latency")) {
    uint64_t in_buckets = 0;
    for (const auto& b : j["buckets"]) in_buckets += b["count"].get<uint64_t>();
    EXPECT_EQ(in_buckets, j["count"].get<uint64_t>());
    EXPECT_EQ(j["unit"], "ns");
    got[j["key"]["arg1"].get<int64_t>()] += j["count"].get<uint64_t>();
  }
  EXPECT_EQ(got, want) << r.out;
  EXPECT_TRUE(links_released("trace_"));
}

// Two phases of calls, the second released only once an interval has shown the first: at least
// two intervals hold rows, and the intervals' deltas add up to the fixture's calls.
TEST(aggregate, intervals_show_deltas_that_sum_to_the_total) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture_path(), "2"});
  auto tracer = RunningCommand::uscope({"count", "--json", "-i", "0.1", "--by", "comm", "-p",
                                        std::to_string(target.pid()), probe("p")});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  target.start();
  ASSERT_TRUE(target.wait_for_line("phase 1 done"));
  ASSERT_TRUE(tracer.wait_for_output("\"kind\":\"count\""));
  target.start();
  ASSERT_TRUE(target.wait_for_line("phase 2 done"));
  EXPECT_EQ(target.wait(), 0);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> want, got;
  each_call([&](const std::string& comm, long, long) { want[comm] += 2; });
  std::set<uint64_t> intervals_with_rows;
  for (const auto& j : rows_of(r.out, "count")) {
    got[j["key"]["comm"]] += j["count"].get<uint64_t>();
    intervals_with_rows.insert(j["interval"].get<uint64_t>());
  }
  EXPECT_EQ(got, want) << r.out;
  EXPECT_GE(intervals_with_rows.size(), 2u) << r.out;
}

// The stacks are symbolized while the process lives: uscope is stopped between the phases.
TEST(aggregate, count_by_user_stack_names_the_callers) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture_path(), "2"});
  auto tracer = RunningCommand::uscope(
      {"count", "--json", "--by", "ustack,comm", "-p", std::to_string(target.pid()), probe("p")});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  target.start();
  ASSERT_TRUE(target.wait_for_line("phase 1 done"));
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  target.start();
  EXPECT_EQ(target.wait(), 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t total = 0;
  for (const auto& j : rows_of(r.out, "count")) {
    total += j["count"].get<uint64_t>();
    ASSERT_TRUE(j["key"]["ustack"].is_array()) << j.dump();
    std::string frames = j["key"]["ustack"].dump();
    EXPECT_NE(frames.find("record"), std::string::npos) << frames;
    EXPECT_NE(frames.find("worker"), std::string::npos) << frames;
  }
  EXPECT_EQ(total, kTotalCalls) << r.out;
  auto summary = rows_of(r.out, "keys");
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0]["stack_failed"], 0);
}

TEST(aggregate, bad_keys_and_scales_are_usage_errors) {
  auto r = uscope({"count", "--by", "comm,arg10", probe("p")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'arg10'"), std::string::npos) << r.err;
  r = uscope({"hist", "--linear", "0,10", probe("p"), "arg1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("MIN,MAX,STEP"), std::string::npos) << r.err;
  r = uscope({"hist", probe("p"), "retval"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("retval"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uscope::e2e
