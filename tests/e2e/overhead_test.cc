// The probes' estimated cost printed at exit by count, trace and latency: the summary line, the
// JSON fields, and hits equal to the calls the fixture made. Numbers are estimates: no timing is
// asserted here (bench/overhead.py compares them with the measured slowdown).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// The {"kind":"overhead",...} line count and latency write on stderr with --json.
nlohmann::json overhead_line(const std::string& err) {
  for (const auto& j : json_lines(err))
    if (j.value("kind", "") == "overhead") return j;
  return nullptr;
}

// `measured`: -v was given. Without it the kernel's BPF stats stay off (while on, they time every
// BPF program run on the host) and the BPF time per run is the calibrated table's, which says so.
void expect_complete(const nlohmann::json& o, uint64_t hits, const std::string& context,
                     bool measured = false) {
  ASSERT_TRUE(o.is_object()) << context;
  EXPECT_EQ(o["hits"], hits) << context;
  for (const char* key : {"total_ns", "trap_ns", "return_ns", "bpf_ns", "bpf_ns_per_run",
                          "bpf_measured", "traps", "returns", "target_cpu_ns", "share"})
    EXPECT_TRUE(o.contains(key)) << key << " missing: " << context;
  EXPECT_EQ(o["approximate"], true) << context;
  EXPECT_EQ(o["bpf_measured"], measured) << context;
  if (!measured) {
    EXPECT_NE(o.value("bpf_note", "").find("-v measures it"), std::string::npos) << context;
  }
}

TEST(overhead, count_prints_the_estimate_with_a_hit_per_call) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "-c", fixture("native/target_loop") + " 4321", "work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("uscope: probes cost the target ≈"), std::string::npos) << r.err;
  EXPECT_EQ(summary_count(r.err, " traps"), 4321) << r.err;
  EXPECT_NE(r.err.find("of its"), std::string::npos) << r.err;  // -c: a share of its CPU time

  auto j = uscope({"count", "--json", "-c", fixture("native/target_loop") + " 4321", "work"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto o = overhead_line(j.err);
  expect_complete(o, 4321, j.err);
  EXPECT_EQ(o["traps"], 4321u) << j.err;
  EXPECT_TRUE(o["target_cpu_ns"].is_number()) << j.err;
  // stdout keeps only the table's rows.
  for (const auto& row : json_lines(j.out)) EXPECT_TRUE(row.contains("function")) << j.out;
}

TEST(overhead, count_verbose_shows_each_site) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "-v", "-c", fixture("native/target_loop") + " 321", "work", "main"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("overhead work"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("overhead main"), std::string::npos) << r.err;
  EXPECT_EQ(summary_count(r.err, " hits"), 321) << r.err;
}

TEST(overhead, count_verbose_measures_the_bpf_time) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "-v", "--json", "-c", fixture("native/target_loop") + " 432", "work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // As root the kernel's BPF stats can be turned on: the BPF time is measured, not the table's.
  expect_complete(overhead_line(r.err), 432, r.err, true);
}

TEST(overhead, trace_puts_it_in_the_summary) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"trace", "--json", "-c", fixture("native/target_loop") + " 777", "p::work \"%d\", arg1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json summary;
  for (const auto& j : json_lines(r.out))
    if (j.value("kind", "") == "summary") summary = j;
  ASSERT_TRUE(summary.is_object()) << r.out.substr(r.out.size() > 2000 ? r.out.size() - 2000 : 0);
  expect_complete(summary["overhead"], 777, summary.dump());

  auto t = uscope({"trace", "-c", fixture("native/target_loop") + " 777", "p::work"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("uscope: probes cost the target ≈"), std::string::npos) << t.err;
}

TEST(overhead, latency_counts_entry_and_return_on_one_trap) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"latency", "--json", "-c", fixture("native/target_loop") + " 555", "work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto o = overhead_line(r.err);
  expect_complete(o, 2 * 555, r.err);
  EXPECT_EQ(o["returns"], 555u) << r.err;
  EXPECT_EQ(o["traps"], 555u) << r.err;  // entry and return halves share the entry site
}

TEST(overhead, a_running_process_gets_a_share_of_its_cpu_time) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/target_loop"), "2345"});
  auto tool =
      RunningCommand::uscope({"count", "--json", "-p", std::to_string(target.pid()), "work"});
  ASSERT_TRUE(wait_until("uscope attached",
                         [&] { return !bpf_links_held_by(tool.pid(), "count_hit").empty(); }));
  target.start();
  EXPECT_EQ(target.wait(), 0);
  auto r = tool.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto o = overhead_line(r.err);
  expect_complete(o, 2345, r.err);
}

}  // namespace
}  // namespace uscope::e2e
