// JavaScript frames in uscope's stacks (issue 22): the installed node (/usr/bin/node: Debian's 18
// with V8 in libnode.so.108, or a static node 20) running a fixture with a known call path,
// profiled from outside with no node flag. The expected functions, script and lines come from
// the fixture's own source (its marker comments) and from node's own perf map
// (--perf-basic-prof), never from uscope. Assertions are on shares.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "e2e_support.h"
#include "folded.h"

namespace uscope::e2e {
namespace {

const char* kNode = "/usr/bin/node";

std::string script() {
  return fixture("node/profile_paths.js");
}

// The line of the fixture holding `marker` ("DEF-LEAF").
int marked_line(const std::string& marker) {
  std::ifstream in(script());
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find("// " + marker) != std::string::npos) return n;
  }
  ADD_FAILURE() << "no marker " << marker << " in " << script();
  return -1;
}

// A frame as profile labels a JavaScript function, up to its kind: "middle (/path/x.js:16)"
// (then "_[j]" when it ran in JIT code).
std::string js_frame(const std::string& function, int line) {
  return function + " (" + script() + ":" + std::to_string(line) + ")";
}
std::string js_frame(const std::string& function, const char* marker) {
  return js_frame(function, marked_line(marker));
}

std::vector<FoldedLine> profile_pid(pid_t pid) {
  auto r =
      uscope({"profile", "-F", "199", "-d", "3", "--format", "folded", "-p", std::to_string(pid)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  EXPECT_GT(total(lines), 0u) << r.err;
  return lines;
}

// The share of samples through outer -> middle -> leaf, each named with its line, in order.
double share_through_path(const std::vector<FoldedLine>& lines, int outer, int middle, int leaf) {
  uint64_t all = 0, through = 0;
  const std::string o = js_frame("outer", outer), m = js_frame("middle", middle),
                    l = js_frame("leaf", leaf);
  for (const auto& line : lines) {
    all += line.count;
    const std::string s = joined(line);
    // Each function's frame, directly above its caller's (a JIT frame carries "_[j]").
    const auto at_o = s.find(o);
    const auto at_m = s.find(m, at_o == std::string::npos ? 0 : at_o);
    const auto at_l = s.find(l, at_m == std::string::npos ? 0 : at_m);
    if (at_o == std::string::npos || at_m == std::string::npos || at_l == std::string::npos)
      continue;
    const auto next = [&](size_t from) { return s.find(';', from) + 1; };
    if (next(at_o) == at_m && next(at_m) == at_l) through += line.count;
  }
  return all == 0 ? 0.0 : static_cast<double>(through) / static_cast<double>(all);
}

TEST(node_profile, nested_functions_hold_most_samples_named_with_their_lines) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({kNode, script(), "nested"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto lines = profile_pid(target.pid());
  EXPECT_GT(share_through_path(lines, marked_line("DEF-OUTER"), marked_line("DEF-MIDDLE"),
                               marked_line("DEF-LEAF")),
            0.8);
  // The script's own top level called outer, and node's module loader called it: the JS frames
  // below are named too.
  EXPECT_GT(share_with(lines, "(node:internal/modules/cjs/loader);(anonymous) (" + script() +
                                  ":1);" + js_frame("outer", "DEF-OUTER") + ";"),
            0.8);
  // leaf's loop runs in JIT code (V8 compiles it on the stack), its callers from bytecode: the
  // two kinds are told apart.
  EXPECT_GT(share_with(lines, js_frame("leaf", "DEF-LEAF") + "_[j];"), 0.5);
  EXPECT_GT(share_with(lines, js_frame("outer", "DEF-OUTER") + ";"), 0.8);
  EXPECT_EQ(share_with(lines, "[unknown: JIT code"), 0.0);
}

// node's own names for the fixture's functions: `name` -> line, from the perf map it writes with
// --perf-basic-prof ("JS:*leaf /path/x.js:10:14", node 18: "LazyCompile:*leaf /path/x.js:10").
std::map<std::string, int> perf_map_lines(pid_t pid) {
  std::map<std::string, int> out;
  std::ifstream in("/tmp/perf-" + std::to_string(pid) + ".map");
  const std::regex entry(
      "^[0-9a-f]+ [0-9a-f]+ [A-Za-z]+:[~^*+]?([A-Za-z_$][\\w$]*) ([^:\\s]+):(\\d+)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry) && m[2] == script()) out[m[1]] = std::stoi(m[3]);
  }
  return out;
}

TEST(node_profile, lines_match_node_perf_map_names) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({kNode, "--perf-basic-prof", script(), "nested"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  // What node writes with the flag: its perf map, and its V8 log in the current directory.
  struct Remove {
    pid_t pid;
    ~Remove() {
      std::remove(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
      const std::string log = "-" + std::to_string(pid) + "-v8.log";
      for (const auto& e : std::filesystem::directory_iterator("."))
        if (const auto name = e.path().filename().string();
            name.starts_with("isolate-") && name.ends_with(log))
          std::filesystem::remove(e.path());
    }
  } written{target.pid()};
  // node writes an entry as it compiles a function; leaf, middle and outer have all run by
  // "ready". The file is written as node goes: read until the three are there.
  std::map<std::string, int> peer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((peer = perf_map_lines(target.pid())).size() < 3 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  ASSERT_TRUE(peer.contains("leaf") && peer.contains("middle") && peer.contains("outer"))
      << peer.size();
  auto lines = profile_pid(target.pid());
  EXPECT_GT(share_through_path(lines, peer["outer"], peer["middle"], peer["leaf"]), 0.8);
}

TEST(node_profile, command_from_its_first_instruction_stays_named_after_exit) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"profile", "-F", "199", "--format", "folded", "-c",
                   std::string(kNode) + " " + script() + " nested 80"},
                  180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = parse_folded(r.out);
  ASSERT_GT(total(lines), 0u) << r.err;
  // Of the samples that run the script (not node's start-up before it), most are in its known
  // path, named after the process exited.
  std::vector<FoldedLine> running;
  for (const auto& l : lines)
    if (joined(l).find(js_frame("outer", "DEF-OUTER")) != std::string::npos) running.push_back(l);
  ASSERT_GT(total(running), total(lines) / 2) << r.out;
  EXPECT_GT(share_through_path(running, marked_line("DEF-OUTER"), marked_line("DEF-MIDDLE"),
                               marked_line("DEF-LEAF")),
            0.8)
      << r.out;
  // Every JavaScript frame of those was read while node lived. (A native frame of a thread that
  // was sampled as node exited may be in a mapping already gone: not this test's matter.)
  EXPECT_EQ(share_with(running, "[unknown: process gone]"), 0.0);
}

TEST(node_profile, trace_stack_shows_the_javascript_that_led_to_a_native_call) {
  USCOPE_REQUIRE_ROOT();
  RunningCommand target({kNode, script(), "writes"});
  ASSERT_TRUE(target.wait_for_output("ready"));
  auto r = uscope({"trace", "-U", "-M", "3", "-p", std::to_string(target.pid()), "p:c:write"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // write <- libuv <- node's fs binding (named in a static node, not in libnode's .dynsym) <-
  // writer (emit and fs.writeSync run inlined into it once V8 optimizes it, else above it) <- the
  // script's top level, in every event.
  const std::string writer = js_frame("writer", "DEF-WRITER") + " [v8]\n";
  const std::string top = "(anonymous) (" + script() + ":1) [v8]\n";
  size_t events = 0;
  std::istringstream blocks(r.out);
  std::string event;
  for (std::string line; std::getline(blocks, line);) {
    event += line + "\n";
    if (!line.empty()) continue;
    const auto binding = event.find(" write+0x"), at = event.find(writer), below = event.find(top);
    if (binding != std::string::npos && at != std::string::npos && below != std::string::npos &&
        binding < at && at < below)
      ++events;
    event.clear();
  }
  EXPECT_EQ(events, 3u) << r.out;
}

}  // namespace
}  // namespace uscope::e2e
