// Java frames in uscope's stacks with no JVM flag (issue 22): Debian's openjdk-17 running
// JavaPaths (tests/fixtures/java), whose hot path goes main -> run (interpreted) ->
// compiledOuter (C2) -> viaInlined (inlined into compiledOuter) -> nativeSpin (a JNI wrapper) ->
// Java_JavaPaths_nativeSpin (C) -> callback -> HugeMethod.interpreted (never compiled). The
// expected methods and lines come from the fixture's source (marker comments), javap's line
// tables and `jcmd PID Compiler.codelist`, never from uscope. Assertions are on shares.
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

const char* kJava = "/usr/bin/java";

std::string source() {
  return std::string(USCOPE_SOURCE_DIR) + "/tests/fixtures/java/JavaPaths.java";
}

// The line of JavaPaths.java holding `// marker`.
int marked_line(const std::string& marker) {
  std::ifstream in(source());
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.find("// " + marker) != std::string::npos) return n;
  }
  ADD_FAILURE() << "no marker " << marker << " in " << source();
  return -1;
}

std::vector<std::string> java_argv(std::vector<std::string> flags) {
  std::vector<std::string> argv = {kJava};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const std::vector<std::string> rest = {"-cp", fixture("java"),
                                         "-Djava.library.path=" + fixture("java"), "JavaPaths"};
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

// main's call of run and run's call of compiledOuter, interpreted (file:line), then the C2 code
// of compiledOuter (_[j]) with viaInlined inlined (_[i]) at its call of nativeSpin, each at the
// line of its call, and the JNI wrapper (a native method: no line).
std::string hot_path() {
  return "JavaPaths.main (JavaPaths.java:" + std::to_string(marked_line("main:run-call")) +
         ");JavaPaths.run (JavaPaths.java:" + std::to_string(marked_line("run:call")) +
         ");JavaPaths.compiledOuter (JavaPaths.java:" +
         std::to_string(marked_line("compiledOuter:via-call")) +
         ")_[j];JavaPaths.viaInlined (JavaPaths.java:" +
         std::to_string(marked_line("viaInlined:native-call")) +
         ")_[i];JavaPaths.nativeSpin (JavaPaths.java)_[j];";
}

std::vector<FoldedLine> profile_pid(pid_t pid, std::string* err = nullptr) {
  auto r = uscope(
      {"profile", "-F", "199", "-d", "3", "--format", "folded", "-p", std::to_string(pid)}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (err) *err = r.err;
  auto lines = parse_folded(r.out);
  EXPECT_GT(total(lines), 0u) << r.err;
  return lines;
}

// "complete stacks: 99.5%" in uscope's summary.
double complete_share(const std::string& err) {
  auto at = err.find("complete stacks: ");
  if (at == std::string::npos) return -1;
  return std::stod(err.substr(at + 17)) / 100;
}

// The lines HugeMethod.interpreted's bytecodes are on, by javap.
std::set<int> huge_method_lines() {
  std::set<int> lines;
  const auto tables = javap_lines("HugeMethod");  // held: the loop below reads one of its values
  for (auto [bci, line] : tables.at("HugeMethod.interpreted")) lines.insert(line);
  return lines;
}

class jvm_frames : public testing::TestWithParam<std::vector<std::string>> {};

TEST_P(jvm_frames, hot_path_through_c2_inlined_jni_and_interpreted_frames) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess java(java_argv(GetParam()));
  ASSERT_TRUE(java.wait_for_line("ready " + std::to_string(java.pid())));
  ASSERT_TRUE(wait_for_compiled(java.pid(), "JavaPaths.compiledOuter", 4));
  std::string err;
  auto lines = profile_pid(java.pid(), &err);
  // Every stack complete but the few cut by a sample in the middle of a call's prologue.
  EXPECT_GT(complete_share(err), 0.95) << err;
  // The path through every kind of frame: nearly every sample.
  EXPECT_GT(share_with(lines, hot_path()), 0.8) << hot_path();
  // Below the JNI wrapper: its C function, or the C function's call back into Java through the
  // JVM's call stub, to callback and the interpreted HugeMethod, each on a line of its own.
  const double in_c = share_with(lines, hot_path() + "Java_JavaPaths_nativeSpin;");
  EXPECT_GT(in_c, 0.1);
  const auto huge = huge_method_lines();
  uint64_t interpreted = 0, all = 0;
  for (const FoldedLine& l : lines) {
    all += l.count;
    const std::string& leaf = l.frames.back();
    const std::string prefix = "HugeMethod.interpreted (HugeMethod.java:";
    if (!leaf.starts_with(prefix)) continue;
    const int line = std::stoi(leaf.substr(prefix.size()));
    EXPECT_TRUE(huge.contains(line)) << leaf << " is no line of HugeMethod.interpreted (javap)";
    EXPECT_NE(joined(l).find(hot_path() + "Java_JavaPaths_nativeSpin;jni_CallStaticLongMethod;"),
              std::string::npos)
        << joined(l);
    EXPECT_NE(joined(l).find("JavaPaths.callback"), std::string::npos) << joined(l);
    interpreted += l.count;
  }
  EXPECT_GT(static_cast<double>(interpreted) / static_cast<double>(all), 0.1);
}

INSTANTIATE_TEST_SUITE_P(flags, jvm_frames,
                         testing::Values(std::vector<std::string>{},
                                         std::vector<std::string>{"-XX:+UseParallelGC"},
                                         std::vector<std::string>{"-XX:+PreserveFramePointer"}),
                         [](const auto& info) {
                           if (info.param.empty()) return std::string("no_flag");
                           return info.param[0] == "-XX:+UseParallelGC"
                                      ? std::string("parallel_gc")
                                      : std::string("preserve_frame_pointer");
                         });

TEST(jvm_frames_command, started_with_c_names_the_same_path) {
  USCOPE_REQUIRE_ROOT();
  std::string cmd;
  for (const std::string& a : java_argv({})) cmd += a + " ";
  cmd += "12";  // seconds: C2 compiles compiledOuter in the first few
  // To a file: the command's own output goes to stdout.
  const std::string out = testing::TempDir() + "/jvm_c.folded";
  auto r = uscope({"profile", "-F", "99", "-o", out, "-c", cmd}, 180);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(out);
  auto lines = parse_folded(text.str());
  EXPECT_GT(share_with(lines, hot_path()), 0.3) << r.err;
  EXPECT_GT(complete_share(r.err), 0.9) << r.err;
}

TEST(jvm_frames_command, a_method_compiled_during_the_session_is_named) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess java(java_argv({}));
  ASSERT_TRUE(java.wait_for_line("ready " + std::to_string(java.pid())));
  const std::string out = testing::TempDir() + "/jvm_late.folded";
  std::filesystem::remove(out);
  auto profiler = RunningCommand::uscope(
      {"profile", "-F", "199", "-i", "0.2", "-o", out, "-p", std::to_string(java.pid())}, 180);
  ASSERT_TRUE(wait_for_links(profiler.pid(), "profile_sample"));
  // Not compiled before: the loop switches to lateMethod only now.
  for (const CodelistEntry& e : codelist(java.pid())) ASSERT_NE(e.method, "JavaPaths.lateMethod");
  java.send("late\n");
  ASSERT_TRUE(wait_for_compiled(java.pid(), "JavaPaths.lateMethod", 4));
  // C2's code of lateMethod under run's call: "...;JavaPaths.lateMethod (JavaPaths.java:52)_[j]".
  const std::regex late(
      "JavaPaths\\.run \\(JavaPaths\\.java:" + std::to_string(marked_line("run:call")) +
      "\\);JavaPaths\\.lateMethod \\(JavaPaths\\.java:\\d+\\)_\\[j\\]");
  ASSERT_TRUE(wait_until("the profile names lateMethod's C2 code", [&] {
    std::ifstream in(out);
    std::stringstream s;
    s << in.rdbuf();
    return std::regex_search(s.str(), late);
  }));
  profiler.signal(SIGINT);
  auto r = profiler.finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::filesystem::remove(out);
}

