// `uscope profile` sampling real processes: known hot paths hold most samples, processes and
// threads that exit mid-profile stay named, kernel frames carry _[k], --lines shows inlined
// frames, and bad input fails with its reason. Assertions are on shares, never on counts.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "e2e_support.h"
#include "folded.h"

namespace uscope::e2e {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_path(const std::string& name) {
  return testing::TempDir() + "uscope_profile_" + std::to_string(getpid()) + "_" + name;
}

std::string hot_path(const std::string& mode, int ms) {
  return fixture("profile/profile_hot_path") + " " + mode + " " + std::to_string(ms);
}

TEST(profile, hot_path_of_a_command_holds_most_samples) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"profile", "-F", "199", "--format", "folded", "-c", hot_path("user", 1500)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  ASSERT_GT(total(lines), 0u) << r.out;
  EXPECT_GT(share_with(lines, ";main;outer;inner;"), 0.5) << r.out;
  EXPECT_NE(r.err.find("samples"), std::string::npos) << r.err;  // the summary line
  EXPECT_TRUE(links_released("profile_sample"));
}

TEST(profile, process_that_exits_mid_profile_stays_named) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("profile/profile_hot_path"), "user", "1000", "--gate"});
  auto profiler = RunningCommand::uscope(
      {"profile", "-F", "199", "--format", "folded", "-p", std::to_string(target.pid())});
  ASSERT_TRUE(wait_for_links(profiler.pid(), "profile_sample"));
  target.start();
  EXPECT_EQ(target.wait(), 0);
  auto r = profiler.finish();  // ends with the target
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("target exited"), std::string::npos) << r.err;
  auto lines = parse_folded(r.out);
  EXPECT_GT(share_with(lines, ";main;outer;inner;"), 0.5) << r.out;
}

TEST(profile, several_pids_end_when_all_have_exited) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess a({fixture("profile/profile_hot_path"), "user", "300", "--gate"});
  GatedProcess b({fixture("profile/profile_hot_path"), "kernel", "300", "--gate"});
  auto profiler = RunningCommand::uscope({"profile", "-F", "199", "--format", "folded", "-p",
                                          std::to_string(a.pid()) + "," + std::to_string(b.pid())});
  ASSERT_TRUE(wait_for_links(profiler.pid(), "profile_sample"));
  a.start();
  b.start();
  EXPECT_EQ(a.wait(), 0);
  EXPECT_EQ(b.wait(), 0);
  auto r = profiler.finish();  // ends with the last target
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("every target exited"), std::string::npos) << r.err;
  auto lines = parse_folded(r.out);
  EXPECT_GT(share_with(lines, ";main;outer;inner;"), 0.1) << r.out;
  EXPECT_GT(share_with(lines, "_[k];"), 0.1) << r.out;
  EXPECT_GT(share_with(lines, ";main;outer;"), 0.9) << r.out;
}

TEST(profile, forked_child_that_exits_mid_profile_stays_named) {
  USCOPE_REQUIRE_ROOT();
  std::string out = temp_path("all.folded");
  GatedProcess target({fixture("profile/profile_exits_early"), "600", "--gate"});
  auto profiler = RunningCommand::uscope({"profile", "-a", "-F", "199", "-o", out});
  ASSERT_TRUE(wait_for_links(profiler.pid(), "profile_sample"));
  target.start();
  EXPECT_EQ(target.wait(), 0);
  profiler.signal(SIGINT);
  auto r = profiler.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(read_file(out));
  std::vector<FoldedLine> child;
  for (const auto& l : lines)
    if (l.frames[0] == "uscope_child") child.push_back(l);
  ASSERT_FALSE(child.empty()) << read_file(out);
  EXPECT_GT(share_with(child, ";child_work;"), 0.5) << read_file(out);
  std::remove(out.c_str());
}

TEST(profile, threads_split_by_thread_with_their_names) {
  USCOPE_REQUIRE_ROOT();
  std::string cmd = fixture("profile/profile_exits_early") + " 300";
  auto split = uscope({"profile", "-F", "199", "--format", "folded", "--threads", "-c", cmd});
  ASSERT_EQ(split.exit_code, 0) << split.err;
  std::set<std::string> comms;
  for (const auto& l : parse_folded(split.out))
    if (joined(l).find(";thread_work;") != std::string::npos)
      comms.insert(l.frames[0].substr(0, l.frames[0].find('-')));  // "worker_0-PID/TID"
  EXPECT_TRUE(comms.count("worker_0") && comms.count("worker_1")) << split.out;

  auto whole = uscope({"profile", "-F", "199", "--format", "folded", "-c", cmd});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(whole.out.find("worker_"), std::string::npos) << whole.out;
  EXPECT_GT(share_with(parse_folded(whole.out), ";thread_work;"), 0.2) << whole.out;
}

