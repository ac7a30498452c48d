// pprof output decoded back with protobuf (the schema Debian's pprof ships) and read by
// `go tool pprof` itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "pprof_decode.h"
#include "profile.pb.h"
#include "profile_fixture.h"
#include "temp_dir.h"
#include "tool_output.h"

namespace uscope {
namespace {

namespace pp = perftools::profiles;
using test::sample_profile;
using test::written;
using ::testing::HasSubstr;

pp::Profile decoded(const Profile& p) {
  pp::Profile out;
  EXPECT_TRUE(out.ParseFromString(test::gunzip(written(p, OutputFormat::Pprof))));
  return out;
}

TEST(profile_pprof, decodes_to_mappings_locations_functions_and_labelled_samples) {
  pp::Profile out = decoded(sample_profile());
  auto str = [&](int64_t i) { return out.string_table(static_cast<int>(i)); };
  EXPECT_EQ(str(0), "");
  ASSERT_EQ(out.sample_type_size(), 2);
  EXPECT_EQ(str(out.sample_type(0).type()), "samples");
  EXPECT_EQ(str(out.sample_type(0).unit()), "count");
  EXPECT_EQ(str(out.sample_type(1).type()), "cpu");
  EXPECT_EQ(str(out.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(str(out.period_type().type()), "cpu");
  EXPECT_EQ(out.period(), 1'000'000'000 / 49);
  EXPECT_EQ(out.time_nanos(), 1'700'000'000'000'000'000);
  EXPECT_EQ(out.duration_nanos(), 10'000'000'000);

  ASSERT_EQ(out.mapping_size(), 4);
  const pp::Mapping& app = out.mapping(0);
  EXPECT_EQ(app.id(), 1u);
  EXPECT_EQ(str(app.filename()), "/usr/bin/app");
  EXPECT_EQ(str(app.build_id()), "abcd01");
  EXPECT_EQ(app.memory_start(), 0x1000u);
  EXPECT_EQ(app.memory_limit(), 0x2000u);
  EXPECT_TRUE(app.has_functions());
  EXPECT_TRUE(app.has_filenames());
  EXPECT_TRUE(app.has_line_numbers());
  EXPECT_TRUE(app.has_inline_frames());
  EXPECT_FALSE(out.mapping(3).has_functions());
  EXPECT_FALSE(out.mapping(1).has_inline_frames());

  ASSERT_EQ(out.function_size(), 9);
  const pp::Function& push_back = out.function(7);
  EXPECT_EQ(push_back.id(), 8u);
  EXPECT_EQ(str(push_back.name()), "std::vector<int>::push_back(int&&)");
  EXPECT_EQ(str(push_back.system_name()), "_ZNSt6vectorIiSaIiEE9push_backEOi");
  EXPECT_EQ(str(push_back.filename()), "vector.h");

  ASSERT_EQ(out.location_size(), 8);
  const pp::Location& inlined = out.location(1);
  EXPECT_EQ(inlined.id(), 2u);
  EXPECT_EQ(inlined.mapping_id(), 1u);
  EXPECT_EQ(inlined.address(), 0x1100u);
  ASSERT_EQ(inlined.line_size(), 2);  // innermost first: inner inlined into outer
  EXPECT_EQ(str(out.function(inlined.line(0).function_id() - 1).name()), "inner");
  EXPECT_EQ(inlined.line(0).line(), 20);
  EXPECT_EQ(str(out.function(inlined.line(1).function_id() - 1).name()), "outer");
  EXPECT_EQ(out.location(2).mapping_id(), 2u);

  ASSERT_EQ(out.sample_size(), 5);
  const pp::Sample& first = out.sample(0);
  EXPECT_THAT(first.location_id(), ::testing::ElementsAre(3, 2, 1, 6));  // leaf first
  EXPECT_THAT(first.value(), ::testing::ElementsAre(5, 5 * (1'000'000'000 / 49)));
  std::map<std::string, std::string> labels;
  for (const auto& l : first.label())
    labels[str(l.key())] = l.str() ? str(l.str()) : std::to_string(l.num());
  EXPECT_EQ(labels["pid"], "42");
  EXPECT_EQ(labels["comm"], "app");
  EXPECT_EQ(labels["user_stack"], "complete");
  EXPECT_EQ(labels.count("tid"), 0u);

  std::string comments;
  for (int64_t c : out.comment()) comments += str(c) + "\n";
  EXPECT_THAT(comments, HasSubstr("12 samples from 2 processes"));
  EXPECT_THAT(comments, HasSubstr("lost user_stack_failed: 2\n"));
  EXPECT_THAT(comments, HasSubstr("lost stack_collided: 0\n"));
}

TEST(profile_pprof, an_off_cpu_profile_has_one_value_in_nanoseconds) {
  Profile p = sample_profile();
  p.measure = ProfileMeasure::OffCpuTime;
  p.frequency_hz = 0;
  pp::Profile out = decoded(p);
  ASSERT_EQ(out.sample_type_size(), 1);
  EXPECT_EQ(out.string_table(out.sample_type(0).type()), "off_cpu");
  EXPECT_EQ(out.string_table(out.sample_type(0).unit()), "nanoseconds");
  EXPECT_EQ(out.string_table(out.period_type().type()), "off_cpu");
  for (const auto& s : out.sample()) EXPECT_EQ(s.value_size(), 1);
}

TEST(profile_pprof, writes_a_valid_profile_without_samples) {
  pp::Profile out = decoded(Profile{});
  EXPECT_EQ(out.sample_size(), 0);
  EXPECT_EQ(out.sample_type_size(), 2);
}

// The consumer people use: Debian's golang-go runs pprof from its own tree (go tool pprof).
TEST(profile_pprof, go_tool_pprof_lists_the_functions) {
  test::TempDir dir;
  std::string file = dir.str() + "/cpu.pb.gz";
  std::ofstream(file) << written(sample_profile(), OutputFormat::Pprof);
  std::string top =
      test::command_output("cd " + dir.str() + " && HOME=" + dir.str() + " GOCACHE=" + dir.str() +
                           "/gocache go tool pprof -top " + file + " 2>&1");
  EXPECT_THAT(top, HasSubstr("Type: cpu"));
  for (const char* function : {"do_syscall_64", "inner", "outer", "Interpreter", "recurse",
                               "std::vector<int>::push_back", "[unknown: no symbols in libfoo.so"})
    EXPECT_THAT(top, HasSubstr(function)) << top;
  EXPECT_THAT(top, ::testing::ContainsRegex("41\\.67% +41\\.67% .*do_syscall_64"));
}

}  // namespace
}  // namespace uscope
