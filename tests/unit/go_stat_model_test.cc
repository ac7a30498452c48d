// uscope stat's model and output: intervals from cumulative kernel counts, stop-the-world pauses
// paired per process, the census's tally of g's, and the summary's losses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "collect/go_goroutines.h"
#include "model/go_stat.h"
#include "sink/go_stat_output.h"

namespace uscope {
namespace {

TEST(go_stat_model, intervals_are_differences_of_the_kernel_counts) {
  GoRuntimeStats s;
  auto a = s.end_interval({10, 4, 1}, GoroutineCount{7, 4}, 1.0);
  EXPECT_EQ(a.counts.created, 10u);
  EXPECT_EQ(a.counts.exited, 4u);
  EXPECT_EQ(a.counts.gc_cycles, 1u);
  auto b = s.end_interval({25, 20, 3}, std::nullopt, 0.5);
  EXPECT_EQ(b.counts.created, 15u);
  EXPECT_EQ(b.counts.exited, 16u);
  EXPECT_EQ(b.counts.gc_cycles, 2u);
  EXPECT_FALSE(b.live.has_value());
  EXPECT_EQ(s.totals().created, 25u);
  EXPECT_DOUBLE_EQ(s.seconds(), 1.5);
  ASSERT_TRUE(s.first_live().has_value());
  EXPECT_EQ(s.first_live()->user, 7u);
}

TEST(go_stat_model, pauses_pair_a_stop_with_the_next_start_of_the_same_process) {
  GoRuntimeStats s;
  s.world_started(1, 50);  // the session began inside a pause
  s.world_stopped(1, 100);
  s.world_stopped(2, 120);
  s.world_started(1, 400);
  s.world_started(2, 220);
  s.world_stopped(1, 1000);  // still open at the end
  auto i = s.end_interval({}, std::nullopt, 1.0);
  EXPECT_EQ(i.pauses, 2u);
  EXPECT_EQ(i.pause_ns, 400u);
  EXPECT_EQ(i.pause_max_ns, 300u);
  EXPECT_EQ(s.unmatched_starts(), 1u);
  EXPECT_EQ(s.open_pauses(), 1u);
  EXPECT_EQ(s.pauses().count(), 2u);
  EXPECT_EQ(s.end_interval({}, std::nullopt, 1.0).pauses, 0u);  // each pause in one interval
}

TEST(go_stat_model, census_counts_live_goroutines_and_sets_the_runtimes_apart) {
  GoroutineLayout l;
  l.system_starts = {0x1000};
  GoroutineCount c;
  const uint64_t bias = 0x10000;
  tally_goroutine(2, 0x2000 + bias, l, bias, c);           // running, user
  tally_goroutine(4 | 0x1000, 0x3000 + bias, l, bias, c);  // waiting, being scanned
  tally_goroutine(4, 0x1000 + bias, l, bias, c);           // the runtime's own
  tally_goroutine(6, 0x2000 + bias, l, bias, c);           // dead
  tally_goroutine(0, 0x2000 + bias, l, bias, c);           // idle
  EXPECT_EQ(c.user, 2u);
  EXPECT_EQ(c.system, 1u);
}

TEST(go_stat_model, output_says_what_is_unknown_and_every_loss) {
  GoRuntimeStats s;
  s.world_stopped(1, 0);
  s.world_started(1, 2'000'000);
  auto i = s.end_interval({100, 90, 2}, std::nullopt, 2.0);
  std::string line = go_stat_text_line(i, "12:00:00");
  EXPECT_NE(line.find("12:00:00"), std::string::npos) << line;
  EXPECT_NE(line.find(" - "), std::string::npos) << line;  // live goroutines unknown
  EXPECT_NE(line.find("50"), std::string::npos) << line;   // 100 created in 2 s
  auto j = nlohmann::json::parse(go_stat_json_line(i, "12:00:00"));
  EXPECT_EQ(j["created"], 100);
  EXPECT_TRUE(j["live"].is_null());
  EXPECT_EQ(j["stw_max_ns"], 2'000'000);

  GoStatLosses l;
  l.ring_lost = 3;
  l.census_failures = 1;
  GoStatSummary about{"./app", "go1.19.8", "the target exited", "no symbol table"};
  std::string text = go_stat_text_summary(s, l, about);
  EXPECT_NE(text.find("3 stop/start events lost"), std::string::npos) << text;
  EXPECT_NE(text.find("1 intervals whose live goroutines"), std::string::npos) << text;
  EXPECT_NE(text.find("live goroutines unknown: no symbol table"), std::string::npos) << text;
  EXPECT_NE(text.find("1 pauses"), std::string::npos) << text;
  auto js = nlohmann::json::parse(go_stat_json_summary(s, l, about));
  EXPECT_EQ(js["losses"]["ring_lost"], 3);
  EXPECT_EQ(js["stw"]["pauses"], 1);
  EXPECT_EQ(js["gc_cycles"], 2);

  GoStatLosses none;
  EXPECT_NE(go_stat_text_summary(s, none, about).find("nothing lost"), std::string::npos);
}

}  // namespace
}  // namespace uscope