TEST(profile, kernel_frames_carry_their_suffix) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"profile", "-F", "199", "--format", "folded", "-c", hot_path("kernel", 1000)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  EXPECT_GT(share_with(lines, "_[k];"), 0.5) << r.out;
  EXPECT_GT(share_with(lines, "read_[k];"), 0.2) << r.out;  // ksys_read, __x64_sys_read
  EXPECT_GT(share_with(lines, ";main;outer;"), 0.5) << r.out;
}

TEST(profile, user_only_and_kernel_only) {
  USCOPE_REQUIRE_ROOT();
  auto user =
      uscope({"profile", "-U", "-F", "199", "--format", "folded", "-c", hot_path("kernel", 500)});
  ASSERT_EQ(user.exit_code, 0) << user.err;
  EXPECT_EQ(user.out.find("_[k]"), std::string::npos) << user.out;
  EXPECT_GT(share_with(parse_folded(user.out), ";main;outer;"), 0.5) << user.out;

  auto kernel =
      uscope({"profile", "-K", "-F", "199", "--format", "folded", "-c", hot_path("kernel", 500)});
  ASSERT_EQ(kernel.exit_code, 0) << kernel.err;
  EXPECT_EQ(kernel.out.find("outer"), std::string::npos) << kernel.out;
  EXPECT_GT(share_with(parse_folded(kernel.out), "_[k];"), 0.5) << kernel.out;
}

TEST(profile, lines_show_the_inlined_frame) {
  USCOPE_REQUIRE_ROOT();
  std::string cmd = fixture("profile/profile_inlined") + " 1000";
  auto with = uscope({"profile", "--lines", "-F", "199", "--format", "folded", "-c", cmd});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_GT(share_with(parse_folded(with.out), ";outer;mix;"), 0.5) << with.out;

  auto without = uscope({"profile", "-F", "199", "--format", "folded", "-c", cmd});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_EQ(without.out.find(";mix"), std::string::npos) << without.out;
}

TEST(profile, top_sets_the_rows_of_the_table) {
  USCOPE_REQUIRE_ROOT();
  // main, outer, inner and the kernel's read path: more functions than one row shows.
  auto r = uscope({"profile", "--top", "1", "-F", "199", "-c", hot_path("kernel", 300)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto table = r.out.find("SELF%");  // after the fixture's own output
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("more functions; --top N shows more"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin() + static_cast<std::ptrdiff_t>(table), r.out.end(), '\n'), 3)
      << r.out;  // header, 1 row, footer
}

TEST(profile, interval_rewrites_the_output_file) {
  USCOPE_REQUIRE_ROOT();
  std::string out = temp_path("interval.folded");
  auto r = uscope({"profile", "-F", "199", "-i", "0.2", "-o", out, "-c", hot_path("user", 800)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(share_with(parse_folded(read_file(out)), ";main;outer;inner;"), 0.5);
  std::remove(out.c_str());
}

TEST(profile, bad_input_fails_with_its_reason) {
  USCOPE_REQUIRE_ROOT();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::string cmd = hot_path("user", 10);
  std::vector<Case> cases = {
      {{"-p", "2147483646"}, "no process with PID 2147483646"},
      {{"-F", "0", "-c", cmd}, "-F must be at least 1 Hz"},
      {{"-F", "1000000", "-c", cmd}, "kernel.perf_event_max_sample_rate"},
      {{"-o", "/nonexistent/dir/out.folded", "-c", cmd}, "/nonexistent/dir/out.folded"},
      {{"--format", "bogus", "-c", cmd}, "bogus"},
      {{"-d", "1"}, "-p PID, -c CMD or -a"},
      {{"-U", "-K", "-c", cmd}, "give one of them"},
      {{"--top", "0", "-c", cmd}, "--top"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"profile"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto r = uscope(args);
    EXPECT_NE(r.exit_code, 0) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  EXPECT_TRUE(links_released("profile_sample"));
}

}  // namespace
}  // namespace uscope::e2e
