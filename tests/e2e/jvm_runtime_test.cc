// uscope reads a live HotSpot JVM (Debian's openjdk 17, started with no flag) from its own
// VMStructs tables: the code heaps, the interpreter, the blobs the walker finds through the segment
// maps and the JavaThreads, each checked against what the JVM itself says through jcmd
// (Compiler.codecache, Compiler.codelist, VM.flags, VM.version, Thread.print).
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <regex>
#include <set>

#include "discover/hotspot_runtime.h"
#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// The suite's JDK is Debian's; USCOPE_TEST_JDK=/usr/lib/jvm/OTHER runs the same checks by hand
// against another (what holds only for JDK 17 is then skipped over, said where).
const std::string kDebianJdk = "/usr/lib/jvm/java-17-openjdk-amd64";
const std::string kJdk = getenv("USCOPE_TEST_JDK") ? getenv("USCOPE_TEST_JDK") : kDebianJdk;

std::string jcmd(pid_t pid, const std::vector<std::string>& args) {
  std::vector<std::string> argv{kJdk + "/bin/jcmd", std::to_string(pid)};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run(argv, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

uint64_t hex(const std::string& s) {
  return std::stoull(s, nullptr, 16);
}

// A JavaThread as Thread.print shows it: its name, JavaThread* (tid=) and kernel tid (nid=).
struct PrintedThread {
  std::string name;
  uint64_t java_thread = 0;
  pid_t tid = 0;
  bool operator<(const PrintedThread& o) const { return java_thread < o.java_thread; }
};

// Only JavaThreads: their lines carry a Java thread number ("#7"); VM threads' do not.
// "main" #1 prio=5 os_prio=0 cpu=75145.01ms elapsed=110.57s tid=0x00007fa3ec017ed0 nid=0x5793 ...
std::vector<PrintedThread> printed_java_threads(pid_t pid) {
  // nid=0x5793 in JDK 17, nid=8354 from JDK 19.
  static const std::regex re(R"re(^"(.*)" #\d+ .* tid=0x([0-9a-f]+) nid=(0x[0-9a-f]+|\d+) )re");
  std::vector<PrintedThread> out;
  std::istringstream in(jcmd(pid, {"Thread.print"}));
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, re))
      out.push_back({m[1], hex(m[2]), static_cast<pid_t>(std::stoull(m[3], nullptr, 0))});
  }
  std::sort(out.begin(), out.end());
  return out;
}

// How the JVM is started: as it comes (G1, compressed oops, three code heaps), and with another
// GC, full-width references (the Thread's name is then a pointer, not a narrow oop) and one code
// heap.
struct JvmConfig {
  std::string name;
  std::vector<std::string> flags;
  size_t heaps;
};
void PrintTo(const JvmConfig& c, std::ostream* os) {
  *os << c.name;
}
const JvmConfig kConfigs[] = {
    {"no_flags", {}, 3},
    {"parallel_gc_wide_oops_one_heap",
     {"-XX:+UseParallelGC", "-XX:-UseCompressedOops", "-XX:-SegmentedCodeCache"},
     1},
};

class HotspotRuntimeTest : public testing::TestWithParam<JvmConfig> {
 protected:
  void SetUp() override {
    USCOPE_REQUIRE_ROOT();
    std::vector<std::string> argv{kJdk + "/bin/java"};
    argv.insert(argv.end(), GetParam().flags.begin(), GetParam().flags.end());
    argv.insert(argv.end(), {"-cp", fixture("java"), "HotLoop"});
    java_ = std::make_unique<RunningCommand>(argv, 300);
    // "ready" comes after 20,000 calls of hotMethod: it is compiled by then.
    ASSERT_TRUE(java_->wait_for_output("ready " + std::to_string(java_->pid())));
    auto rt = find_hotspot_runtime(java_->pid());
    ASSERT_TRUE(rt) << rt.error().message;
    ASSERT_TRUE(rt->has_value()) << "no JVM found in pid " << java_->pid();
    rt_ = std::move(**rt);
    mem_ = process_target_memory(java_->pid());
  }
  void TearDown() override {
    if (!java_) return;
    java_->signal(SIGKILL);
    java_->finish();
  }

  std::unique_ptr<RunningCommand> java_;
  HotspotRuntime rt_;
  TargetMemory mem_;
};

