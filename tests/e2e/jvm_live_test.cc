// Java code that changes while uscope profiles (issue 22: methods compiled, recompiled or unloaded
// during a session are followed live), with no JVM flag. JavaLive (tests/fixtures/java) runs a
// class loaded by a class loader of its own in a thread named after it ("worker-LiveA"), until
// C2 has compiled it and the profile names it; then the class is dropped and unloaded (its
// nmethods flushed, their memory free for the next class's code), and the other class of the
// same shape takes its turn, four times. The fixture says which class ran in which thread: every
// stack of a worker thread names that thread's class, never the other, also for classes long
// unloaded when the profile is written.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "e2e_support.h"
#include "folded.h"
#include "jvm_support.h"

namespace uscope::e2e {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "worker-LiveA-PID/TID": the worker thread's name (its class) and tid, from a folded line.
struct WorkerStack {
  std::string klass;
  pid_t tid = 0;
};
std::optional<WorkerStack> worker_of(const FoldedLine& l) {
  static const std::regex kThread(R"(^worker-(Live[AB])-\d+/(\d+)$)");
  std::smatch m;
  if (l.frames.empty() || !std::regex_match(l.frames[0], m, kThread)) return std::nullopt;
  return WorkerStack{m[1], static_cast<pid_t>(std::stoi(m[2]))};
}

// A Java frame of `klass`.spin in JIT code: its own ("_[j]") or inlined into its caller ("_[i]").
bool names_compiled_spin(const FoldedLine& l, const std::string& klass) {
  const std::regex spin(klass + R"(\.spin \()" + klass + R"(\.java:\d+\)_\[[ji]\])");
  for (const std::string& f : l.frames)
    if (std::regex_match(f, spin)) return true;
  return false;
}

TEST(jvm_live, classes_unloaded_and_replaced_during_the_session_keep_their_own_names) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess java({"/usr/bin/java", "-cp", fixture("java"), "JavaLive"});
  const pid_t pid = java.pid();
  ASSERT_TRUE(java.wait_for_line("ready " + std::to_string(pid)));
  const std::string out = testing::TempDir() + "/jvm_live.folded";
  std::filesystem::remove(out);
  auto profiler = RunningCommand::uscope(
      {"profile", "-F", "199", "--threads", "-i", "0.2", "-o", out, "-p", std::to_string(pid)},
      300);
  ASSERT_TRUE(wait_for_links(profiler.pid(), "profile_sample"));

  // Each phase: its class's C2 code (by the codelist), named in the profile in the phase's own
  // worker thread (a tid no earlier phase had), then dropped and unloaded.
  const std::vector<std::string> phases = {"LiveA", "LiveB", "LiveA", "LiveB"};
  std::set<pid_t> seen_tids;
  std::map<uint64_t, std::string> blobs;  // every phase's spin nmethods, by address
  int reused = 0;
  for (const std::string& klass : phases) {
    java.send("run " + klass + "\n");
    ASSERT_TRUE(java.wait_for_line("running " + klass));
    ASSERT_TRUE(wait_for_compiled(pid, klass + ".spin", 4));
    for (const CodelistEntry& e : codelist(pid)) {
      if (e.method != klass + ".spin") continue;
      auto [it, fresh] = blobs.emplace(e.blob, klass + "#" + std::to_string(e.compile_id));
      if (!fresh && it->second != klass + "#" + std::to_string(e.compile_id)) ++reused;
    }
    pid_t tid = 0;
    ASSERT_TRUE(wait_until(klass + "'s C2 code named in its new worker thread", [&] {
      for (const FoldedLine& l : parse_folded(read_file(out))) {
        auto w = worker_of(l);
        if (w && w->klass == klass && !seen_tids.contains(w->tid) && names_compiled_spin(l, klass))
          tid = w->tid;
      }
      return tid != 0;
    }));
    seen_tids.insert(tid);
    java.send("drop\n");
    ASSERT_TRUE(java.wait_for_line("unloaded " + klass));
    // Unloaded: none of its nmethods is alive.
    for (const CodelistEntry& e : codelist(pid)) EXPECT_NE(e.method, klass + ".spin");
  }
  profiler.signal(SIGINT);
  auto r = profiler.finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Written after every class was unloaded: each worker's stacks name its own class only.
  const auto lines = parse_folded(read_file(out));
  std::set<pid_t> named_tids;
  uint64_t worker_samples = 0;
  for (const FoldedLine& l : lines) {
    auto w = worker_of(l);
    if (!w) continue;
    worker_samples += l.count;
    const std::string other = w->klass == "LiveA" ? "LiveB" : "LiveA";
    EXPECT_EQ(joined(l).find(other + "."), std::string::npos)
        << "worker-" << w->klass << " " << w->tid << " ran only " << w->klass << ": " << joined(l);
    if (names_compiled_spin(l, w->klass)) named_tids.insert(w->tid);
  }
  EXPECT_EQ(named_tids, seen_tids) << r.err;
  EXPECT_GT(worker_samples, 0u);
  RecordProperty("spin_blobs_reused", reused);
  std::filesystem::remove(out);
  java.send("quit\n");
  EXPECT_EQ(java.wait(), 0);
}

}  // namespace
}  // namespace uscope::e2e
