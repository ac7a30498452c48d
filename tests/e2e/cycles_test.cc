// Sessions started and interrupted over and over, at random points (while loading, attaching or
// running): every one ends, and together they leave no BPF program, map or link behind and no fd
// in the target or in the process that started them. The delays are random (seed printed; set
// USCOPE_CYCLES_SEED to replay), not a timing assertion.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "session_support.h"

namespace uscope::e2e {
namespace {

// The BPF object ids some process holds an fd to, by kind ("prog_id", "map_id", "link_id"), from
// /proc/*/fdinfo (Debian's bpftool cannot list the pids holding an object).
std::map<std::string, std::set<int>> held_bpf_ids() {
  std::map<std::string, std::set<int>> held;
  std::istringstream in(
      shell("grep -h -E '^(prog_id|map_id|link_id):' /proc/[0-9]*/fdinfo/* 2>/dev/null"));
  std::string kind;
  int id;
  while (in >> kind >> id) held[kind.substr(0, kind.size() - 1)].insert(id);
  return held;
}

// uscope's BPF programs, maps and links that nothing holds any more: leaked. A program is held
// through its own fd or a link's; a map through its fd or a held program.
int orphaned_uscope_objects() {
  static const std::set<std::string> map_names = {"recipes", "counters", "events",    "entries",
                                                  "stacks",  "latency",  "scratches", "hits"};
  auto held = held_bpf_ids();
  int n = 0;
  std::set<int> progs;
  auto p = nlohmann::json::parse(shell("bpftool -j prog list"), nullptr, false);
  for (const auto& o : p.is_array() ? p : nlohmann::json::array()) {
    int id = o.value("id", -1);
    if (held["prog_id"].count(id) && o.contains("map_ids"))
      for (int m : o["map_ids"]) held["map_id"].insert(m);
    std::string name = o.value("name", "");
    if (!name.starts_with("trace_") && !name.starts_with("count_hit")) continue;
    progs.insert(id);
    n += !held["prog_id"].count(id);
  }
  auto m = nlohmann::json::parse(shell("bpftool -j map list"), nullptr, false);
  for (const auto& o : m.is_array() ? m : nlohmann::json::array()) {
    std::string name = o.value("name", "");
    if (map_names.count(name) || name.ends_with(".rodata"))
      n += !held["map_id"].count(o.value("id", -1));
  }
  auto l = nlohmann::json::parse(shell("bpftool -j link list"), nullptr, false);
  for (const auto& o : l.is_array() ? l : nlohmann::json::array())
    if (progs.count(o.value("prog_id", -2))) n += !held["link_id"].count(o.value("id", -1));
  return n;
}

TEST(cycles, interrupted_sessions_leave_nothing_behind) {
  USCOPE_REQUIRE_ROOT();
  const char* seed_env = std::getenv("USCOPE_CYCLES_SEED");
  unsigned seed = seed_env ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10))
                           : std::random_device{}();
  std::printf("USCOPE_CYCLES_SEED=%u\n", seed);
  RecordProperty("seed", std::to_string(seed));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(0, 150);

  // Probes on the fixture's own function: other sessions on this machine probe libc, and a site
  // another session has a uprobe on reads as int3 in uscope's mapping of the file.
  const std::string exe = fixture("native/exec_after");
  const std::string forever = exe + " 100000000";
  GatedProcess target({exe, "100000000"});
  ASSERT_TRUE(wait_until([&] {
    return shell("cat /proc/" + std::to_string(target.pid()) + "/maps").find("libc") !=
           std::string::npos;
  }));
  const int target_fds = fd_count(target.pid());
  const int own_fds = fd_count(getpid());
  const int orphans_before = orphaned_uscope_objects();
  const std::string pid = std::to_string(target.pid());
  const std::vector<std::vector<std::string>> sessions = {
      {"trace", "-p", pid, "p:" + exe + ":work \"%d\", arg1"},
      {"count", "-p", pid, exe + ":work", "c:usleep"},
      {"trace", "--no-multi", "-p", pid, "p:" + exe + ":work"},  // perf-event links
      {"latency", "-p", pid, exe + ":work"},
      {"trace", "-c", forever, "p::work"},
      {"count", "-c", forever, "work"},
      {"latency", "-c", forever, "work"},
  };
  int detached = 0;  // sessions that ended through their loop (the others before it existed)
  for (int i = 0; i < 100; ++i) {
    const auto& args = sessions[rng() % sessions.size()];
    int sig = rng() % 2 ? SIGINT : SIGTERM;
    int delay = delay_ms(rng);
    SCOPED_TRACE(testing::Message()
                 << "cycle " << i << " (seed " << seed << "): uscope " << args[0] << " " << args[1]
                 << ", signal " << sig << " after " << delay << " ms");
    {
      UscopeChild s(args);
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      s.signal(sig);
      int rc = s.wait();
      // Before uscope routes stop signals to its loop (nothing is loaded then) the signal's
      // default action ends it; after, the session detaches and exits 0.
      EXPECT_TRUE(rc == 0 || rc == 128 + sig) << "exit " << rc << ": " << s.err();
      detached += rc == 0;
    }
    ASSERT_EQ(fd_count(target.pid()), target_fds);
    ASSERT_EQ(fd_count(getpid()), own_fds);
  }
  std::printf("%d of 100 sessions ended through their loop\n", detached);
  EXPECT_TRUE(wait_until([&] { return orphaned_uscope_objects() <= orphans_before; }))
      << orphaned_uscope_objects() << " BPF objects left, " << orphans_before << " before";
  EXPECT_TRUE(links_released("trace_"));
  EXPECT_TRUE(links_released("count_hit"));
}

}  // namespace
}  // namespace uscope::e2e
