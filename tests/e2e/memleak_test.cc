// memleak on a fixture that leaks N blocks of a known size in one function and frees every other
// block it allocates, through every allocator function followed (tests/fixtures/native/leaker.c):
// the report must hold exactly that function with N x SIZE bytes in N blocks, nothing else, and
// not the blocks allocated before uscope attached. By PID, under -c, and sampled.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "folded.h"
#include "session_support.h"

namespace uscope::e2e {
namespace {

struct Stack {
  double bytes = 0, blocks = 0;
  bool estimated = false;           // "~"
  std::vector<std::string> frames;  // innermost first
};

// "~40,960" -> 40960.
double number(std::string text, bool* estimated = nullptr) {
  if (!text.empty() && text[0] == '~') {
    if (estimated) *estimated = true;
    text.erase(0, 1);
  }
  std::string digits;
  for (char c : text)
    if (c != ',') digits += c;
  return std::stod(digits);
}

// The stacks of the last report on stdout.
std::vector<Stack> last_report(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  size_t start = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (!lines[i].empty() && lines[i][0] == '[') start = i;
  std::vector<Stack> stacks;
  for (size_t i = start + 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("      (", 0) == 0) continue;  // a note under a stack
    if (l.rfind("      ", 0) == 0) {
      if (!stacks.empty()) stacks.back().frames.push_back(l.substr(6, l.find(' ', 6) - 6));
    } else if (l.rfind("  ", 0) == 0 && l.find(" bytes in ") != std::string::npos) {
      std::istringstream words(l);
      std::string bytes, unit, in_word, blocks;
      words >> bytes >> unit >> in_word >> blocks;
      Stack s;
      s.bytes = number(bytes, &s.estimated);
      s.blocks = number(blocks);
      stacks.push_back(s);
    }
  }
  return stacks;
}

// The fixture's own "leaked N SIZE".
std::pair<double, double> leaked(const std::string& out) {
  auto at = out.find("leaked ");
  if (at == std::string::npos) return {-1, -1};
  std::istringstream in(out.substr(at + 7));
  double n = -1, size = -1;
  in >> n >> size;
  return {n, size};
}

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "uscope_memleak_" + std::to_string(getpid()) + "_" + name;
}

void expect_only_the_leak(const std::vector<Stack>& stacks, double n, double size) {
  ASSERT_EQ(stacks.size(), 1u) << "one stack holds every outstanding block";
  EXPECT_EQ(stacks[0].bytes, n * size);
  EXPECT_EQ(stacks[0].blocks, n);
  ASSERT_GE(stacks[0].frames.size(), 2u);
  EXPECT_EQ(stacks[0].frames[0], "leak_here");
  EXPECT_EQ(stacks[0].frames[1], "main");
}

TEST(memleak, reports_exactly_the_leaking_function_by_pid_and_not_older_blocks) {
  USCOPE_REQUIRE_ROOT();
  UscopeChild target({fixture("native/leaker"), "37", "3000", "400", "wait"}, true);
  ASSERT_TRUE(wait_until([&] { return target.out().find("ready") != std::string::npos; }));
  const std::string folded = temp_path("heap.folded");
  UscopeChild leak({"memleak", "-p", std::to_string(target.pid()), "-o", folded});
  ASSERT_TRUE(wait_until([&] { return leak.err().find("Ctrl-C to stop") != std::string::npos; }))
      << leak.err();
  target.signal(SIGUSR1);
  ASSERT_EQ(target.wait(120), 0);
  ASSERT_EQ(leak.wait(60), 0) << leak.err();
  EXPECT_TRUE(links_released("alloc_"));  // every probe detached as the session ended
  auto [n, size] = leaked(target.out());
  ASSERT_EQ(n, 37) << target.out();
  // The fixture's 64 blocks of 2,000 bytes allocated before the attach and never freed, and its
  // 64 of 1,000 freed after it, are in no row.
  expect_only_the_leak(last_report(leak.out()), n, size);
  EXPECT_NE(leak.err().find("lost: 0"), std::string::npos) << leak.err();
  // The same blocks as folded stacks, counted in bytes.
  auto lines = parse_folded(file_text(folded));
  std::remove(folded.c_str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].count, static_cast<uint64_t>(n * size));
  EXPECT_EQ(lines[0].frames.back(), "leak_here");
}

