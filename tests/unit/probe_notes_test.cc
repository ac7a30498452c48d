// The notes said of probes that need a runtime flag or fire for part of their calls: which probes
// get one, and that a flag on the program's command line silences its note.
#include "plan/probe_notes.h"

#include <gtest/gtest.h>

namespace uscope {
namespace {

PlannedSite site(std::string label, std::string object) {
  PlannedSite s;
  s.label = std::move(label);
  s.object = std::move(object);
  return s;
}

const std::string kLibjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so";

TEST(probe_notes, hotspot_method_probes_need_a_flag_the_command_line_may_show) {
  std::vector<PlannedSite> sites = {site("hotspot:method__entry", kLibjvm),
                                    site("hotspot:method__entry", kLibjvm),  // a second location
                                    site("hotspot:thread__start", kLibjvm),
                                    site("hotspot:object__alloc", kLibjvm)};
  auto unknown = probe_notes(sites, std::nullopt, "");
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0],
            "hotspot:method__entry fires only in a JVM started with -XX:+ExtendedDTraceProbes or "
            "-XX:+DTraceMethodProbes (HotSpot leaves it off otherwise)");
  EXPECT_NE(unknown[1].find("-XX:+DTraceAllocProbes"), std::string::npos) << unknown[1];

  auto without = probe_notes(sites, std::string("java -Xmx1g -jar app.jar"), "the command line");
  ASSERT_EQ(without.size(), 2u);
  EXPECT_TRUE(
      without[0].ends_with("(HotSpot leaves it off otherwise); the command line shows neither"))
      << without[0];

  EXPECT_TRUE(
      probe_notes(sites, std::string("java -XX:+ExtendedDTraceProbes -jar app.jar"), "").empty());
  // The flag of one group silences that group's note only.
  auto method_only = probe_notes(sites, std::string("java -XX:+DTraceMethodProbes Main"), "");
  ASSERT_EQ(method_only.size(), 1u);
  EXPECT_TRUE(method_only[0].starts_with("hotspot:object__alloc ")) << method_only[0];
  // Turned off is not turned on.
  EXPECT_EQ(probe_notes(sites, std::string("java -XX:-ExtendedDTraceProbes Main"), "").size(), 2u);
}

TEST(probe_notes, python311_function_entry_has_a_note_whatever_the_flags) {
  std::vector<PlannedSite> sites = {site("python:function__entry", "/usr/bin/python3.11"),
                                    site("python:function__return", "/usr/lib/libpython3.11.so.1"),
                                    site("python:gc__start", "/usr/bin/python3.11")};
  auto notes = probe_notes(sites, std::string("python3.11 app.py"), "p");
  ASSERT_EQ(notes.size(), 1u);  // function__return fires for every call
  EXPECT_TRUE(
      notes[0].starts_with("python:function__entry fires for almost no call in Python 3.11"))
      << notes[0];
  // Another Python: not measured, no note.
  EXPECT_TRUE(probe_notes(std::vector{site("python:function__entry", "/usr/bin/python3.9")}, {}, "")
                  .empty());
}

TEST(probe_notes, functions_are_never_taken_for_usdt_probes) {
  std::vector<PlannedSite> sites = {site("hotspot::method__entry", kLibjvm),
                                    site("method__entry", kLibjvm)};
  EXPECT_TRUE(probe_notes(sites, std::nullopt, "").empty());
}

TEST(probe_notes, every_row_names_a_provider_a_probe_and_a_note) {
  for (const auto& n : known_probe_notes()) {
    EXPECT_FALSE(n.provider.empty());
    EXPECT_FALSE(n.probe.empty());
    EXPECT_FALSE(n.note.empty());
    // A row with flags says which in its note.
    EXPECT_EQ(!n.flags.empty(), n.note.find("{flags}") != std::string_view::npos) << n.probe;
  }
}

}  // namespace
}  // namespace uscope
