// The live table of `uscope top` on hand-built profiles (profile_fixture.h): the shares of the
// samples since the previous table and since the start, sorted by self or total, and drawn over
// the previous table on a terminal, cut to its size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "profile_fixture.h"
#include "sink/top_table.h"

namespace uscope {
namespace {

using test::sample_profile;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;

std::string drawn(TopTable& table, const Profile& p, double interval_s = 1) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  auto r = table.write(p, interval_s, f);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return r ? out : "error: " + r.error().message;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(text.substr(at, nl - at));
  return lines;
}

TopTableOptions plain() {
  TopTableOptions o;
  o.title = "PID 42";
  return o;
}

TEST(top_table, first_table_shows_the_same_shares_for_the_refresh_and_since_the_start) {
  TopTable table(plain());
  auto lines = lines_of(drawn(table, sample_profile()));
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[0], "uscope top PID 42: 12 samples in the last 1.0 s, sorted by self");
  EXPECT_THAT(lines[1], StartsWith("since start: 12 samples from 2 processes in 10.0 s at 49 Hz; "
                                   "lost: 2 user stacks (walk failed)"));
  EXPECT_THAT(lines[4], MatchesRegex(" *SELF% +TOTAL% +SELF% +TOTAL% +FUNCTION +MODULE"));
  EXPECT_THAT(
      lines[5],
      MatchesRegex(" *41.6% +41.6% +41.6% +41.6% +do_syscall_64_\\[k\\] +\\[kernel.kallsyms\\]"));
  EXPECT_THAT(lines[6], MatchesRegex(" *25.0% +66.6% +25.0% +66.6% +inner +app"));
}

TEST(top_table, next_table_shows_what_was_sampled_since_the_previous_one) {
  TopTable table(plain());
  Profile p = sample_profile();
  drawn(table, p);
  p.samples[1].count += 8;  // ...;outer;inner: 8 more, and nothing else
  std::string text = drawn(table, p, 0.5);
  auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[0], "uscope top PID 42: 8 samples in the last 0.5 s, sorted by self");
  EXPECT_THAT(lines[5], MatchesRegex(" *100.0% +100.0% +55.0% +80.0% +inner +app"));
  // Then the callers of the new samples, on all of them; the rest had none.
  EXPECT_THAT(lines[6], MatchesRegex(" *0.0% +100.0% +0.0% +90.0% +_start +app"));
  EXPECT_THAT(text, ContainsRegex("\n +0.0% +0.0% +25.0% +25.0% +do_syscall_64_\\[k\\] "));
  // Nothing new: every share of the refresh is zero, and the rows keep the order since the start.
  lines = lines_of(drawn(table, p));
  EXPECT_THAT(lines[0], HasSubstr(": 0 samples in the last 1.0 s"));
  EXPECT_THAT(lines[5], MatchesRegex(" *0.0% +0.0% +55.0% +80.0% +inner +app"));
}

TEST(top_table, last_table_of_a_session_sorts_by_the_whole_session) {
  TopTable table(plain());
  Profile p = sample_profile();
  drawn(table, p);
  p.samples[1].count += 1;  // one more sample of inner, in a refresh a few milliseconds long
  table.sort_by_session();
  auto lines = lines_of(drawn(table, p, 0.01));
  ASSERT_GE(lines.size(), 7u);
  EXPECT_EQ(lines[0], "uscope top PID 42: 1 sample in the last 0.0 s, sorted by self since start");
  // do_syscall_64 leads since the start (5 of 13); inner (4 of 13) had the refresh's one sample.
  EXPECT_THAT(lines[5], MatchesRegex(" *0.0% +0.0% +38.4% +38.4% +do_syscall_64_\\[k\\] .*"));
  EXPECT_THAT(lines[6], MatchesRegex(" *100.0% +100.0% +30.7% +.* +inner +app"));
}

TEST(top_table, sorts_by_total_when_asked) {
  TopTableOptions o = plain();
  o.sort = TopSort::Total;
  TopTable table(o);
  auto lines = lines_of(drawn(table, sample_profile()));
  ASSERT_GE(lines.size(), 7u);
  EXPECT_THAT(lines[0], HasSubstr("sorted by total"));
  // _start and main are on 10 of 12 stacks; equal, they go by name.
  EXPECT_THAT(lines[5], MatchesRegex(" *0.0% +83.3% +0.0% +83.3% +_start +app"));
  EXPECT_THAT(lines[6], MatchesRegex(" *0.0% +83.3% +0.0% +83.3% +main +app"));
}

TEST(top_table, rows_option_and_the_rest_counted) {
  TopTableOptions o = plain();
  o.rows = 2;
  TopTable table(o);
  auto lines = lines_of(drawn(table, sample_profile()));
  ASSERT_EQ(lines.size(), 9u);  // 5 header lines, 2 rows, the rest, a blank line between tables
  EXPECT_EQ(lines[7], "(7 more functions)");
  EXPECT_EQ(lines[8], "");
}

TEST(top_table, no_samples_says_so) {
  TopTable table(plain());
  EXPECT_THAT(drawn(table, Profile{}), HasSubstr("\nno samples yet\n"));
}

TEST(top_table, terminal_table_is_drawn_over_the_last_and_cut_to_the_screen) {
  TopTableOptions o = plain();
  o.terminal = true;
  o.keys = "q quits";
  TopTable table(o);
  table.resize(30, 9);
  std::string text = drawn(table, sample_profile());
  ASSERT_THAT(text, StartsWith("\x1b[H"));
  EXPECT_EQ(text.substr(text.size() - 3), "\x1b[J");
  auto lines = lines_of(text.substr(3, text.size() - 6));
  // 9 lines: 5 of header, the 2 rows that fit with the rest's line and the cursor's.
  ASSERT_EQ(lines.size(), 8u) << text;
  for (const auto& line : lines) {
    ASSERT_THAT(line, ::testing::EndsWith("\x1b[K"));
    EXPECT_LE(line.size() - 3, 30u) << line;
  }
  EXPECT_THAT(lines[0], StartsWith("uscope top PID 42: 12 sample"));
  EXPECT_THAT(lines[7], StartsWith("(7 more functions)"));
  // Off the screen, plain again, without the keys.
  table.leave_screen();
  std::string after = drawn(table, sample_profile());
  EXPECT_EQ(after.find('\x1b'), std::string::npos) << after;
  EXPECT_THAT(after, Not(HasSubstr("q quits")));
}

}  // namespace
}  // namespace uscope