TEST_P(HotspotRuntimeTest, finds_libjvm_and_its_version) {
  EXPECT_EQ(rt_.object_path, kJdk + "/lib/server/libjvm.so");
  EXPECT_EQ(rt_.name(), fmt::format("java (pid {})", java_->pid()));
  // "OpenJDK 64-Bit Server VM version 17.0.15+6-Debian-1deb12u1"
  EXPECT_EQ(rt_.version_source, "Abstract_VM_Version::_s_vm_release");
  if (kJdk == kDebianJdk) {
    EXPECT_TRUE(rt_.version.starts_with("17.")) << rt_.version;
  }
  EXPECT_NE(jcmd(java_->pid(), {"VM.version"}).find("Server VM version " + rt_.version + "\n"),
            std::string::npos)
      << rt_.version;
  auto ok = validate_hotspot_runtime(rt_, mem_);
  EXPECT_TRUE(ok) << ok.error().message;
}

TEST_P(HotspotRuntimeTest, code_heaps_are_the_ones_the_jvm_reports) {
  // CodeHeap 'non-profiled nmethods': size=120036Kb used=49Kb max_used=49Kb free=119986Kb
  //  bounds [0x00007fa3dcec7000, 0x00007fa3dd137000, 0x00007fa3e4400000]
  static const std::regex bounds(R"(bounds \[0x([0-9a-f]+), 0x[0-9a-f]+, 0x([0-9a-f]+)\])");
  std::string text = jcmd(java_->pid(), {"Compiler.codecache"});
  std::set<std::pair<uint64_t, uint64_t>> reported, found;
  for (std::sregex_iterator it(text.begin(), text.end(), bounds), end; it != end; ++it)
    reported.emplace(hex((*it)[1]), hex((*it)[2]));
  // SegmentedCodeCache (the default with a C2 and a code cache of 240 MB): three heaps.
  EXPECT_EQ(reported.size(), GetParam().heaps) << text;
  // CodeCacheSegmentSize is a develop flag (VM.flags does not show it): the analytics say it.
  std::string analytics = jcmd(java_->pid(), {"Compiler.CodeHeap_Analytics", "aggregate"});
  static const std::regex segment_re(R"(CodeHeap allocation segment size is (\d+) bytes)");
  std::set<uint64_t> segments;
  for (std::sregex_iterator it(analytics.begin(), analytics.end(), segment_re), end; it != end;
       ++it)
    segments.insert(std::stoull((*it)[1]));
  ASSERT_EQ(segments.size(), 1u) << analytics;
  std::string flags = jcmd(java_->pid(), {"VM.flags", "-all"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(flags, m, std::regex(R"(ReservedCodeCacheSize\s+= (\d+))")));
  uint64_t reserved = 0;
  for (const auto& h : rt_.proc.heaps) {
    if (h.high == 0) continue;
    found.emplace(h.low, h.high);
    reserved += h.high - h.low;
    EXPECT_EQ(1ull << h.shift, *segments.begin());
    EXPECT_GE(h.low, rt_.proc.code_start);
    EXPECT_LE(h.high, rt_.proc.code_end);
  }
  EXPECT_EQ(reserved, std::stoull(m[1]));
  EXPECT_EQ(found, reported) << text;
  // The interpreter is in the non-nmethods heap, and its blob is found as the walker finds it.
  auto blob = hotspot_blob_at(rt_, mem_, rt_.proc.interp_start + 100);
  ASSERT_TRUE(blob && *blob);
  auto name = hotspot_blob_name(rt_, mem_, **blob);
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_EQ(*name, "Interpreter");
}

TEST_P(HotspotRuntimeTest, every_compiled_method_is_found_through_the_segment_map) {
  // 7 4 0 HotLoop.hotMethod(J)J [0x00007fa3dcec7490, 0x00007fa3dcec7620 - 0x00007fa3dcec77f8]:
  // the nmethod, its code's begin and end (level 0: a native method's wrapper, "native nmethod").
  static const std::regex line_re(
      R"(^\d+ \d+ \d+ (\S+) \[0x([0-9a-f]+), 0x([0-9a-f]+) - 0x([0-9a-f]+)\]$)");
  auto listed = [&] {
    std::map<uint64_t, std::string> methods;
    std::istringstream in(jcmd(java_->pid(), {"Compiler.codelist"}));
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_match(line, m, line_re)) methods[hex(m[2])] = line;
    }
    return methods;
  };
  auto methods = listed();
  size_t hot = 0;
  for (const auto& [nm, line] : methods) hot += line.find("HotLoop.hotMethod") != line.npos;
  EXPECT_GE(methods.size(), 10u);
  EXPECT_GE(hot, 1u);
  size_t checked = 0;
  for (const auto& [nm, line] : methods) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_re));
    uint64_t begin = hex(m[3]), end = hex(m[4]);
    auto blob = hotspot_blob_at(rt_, mem_, begin + (end - begin) / 2);
    auto name = blob && *blob ? hotspot_blob_name(rt_, mem_, **blob) : Result<std::string>("");
    uint64_t code_begin = 0;
    if (blob && *blob) {
      const auto& o = rt_.proc.off;
      if (o.code_begin_is_offset) {
        int32_t offset = 0;
        mem_(**blob + o.blob_code_begin, {reinterpret_cast<uint8_t*>(&offset), 4});
        code_begin = **blob + offset;
      } else {
        mem_(**blob + o.blob_code_begin, {reinterpret_cast<uint8_t*>(&code_begin), 8});
      }
    }
    if (!blob || !*blob || **blob != nm || !name ||
        (*name != "nmethod" && *name != "native nmethod") || code_begin != begin) {
      // Flushed since it was listed (the sweeper frees replaced code): then no longer listed.
      if (!listed().contains(nm)) continue;
      ADD_FAILURE() << line << ": blob "
                    << (blob ? (*blob ? fmt::format("{:#x}", **blob) : "none")
                             : blob.error().message)
                    << " name " << (name ? *name : name.error().message) << " code begin "
                    << fmt::format("{:#x}", code_begin);
    }
    ++checked;
  }
  EXPECT_GE(checked, 10u);
}