TEST(memleak, reports_exactly_the_leaking_function_of_a_command) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"memleak", "-c", fixture("native/leaker") + " 25 4096 300"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto [n, size] = leaked(r.out);
  ASSERT_EQ(n, 25) << r.out;
  expect_only_the_leak(last_report(r.out), n, size);
}

TEST(memleak, sampled_mode_estimates_the_leak_and_says_so) {
  USCOPE_REQUIRE_ROOT();
  // 1,000 blocks of 4 KiB, one sampled byte per 16 KiB on average: each block is sampled with
  // chance 1 - e^-0.25 (~220 of them), so the estimate's standard deviation is ~6%; 35% is over
  // five of them.
  auto r = uscope(
      {"memleak", "--sample-bytes", "16K", "-c", fixture("native/leaker") + " 1000 4096 2000"},
      120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto [n, size] = leaked(r.out);
  ASSERT_EQ(n, 1000) << r.out;
  auto stacks = last_report(r.out);
  ASSERT_EQ(stacks.size(), 1u) << r.out;
  EXPECT_TRUE(stacks[0].estimated);
  EXPECT_NEAR(stacks[0].bytes, n * size, 0.35 * n * size) << r.out;
  EXPECT_NEAR(stacks[0].blocks, n, 0.35 * n) << r.out;
  EXPECT_EQ(stacks[0].frames.at(0), "leak_here");
  EXPECT_NE(r.err.find("estimated: one block per 16.0 KiB sampled"), std::string::npos) << r.err;
}

// A Go program's heap, as Go samples it (every block: the fixture sets MemProfileRate to 1), its
// garbage freed by the sweeper (runtime.GC before it ends): the leaking function's stack holds
// N x SIZE in N blocks, and none of the churn's blocks are left.
TEST(memleak, follows_a_go_programs_heap_as_go_samples_it) {
  USCOPE_REQUIRE_ROOT();
  UscopeChild target({fixture("go/goleak"), "30", "4096", "3000", "wait"}, true);
  ASSERT_TRUE(wait_until([&] { return target.out().find("ready") != std::string::npos; }));
  UscopeChild leak({"memleak", "-p", std::to_string(target.pid())});
  ASSERT_TRUE(wait_until([&] { return leak.err().find("Ctrl-C to stop") != std::string::npos; }))
      << leak.err();
  target.signal(SIGUSR1);
  ASSERT_EQ(target.wait(120), 0);
  ASSERT_EQ(leak.wait(60), 0) << leak.err();
  EXPECT_TRUE(links_released("alloc_"));
  auto [n, size] = leaked(target.out());
  ASSERT_EQ(n, 30) << target.out();
  double leak_bytes = 0, leak_blocks = 0;
  for (const Stack& s : last_report(leak.out())) {
    bool leaks = false, churns = false;
    for (const auto& f : s.frames) {
      leaks |= f == "main.leakHere";
      churns |= f == "main.churn";
    }
    EXPECT_FALSE(churns) << leak.out();
    if (!leaks) continue;
    leak_bytes += s.bytes;
    leak_blocks += s.blocks;
    EXPECT_FALSE(s.estimated);  // a rate of 1: every block is sampled, none estimated
  }
  EXPECT_EQ(leak_bytes, n * size) << leak.out();
  EXPECT_EQ(leak_blocks, n) << leak.out();
}

TEST(memleak, bad_input_says_what_would_work) {
  USCOPE_REQUIRE_ROOT();
  auto none = uscope({"memleak"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("-p PID or -c CMD"), std::string::npos) << none.err;
  auto all = uscope({"memleak", "-a"});
  EXPECT_NE(all.exit_code, 0);
  // A program without libc has no malloc or free.
  auto bare = uscope({"memleak", "-c", fixture("native/no_allocator")});
  EXPECT_EQ(bare.exit_code, 1) << bare.err;
  EXPECT_NE(bare.err.find("looked for malloc, calloc, realloc"), std::string::npos) << bare.err;
  EXPECT_NE(bare.err.find("in no_allocator"), std::string::npos) << bare.err;
  // A stripped Go program: its sampler's functions are there, its rate's symbol is not.
  auto stripped = uscope({"memleak", "-c", fixture("go/goleak_stripped") + " 1 64 1"});
  EXPECT_EQ(stripped.exit_code, 1) << stripped.err;
  EXPECT_NE(stripped.err.find("goleak_stripped is a stripped Go program"), std::string::npos)
      << stripped.err;
}

}  // namespace
}  // namespace uscope::e2e
