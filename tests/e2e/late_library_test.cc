// Libraries a process maps after uscope attached (dlopen: plugins, extension modules, JNI): their
// probes wait for the mapping, as the kernel installs a file's uprobes (and raises its USDT
// semaphores) in a process that maps the file later. And the probes known to need a runtime flag
// or to fire for only part of their calls, said when the session starts.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "e2e_support.h"
#include "session_support.h"

namespace uscope::e2e {
namespace {

constexpr long kCalls = 3000;

std::string usdt_library() {
  return fixture("usdt/libusdt_lib.so");
}

bool maps_file(pid_t pid, const std::string& needle) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(in, line);)
    if (line.find(needle) != std::string::npos) return true;
  return false;
}

// What late_dlopen says it did: its calls, and those that found the USDT semaphore raised.
struct FixtureCounts {
  long calls = -1;
  long raised = -1;
};
FixtureCounts fixture_counts(const std::string& out) {
  std::smatch m;
  FixtureCounts c;
  if (std::regex_search(out, m, std::regex(R"((\d+) calls of \S+, semaphore raised in (\d+))"))) {
    c.calls = std::stol(m[1]);
    c.raised = std::stol(m[2]);
  }
  return c;
}

std::map<std::string, uint64_t> counts_of(const std::string& out) {
  std::map<std::string, uint64_t> counts;
  for (const auto& j : json_lines(out))
    if (j.contains("function")) counts[j["function"]] = j["count"];
  return counts;
}

// A late_dlopen held at its gate, `uscope_args` attached to it by PID (its own pid appended after
// "-p"), the gate opened once uscope has attached; both run until the fixture exits, which ends
// the session.
struct AttachedRun {
  int uscope_exit = -1;
  std::string out, err, fixture_out;
  int fixture_exit = -1;
};
AttachedRun run_attached(const std::string& library, const std::string& function,
                         std::vector<std::string> uscope_args) {
  AttachedRun run;
  GatedProcess target({fixture("native/late_dlopen"), library, function, std::to_string(kCalls)});
  for (size_t i = 0; i < uscope_args.size(); ++i)
    if (uscope_args[i] == "-p")
      uscope_args.insert(uscope_args.begin() + i + 1, std::to_string(target.pid()));
  UscopeChild u(uscope_args);
  // count, latency and hist say so once every probe is attached; trace has one spec here, so one
  // uprobe_multi link holds all its sites.
  if (uscope_args[0] == "trace")
    EXPECT_TRUE(wait_for_links(u.pid(), "trace_")) << u.err();
  else
    EXPECT_TRUE(wait_until([&] { return u.err().find("Ctrl-C to stop") != std::string::npos; }))
        << u.err();
  // The point of the test: nothing of the library is mapped when uscope plans and attaches.
  EXPECT_FALSE(maps_file(target.pid(), library.substr(library.rfind('/') + 1)));
  target.start();
  run.fixture_exit = target.wait(&run.fixture_out);
  run.uscope_exit = u.wait(60);
  run.out = u.out();
  run.err = u.err();
  return run;
}

TEST(late_library, count_p_counts_functions_and_semaphore_probes_of_a_library_mapped_later) {
  USCOPE_REQUIRE_ROOT();
  const std::string lib = usdt_library();
  auto r = run_attached(
      lib, "usdt_lib_call",
      {"count", "--json", "-p", "p:" + lib + ":usdt_lib_call", "u:" + lib + ":usdt_lib:guarded"});
  ASSERT_EQ(r.fixture_exit, 0) << r.fixture_out;
  ASSERT_EQ(r.uscope_exit, 0) << r.err;
  const FixtureCounts f = fixture_counts(r.fixture_out);
  ASSERT_EQ(f.calls, kCalls) << r.fixture_out;
  // The kernel raised the semaphore when the process mapped the library (uprobe_mmap): every
  // call found it raised, and fired the probe behind it.
  EXPECT_EQ(f.raised, kCalls) << r.fixture_out;
  auto counts = counts_of(r.out);
  EXPECT_EQ(counts["usdt_lib_call"], static_cast<uint64_t>(f.calls)) << r.out;
  EXPECT_EQ(counts["usdt_lib:guarded"], static_cast<uint64_t>(f.raised)) << r.out;
  EXPECT_EQ(lines_with(r.err, "does not map " + lib + " yet: its probes wait for it").size(), 1u)
      << r.err;
  EXPECT_TRUE(links_released("count_hit"));
}

TEST(late_library, trace_p_prints_every_call_of_a_library_mapped_later) {
  USCOPE_REQUIRE_ROOT();
  const std::string lib = usdt_library();
  // usdt_lib:guarded gives a*2 + b: 2i for late_dlopen's call i.
  auto r = run_attached(lib, "usdt_lib_call",
                        {"trace", "--json", "-p", "u:" + lib + ":usdt_lib:guarded \"%d\", arg1"});
  ASSERT_EQ(r.fixture_exit, 0) << r.fixture_out;
  ASSERT_EQ(r.uscope_exit, 0) << r.err;
  long events = 0;
  nlohmann::json summary;
  for (const auto& j : json_lines(r.out)) {
    if (j["kind"] == "summary") {
      summary = j;
      continue;
    }
    EXPECT_EQ(j["values"][0], 2 * events) << j;
    ++events;
  }
  EXPECT_EQ(events, fixture_counts(r.fixture_out).raised);
  EXPECT_EQ(events, kCalls);
  ASSERT_FALSE(summary.is_null()) << r.out;
  EXPECT_EQ(summary["lost"], 0) << summary;
  EXPECT_EQ(lines_with(r.err, "does not map " + lib + " yet").size(), 1u) << r.err;
}

