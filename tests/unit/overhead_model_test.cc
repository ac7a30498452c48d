// The overhead model (collect/overhead.h), its /proc input and its printing: no BPF, no root.
#include "model/overhead.h"

#include <gtest/gtest.h>

#include "discover/process.h"
#include "sink/overhead_output.h"

using namespace uscope;

namespace {

OverheadSite site(std::string label, uint64_t offset, SiteCost cost, uint64_t hits,
                  bool retprobe = false) {
  return {label, "/bin/app", "/bin/app", offset, retprobe, cost, hits};
}

}  // namespace

TEST(overhead, charges_each_hit_its_class_trap_and_the_measured_bpf_time) {
  OverheadInput in;
  in.sites = {site("fast", 0x10, SiteCost::Emulated, 1000),
              site("slow", 0x20, SiteCost::SingleStepped, 10)};
  in.bpf = BpfRunTime{50'000, 1010};  // ~49.5 ns per run
  in.target_cpu_ns = 10'000'000;
  Overhead o = estimate_overhead(in);
  const HitCosts& c = measured_hit_costs();
  double trap = 1000 * c.emulated_trap_ns + 10 * c.single_stepped_trap_ns;
  EXPECT_DOUBLE_EQ(o.trap_ns, trap);
  EXPECT_DOUBLE_EQ(o.bpf_ns, 50'000);
  EXPECT_DOUBLE_EQ(o.total_ns, trap + 50'000);
  EXPECT_EQ(o.hits, 1010u);
  EXPECT_EQ(o.traps, 1010u);
  EXPECT_EQ(o.single_stepped_traps, 10u);
  EXPECT_TRUE(o.bpf_measured);
  ASSERT_TRUE(o.share.has_value());
  EXPECT_DOUBLE_EQ(*o.share, o.total_ns / 10'000'000);
  ASSERT_EQ(o.sites.size(), 2u);
  EXPECT_DOUBLE_EQ(o.sites[1].ns, 10 * c.single_stepped_trap_ns + 10 * 50'000.0 / 1010);
}

TEST(overhead, entry_and_return_on_one_address_share_one_trap) {
  OverheadInput in;
  in.sites = {site("f", 0x10, SiteCost::Emulated, 100),
              site("f", 0x10, SiteCost::Emulated, 99, true)};
  in.bpf = BpfRunTime{0, 0};
  Overhead o = estimate_overhead(in);
  const HitCosts& c = measured_hit_costs();
  EXPECT_EQ(o.traps, 100u);
  EXPECT_EQ(o.returns, 99u);
  EXPECT_DOUBLE_EQ(o.trap_ns, 100 * c.emulated_trap_ns);
  EXPECT_DOUBLE_EQ(o.return_ns, 99 * c.return_ns);
  EXPECT_EQ(o.sites[0].traps, 100u);
  EXPECT_EQ(o.sites[1].traps, 0u);
}

TEST(overhead, uses_the_table_bpf_cost_when_stats_are_off_and_says_why) {
  OverheadInput in;
  in.sites = {site("f", 0x10, SiteCost::Emulated, 10)};
  in.table_bpf_ns_per_run = 123;
  in.bpf_note = "cannot turn on BPF run-time stats: Operation not permitted";
  in.cpu_note = "system-wide: no one target's CPU time to compare with";
  in.system_wide = true;
  Overhead o = estimate_overhead(in);
  EXPECT_FALSE(o.bpf_measured);
  EXPECT_DOUBLE_EQ(o.bpf_ns, 1230);
  EXPECT_FALSE(o.share.has_value());
  std::string line = overhead_summary(o);
  EXPECT_NE(line.find("probes cost the traced processes ≈"), std::string::npos) << line;
  EXPECT_NE(line.find("no share: system-wide"), std::string::npos) << line;
  EXPECT_NE(line.find("from the table: cannot turn on"), std::string::npos) << line;
  EXPECT_TRUE(overhead_json(o)["share"].is_null());
}

TEST(overhead_output, never_prints_more_than_two_significant_digits) {
  EXPECT_EQ(approx_duration(0), "≈ 0");
  EXPECT_EQ(approx_duration(412.7), "≈ 410 ns");
  EXPECT_EQ(approx_duration(41'234'567), "≈ 41 ms");
  EXPECT_EQ(approx_duration(1'234'567'890), "≈ 1.2 s");
  EXPECT_EQ(approx_duration(15'400), "≈ 15 µs");
  EXPECT_EQ(approx_duration(9'990), "≈ 10 µs");
  EXPECT_EQ(approx_share(0.3849), "≈ 38%");
  EXPECT_EQ(approx_share(0.004123), "≈ 0.41%");
  EXPECT_EQ(approx_share(0.00000001), "< 0.01%");
}

TEST(overhead_output, summary_and_json_name_every_part) {
  OverheadInput in;
  in.sites = {site("work", 0x10, SiteCost::Emulated, 12345)};
  in.bpf = BpfRunTime{617'250, 12345};
  in.target_cpu_ns = 20'000'000;
  Overhead o = estimate_overhead(in);
  std::string line = overhead_summary(o);
  EXPECT_NE(line.find("probes cost the target ≈"), std::string::npos) << line;
  EXPECT_NE(line.find("of its 20 ms CPU time"), std::string::npos) << line;
  EXPECT_EQ(line.find("of its ≈ ≈"), std::string::npos) << line;
  EXPECT_NE(line.find("12345 traps"), std::string::npos) << line;
  EXPECT_NE(line.find("50 ns per run, measured"), std::string::npos) << line;
  auto j = overhead_json(o);
  EXPECT_EQ(j["hits"], 12345u);
  EXPECT_EQ(j["traps"], 12345u);
  EXPECT_EQ(j["target_cpu_ns"], 20'000'000u);
  EXPECT_TRUE(j["share"].is_number());
  EXPECT_EQ(j["approximate"], true);
}

TEST(proc_stat, reads_utime_and_stime_after_a_command_name_with_spaces_and_parens) {
  // Fields 14 (utime) and 15 (stime) in clock ticks; comm "a) b (c" as the kernel shows it.
  std::string stat =
      "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 12345 1000 "
      "100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto t = parse_proc_stat_cpu_time(stat, 100);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->user_ns, 2'500'000'000u);
  EXPECT_EQ(t->system_ns, 750'000'000u);
  EXPECT_EQ(t->total_ns(), 3'250'000'000u);
}

TEST(proc_stat, rejects_truncated_and_non_numeric_text) {
  EXPECT_FALSE(parse_proc_stat_cpu_time("4242 (app) S 1 2 3", 100));
  EXPECT_FALSE(parse_proc_stat_cpu_time("no parenthesis at all", 100));
  auto bad = parse_proc_stat_cpu_time("1 (x) S 1 1 1 0 -1 0 0 0 0 0 12x 3 0 0", 100);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("utime"), std::string::npos) << bad.error().message;
}

TEST(proc_stat, reads_this_process) {
  auto t = process_cpu_time(getpid());
  ASSERT_TRUE(t) << t.error().message;
}