TEST(jvm_frames_command, trace_stack_shows_the_java_calls_above_a_native_function) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess java(java_argv({}));
  ASSERT_TRUE(java.wait_for_line("ready " + std::to_string(java.pid())));
  ASSERT_TRUE(wait_for_compiled(java.pid(), "JavaPaths.compiledOuter", 4));
  auto r = uscope({"trace", "-U", "-M", "3", "-p", std::to_string(java.pid()),
                   "p:" + fixture("java/libjavapaths.so") + ":Java_JavaPaths_nativeSpin"},
                  120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each event's stack: the C function, then the JNI wrapper, the inlined call in compiledOuter's
  // C2 code, run and main (interpreted, on their lines), innermost first.
  const std::vector<std::string> order = {
      "Java_JavaPaths_nativeSpin", "JavaPaths.nativeSpin",
      "JavaPaths.viaInlined (JavaPaths.java:" +
          std::to_string(marked_line("viaInlined:native-call")) +
          ") inlined in JavaPaths.compiledOuter (JavaPaths.java:" +
          std::to_string(marked_line("compiledOuter:via-call")) + ")",
      "JavaPaths.run (JavaPaths.java:" + std::to_string(marked_line("run:call")) + ")",
      "JavaPaths.main (JavaPaths.java:" + std::to_string(marked_line("main:run-call")) + ")"};
  size_t events = 0, at = 0;
  for (size_t pos = r.out.find(order[0]); pos != std::string::npos;
       pos = r.out.find(order[0], at)) {
    ++events;
    at = pos;
    for (const std::string& frame : order) {
      const size_t next = r.out.find(frame, at);
      ASSERT_NE(next, std::string::npos) << frame << " not after " << at << " in\n" << r.out;
      at = next + frame.size();
    }
  }
  EXPECT_EQ(events, 3u) << r.out;
}