TEST(late_library, latency_p_times_a_library_function_mapped_later) {
  USCOPE_REQUIRE_ROOT();
  const std::string lib = usdt_library();
  auto r = run_attached(lib, "usdt_lib_call",
                        {"latency", "--json", "-p", "p:" + lib + ":usdt_lib_call"});
  ASSERT_EQ(r.fixture_exit, 0) << r.fixture_out;
  ASSERT_EQ(r.uscope_exit, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0]["calls"], fixture_counts(r.fixture_out).calls) << rows[0];
  EXPECT_EQ(rows[0]["entries_without_return"], 0) << rows[0];
  EXPECT_EQ(lines_with(r.err, "does not map " + lib + " yet").size(), 1u) << r.err;
}

TEST(late_library, hist_p_counts_every_value_of_a_library_mapped_later) {
  USCOPE_REQUIRE_ROOT();
  const std::string lib = usdt_library();
  auto r = run_attached(lib, "usdt_lib_call",
                        {"hist", "--json", "-p", "p:" + lib + ":usdt_lib_call", "arg1"});
  ASSERT_EQ(r.fixture_exit, 0) << r.fixture_out;
  ASSERT_EQ(r.uscope_exit, 0) << r.err;
  uint64_t total = 0;
  for (const auto& j : json_lines(r.out))
    if (j.contains("buckets"))
      for (const auto& b : j["buckets"]) total += b["count"].get<uint64_t>();
  EXPECT_EQ(total, static_cast<uint64_t>(fixture_counts(r.fixture_out).calls)) << r.out;
  EXPECT_EQ(lines_with(r.err, "does not map " + lib + " yet").size(), 1u) << r.err;
}

// The event's address is named in the library the process mapped after uscope read its maps.
TEST(late_library, addresses_in_a_library_mapped_later_are_symbolized) {
  USCOPE_REQUIRE_ROOT();
  const std::string lib = usdt_library();
  auto r = run_attached(lib, "usdt_lib_call",
                        {"trace", "-p", "p:" + lib + ":usdt_lib_call \"%U\", ctx->ip"});
  ASSERT_EQ(r.fixture_exit, 0) << r.fixture_out;
  ASSERT_EQ(r.uscope_exit, 0) << r.err;
  EXPECT_EQ(lines_with(r.out, "usdt_lib_call+0x0 [libusdt_lib.so]").size(),
            static_cast<size_t>(kCalls))
      << r.out.substr(0, 2000);
}

TEST(late_library, short_name_is_found_in_ld_so_cache_and_waited_for) {
  USCOPE_REQUIRE_ROOT();
  // libz: in every Debian (zlib1g is required), and late_dlopen does not link it.
  auto r = run_attached("libz.so.1", "crc32", {"count", "--json", "-p", "p:z:crc32"});
  ASSERT_EQ(r.fixture_exit, 0) << r.fixture_out;
  ASSERT_EQ(r.uscope_exit, 0) << r.err;
  EXPECT_EQ(counts_of(r.out)["crc32"], static_cast<uint64_t>(fixture_counts(r.fixture_out).calls))
      << r.out;
  // Named as ld.so.cache names it (ldconfig -p is the other source).
  const std::string cached = shell("ldconfig -p | grep -m1 -o '/[^ ]*/libz.so.1$' | tr -d '\\n'");
  ASSERT_FALSE(cached.empty());
  EXPECT_EQ(lines_with(r.err, "does not map " + cached + " yet: its probes wait for it").size(), 1u)
      << r.err;
}

TEST(late_library, command_that_dlopens_a_library_is_counted) {
  USCOPE_REQUIRE_ROOT();
  const std::string lib = usdt_library();
  auto r = uscope(
      {"count", "--json", "-c",
       fixture("native/late_dlopen") + " " + lib + " usdt_lib_call " + std::to_string(kCalls),
       "p:" + lib + ":usdt_lib_call", "u:" + lib + ":usdt_lib:guarded"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const FixtureCounts f = fixture_counts(r.out);
  ASSERT_EQ(f.calls, kCalls) << r.out;
  EXPECT_EQ(f.raised, kCalls) << r.out;
  auto counts = counts_of(r.out);
  EXPECT_EQ(counts["usdt_lib_call"], static_cast<uint64_t>(f.calls)) << r.out;
  EXPECT_EQ(counts["usdt_lib:guarded"], static_cast<uint64_t>(f.raised)) << r.out;
}

TEST(late_library, a_path_that_names_no_file_is_still_refused) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/late_dlopen"), usdt_library(), "usdt_lib_call", "1"});
  auto r = uscope({"count", "-p", std::to_string(target.pid()), "p:/nonexistent/libx.so:f"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("does not map /nonexistent/libx.so, and no such file exists"),
            std::string::npos)
      << r.err;
  target.start();
  EXPECT_EQ(target.wait(), 0);
}

}  // namespace
}  // namespace uscope::e2e
