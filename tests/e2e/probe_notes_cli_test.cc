// Probes known to need a runtime flag, or to fire for only part of the calls their name suggests,
// say so when the session starts (plan/probe_notes.h), instead of a silent 0.
#include <gtest/gtest.h>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

const std::string kLibjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so";
const std::string kPython = "/usr/bin/python3.11";

uint64_t count_of(const std::string& out, const std::string& function) {
  for (const auto& j : json_lines(out))
    if (j.contains("function") && j["function"] == function) return j["count"];
  return 0;
}

TEST(probe_notes, hotspot_method_entry_says_it_needs_the_jvm_flag) {
  USCOPE_REQUIRE_ROOT();
  const std::string note =
      "hotspot:method__entry fires only in a JVM started with -XX:+ExtendedDTraceProbes or "
      "-XX:+DTraceMethodProbes";
  auto off =
      uscope({"count", "--json", "-c", "java -version", "u:" + kLibjvm + ":hotspot:method__entry",
              "u:" + kLibjvm + ":hotspot:thread__start"},
             120);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(lines_with(off.err, note).size(), 1u) << off.err;
  EXPECT_EQ(lines_with(off.err, "; the -c command line shows neither").size(), 1u) << off.err;
  EXPECT_EQ(lines_with(off.err, "thread__start").size(), 0u) << off.err;
  // What the note explains: the JVM ran Java code (its threads started) and the probe stayed off.
  EXPECT_EQ(count_of(off.out, "hotspot:method__entry"), 0u) << off.out;
  EXPECT_GT(count_of(off.out, "hotspot:thread__start"), 0u) << off.out;

  auto on = uscope({"count", "--json", "-c", "java -XX:+ExtendedDTraceProbes -version",
                    "u:" + kLibjvm + ":hotspot:method__entry"},
                   120);
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_EQ(lines_with(on.err, "hotspot:method__entry").size(), 0u) << on.err;
  EXPECT_GT(count_of(on.out, "hotspot:method__entry"), 0u) << on.out;
}

// f is called 100 times from Python code and 50 times from C (map).
const std::string kCallsOfF =
    "exec('def f(i): pass\\nfor i in range(100): f(i)\\nlist(map(f, range(50)))')";

size_t events_of_f(const std::string& out) {
  size_t n = 0;
  for (const auto& j : json_lines(out))
    if (j["kind"] == "event" && j["message"] == "f") ++n;
  return n;
}

TEST(probe_notes, python311_function_entry_says_it_fires_for_almost_no_call) {
  USCOPE_REQUIRE_ROOT();
  auto entry = uscope({"trace", "--json", "-c", kPython + " -c \"" + kCallsOfF + "\"",
                       "u:" + kPython + ":python:function__entry \"%s\", arg2"});
  ASSERT_EQ(entry.exit_code, 0) << entry.err;
  EXPECT_EQ(lines_with(entry.err, "python:function__entry fires for almost no call in Python 3.11")
                .size(),
            1u)
      << entry.err;
  // What the note says: none of f's 150 calls fired it, and function__return saw every one.
  EXPECT_EQ(events_of_f(entry.out), 0u) << entry.out;
  auto ret = uscope({"trace", "--json", "-c", kPython + " -c \"" + kCallsOfF + "\"",
                     "u:" + kPython + ":python:function__return \"%s\", arg2"});
  ASSERT_EQ(ret.exit_code, 0) << ret.err;
  EXPECT_EQ(lines_with(ret.err, "function__return").size(), 0u) << ret.err;
  EXPECT_EQ(events_of_f(ret.out), 150u);
}

}  // namespace
}  // namespace uscope::e2e