// jcmd Thread.print: each Java thread's name and its nid (the kernel tid): '"main" #1 prio=5 ...
// nid=0x1a2b runnable' (JDK 17). The VM's own threads ("GC Thread#0", no "#N") are left out.
std::map<pid_t, std::string> jstack_threads(pid_t pid) {
  auto r = run({"/usr/bin/jcmd", std::to_string(pid), "Thread.print"}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<pid_t, std::string> out;
  static const std::regex kThread(R"re(^"([^"]+)" #\d+ .* nid=(0x[0-9a-f]+|\d+) )re");
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kThread))
      out[static_cast<pid_t>(std::stol(m[2].str(), nullptr, 0))] = m[1];
  }
  return out;
}

TEST(jvm_dump, java_threads_by_their_java_names_with_java_frames) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess java(java_argv({}));
  ASSERT_TRUE(java.wait_for_line("ready " + std::to_string(java.pid())));
  const auto threads = jstack_threads(java.pid());
  pid_t reader = 0;
  for (const auto& [tid, name] : threads)
    if (name == "stdin-reader") reader = tid;
  ASSERT_NE(reader, 0) << "jcmd Thread.print lists no stdin-reader";
  auto r = uscope({"dump", "-p", std::to_string(java.pid())}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Java: HotSpot 17."), std::string::npos) << r.out;
  // Every Java thread jcmd names (compiler threads too), by the same name and tid.
  for (const auto& [tid, name] : threads)
    EXPECT_NE(r.out.find("Thread " + std::to_string(tid) + " \"" + name + "\""), std::string::npos)
        << tid << " " << name << "\n"
        << r.out;
  // The reader waits in read(2) under BufferedReader.readLine, called from main's lambda.
  const size_t at = r.out.find("Thread " + std::to_string(reader) + " \"stdin-reader\"");
  ASSERT_NE(at, std::string::npos) << r.out;
  const size_t end = r.out.find("\nThread ", at + 1);
  const std::string block = r.out.substr(at, end == std::string::npos ? end : end - at);
  EXPECT_NE(block.find("idle"), std::string::npos) << block;
  const size_t read_line = block.find("java.io.BufferedReader.readLine");
  const size_t lambda = block.find("JavaPaths.lambda$main$");
  EXPECT_NE(read_line, std::string::npos) << block;
  EXPECT_NE(lambda, std::string::npos) << block;
  EXPECT_LT(read_line, lambda) << block;
  // The JIT compiler threads are marked.
  EXPECT_NE(r.out.find("JIT compiler thread"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace uscope::e2e