TEST_P(HotspotRuntimeTest, threads_are_the_ones_thread_print_shows) {
  // Thread.print starts the Attach Listener, a JavaThread, the first time: ask once before.
  printed_java_threads(java_->pid());
  // Compiler threads come and go (UseDynamicNumberOfCompilerThreads): compare with a list that
  // Thread.print showed alike before and after.
  std::vector<PrintedThread> printed;
  std::vector<HotspotThread> threads;
  ASSERT_TRUE(wait_until(
      "two Thread.print alike around hotspot_threads",
      [&] {
        auto before = printed_java_threads(java_->pid());
        auto t = hotspot_threads(rt_, mem_);
        auto after = printed_java_threads(java_->pid());
        if (!t) {
          ADD_FAILURE() << t.error().message;
          return true;
        }
        threads = std::move(*t);
        printed = after;
        auto same = [](const auto& a, const auto& b) {
          return a.size() == b.size() &&
                 std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
                   return x.java_thread == y.java_thread && x.tid == y.tid;
                 });
        };
        return same(before, after);
      },
      // Each round starts two jcmd JVMs: seconds apiece on a loaded machine.
      std::chrono::seconds(180)));
  std::map<uint64_t, const HotspotThread*> by_address;
  for (const auto& t : threads) by_address[t.java_thread] = &t;
  ASSERT_EQ(threads.size(), printed.size());
  std::map<std::string, HotspotThreadKind> kinds;
  for (const auto& p : printed) {
    auto it = by_address.find(p.java_thread);
    ASSERT_NE(it, by_address.end()) << p.name;
    const HotspotThread& t = *it->second;
    EXPECT_EQ(t.tid, p.tid) << p.name;
    // Read from the java.lang.Thread (libjvm.so's .symtab says where its name is).
    EXPECT_EQ(t.name, p.name);
    EXPECT_TRUE(t.java_name) << p.name;
    kinds[p.name] = t.kind;
  }
  EXPECT_EQ(kinds["main"], HotspotThreadKind::Java);
  EXPECT_EQ(kinds["Reference Handler"], HotspotThreadKind::Java);
  EXPECT_EQ(kinds["C2 CompilerThread0"], HotspotThreadKind::Compiler);
  EXPECT_EQ(kinds["C1 CompilerThread0"], HotspotThreadKind::Compiler);
  EXPECT_EQ(kinds["Service Thread"], HotspotThreadKind::Other);
  if (kJdk == kDebianJdk) {  // JDK 20 has no sweeper
    EXPECT_EQ(kinds["Sweeper thread"], HotspotThreadKind::Other);
  }
}

INSTANTIATE_TEST_SUITE_P(jvm, HotspotRuntimeTest, testing::ValuesIn(kConfigs),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace uscope::e2e
