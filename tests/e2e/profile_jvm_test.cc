// uscope profile names JIT-compiled Java code from the JVM's perf map where it does not read the
// JVM's own structures (jvm_frames_test.cc): HotLoop
// (tests/fixtures/java) spends its time in one compiled method, `jcmd PID Compiler.perfmap` writes
// /tmp/perf-PID.map, and the folded stacks name the method with the JIT suffix `_[j]`.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(profile_jvm, names_a_jit_compiled_method_from_the_perf_map) {
  USCOPE_REQUIRE_ROOT();
  // dontinline: hotMethod stays a compiled frame of its own (C2 would inline it into main's loop).
  RunningCommand java(
      {"/usr/bin/java", "-XX:+PreserveFramePointer", "-XX:CompileCommand=quiet",
       "-XX:CompileCommand=dontinline,HotLoop::hotMethod", "-cp", fixture("java"), "HotLoop"},
      180);
  // "ready" comes after 20,000 calls of hotMethod: it is compiled by then.
  ASSERT_TRUE(java.wait_for_output("ready " + std::to_string(java.pid())));
  const std::string pid = std::to_string(java.pid());
  const std::string perf_map = "/tmp/perf-" + pid + ".map";
  // The JVM writes the map when asked; until the method's compiled code is in it, ask again.
  EXPECT_TRUE(wait_until(
      "the perf map names HotLoop.hotMethod",
      [&] {
        run({"/usr/bin/jcmd", pid, "Compiler.perfmap"}, 60);
        return read_text(perf_map).find("HotLoop.hotMethod") != std::string::npos;
      },
      std::chrono::seconds(120)));

  // The fallback when Java frames cannot be read from the JVM: USCOPE_NO_JAVA=1 turns that walk
  // off, as a JVM uscope cannot read would (its JIT code walked by frame pointer).
  setenv("USCOPE_NO_JAVA", "1", 1);
  auto r = uscope({"profile", "-p", pid, "-F", "99", "-d", "3", "--format", "folded"}, 120);
  unsetenv("USCOPE_NO_JAVA");
  java.signal(SIGKILL);
  java.finish();
  std::filesystem::remove(perf_map);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(lines_with(r.out, "long HotLoop.hotMethod(long)_[j]").empty()) << r.out;
  EXPECT_NE(r.err.find("samples"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uscope::e2e
