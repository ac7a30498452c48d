// Every loss has its own counter and nothing fails silently: user stacks keep coming however
// many distinct ones there are, a cut string is marked and counted, an oversized event is
// malformed (not "ring buffer full"), and a trace session sizes its maps by what it uses.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

struct TraceJson {
  std::vector<nlohmann::json> events;
  nlohmann::json summary;
};

TraceJson parse_trace(const std::string& out) {
  TraceJson t;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("{")) continue;
    auto j = nlohmann::json::parse(line);
    if (j["kind"] == "event") t.events.push_back(j);
    if (j["kind"] == "summary") t.summary = j;
  }
  return t;
}

TEST(losses, user_stacks_keep_coming_past_what_a_stack_map_held) {
  USCOPE_REQUIRE_ROOT();
  // 20000 calls with distinct stacks: the old stack map held 16384 ids, then failed silently.
  // The ring holds every event, so none is lost however slowly they are symbolized.
  constexpr int kCalls = 20000;
  auto r = uscope({"trace", "--json", "-U", "--buffer-kb", "32768", "-c",
                   fixture("native/stack_fanout") + " " + std::to_string(kCalls), "p::leaf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = parse_trace(r.out);
  ASSERT_FALSE(t.summary.is_null()) << r.err;
  ASSERT_EQ(t.summary["lost"].get<uint64_t>(), 0u);
  EXPECT_EQ(t.summary["stack_failed"].get<uint64_t>(), 0u);
  ASSERT_EQ(t.events.size(), static_cast<size_t>(kCalls));
  size_t with_stack = 0;
  for (const auto& e : t.events)
    // leaf, down, then 15 x (left|right, down), main, ...
    with_stack += e.contains("stack") && e["stack"].size() >= 32;
  EXPECT_EQ(with_stack, static_cast<size_t>(kCalls));
}

TEST(losses, a_cut_string_is_marked_and_counted) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "--json", "-c", fixture("native/target_loop") + " 1000",
                   "p::work \"%s\", str(arg2, 2)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto t = parse_trace(r.out);
  ASSERT_FALSE(t.summary.is_null()) << r.err;
  size_t cut = 0;
  for (const auto& e : t.events) {
    // "xyz" read as at most 2 bytes; empty only if the first call's string, read from the
    // process after the event, was gone already.
    std::string v = e["values"][0].get<std::string>();
    EXPECT_TRUE(v == "xy" || v.empty()) << v;
    cut += v == "xy";
  }
  EXPECT_GE(cut, 999u);
  EXPECT_EQ(t.summary["truncated_strings"].get<uint64_t>(), cut);
}

// Name and max_entries of the BPF maps process `pid` holds (its fdinfo names the map id).
std::map<std::string, uint64_t> maps_of(pid_t pid) {
  std::map<std::string, uint64_t> out;
  std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::ifstream in(dir + "/" + e->d_name);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.starts_with("map_id:")) continue;
      auto j =
          nlohmann::json::parse(shell("bpftool -j map show id " + line.substr(7)), nullptr, false);
      if (j.is_object() && j.contains("name"))
        out[j["name"].get<std::string>()] = j["max_entries"].get<uint64_t>();
    }
  }
  closedir(d);
  return out;
}

TEST(losses, a_trace_session_has_a_one_row_latency_map) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/target_loop"), "1"});    // blocked until start()
  const std::string target_pid = std::to_string(target.pid());  // the child must not allocate
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(USCOPE_BIN, USCOPE_BIN, "trace", "-p", target_pid.c_str(), "p::work \"%d\", arg1",
          nullptr);
    _exit(127);
  }
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (bpf_links_of_programs("trace_", pid).empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(bpf_links_of_programs("trace_", pid).empty());
  auto maps = maps_of(pid);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(maps.contains("latency")) << "maps of uscope: " << maps.size();
  EXPECT_EQ(maps["latency"], 1u);
  // Nothing in this session saves entries either.
  EXPECT_EQ(maps["entries"], 1u);
}

}  // namespace
}  // namespace uscope::e2e
