// The text-shaped profile formats on hand-built profiles: folded stacks, the top table, the
// summary line, speedscope JSON and the SVG flame graph's structure (profile_svg_render_test
// renders it in Chromium; profile_pprof_test covers pprof).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "profile_fixture.h"

namespace uscope {
namespace {

using test::sample_profile;
using test::written;
using test::written_summary;
using ::testing::HasSubstr;
using ::testing::Not;

size_t occurrences(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(profile_folded, writes_sorted_root_first_stacks_with_suffixes_and_inlines_expanded) {
  EXPECT_EQ(written(sample_profile(), OutputFormat::Folded),
            "app;[unknown: libfoo.so has no symbols];Interpreter_[j] 2\n"
            "app;_start;main;outer;inner 3\n"
            "app;_start;main;outer;inner;do_syscall_64_[k] 5\n"
            "worker;_start;main;recurse;recurse;recurse 1\n"
            "worker;_start;main;std::vector<int>::push_back(int&&) 1\n");
}

TEST(profile_folded, merges_processes_of_one_comm_and_splits_threads) {
  Profile p = sample_profile();
  p.samples[1].pid = 99;  // another "app" with the same stack as ...inner x3
  EXPECT_THAT(written(p, OutputFormat::Folded), HasSubstr("app;_start;main;outer;inner 3\n"));
  for (auto& s : p.samples) s.tid = s.pid + 1;
  std::string threads = written(p, OutputFormat::Folded);
  EXPECT_THAT(threads, HasSubstr("app-99/100;_start;main;outer;inner 3\n"));
  EXPECT_THAT(threads, HasSubstr("worker-43/44;_start;main;recurse;recurse;recurse 1\n"));
}

TEST(profile_folded, keeps_separators_out_of_names) {
  Profile p = sample_profile();
  p.functions[0].name = "a;b\nc";
  EXPECT_THAT(written(p, OutputFormat::Folded), HasSubstr("app;_start;a:b c;outer;inner 3\n"));
}

TEST(profile_top, ranks_by_self_and_counts_recursion_once_in_total) {
  std::string top = written(sample_profile(), OutputFormat::Text);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = top.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(top.substr(at, nl - at));
  ASSERT_GE(lines.size(), 6u) << top;
  EXPECT_THAT(lines[0], ::testing::MatchesRegex(" *SELF% +TOTAL% +SELF +TOTAL +FUNCTION +MODULE"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(
                            " *41.7% +41.7% +5 +5 +do_syscall_64_\\[k\\] +\\[kernel.kallsyms\\]"));
  EXPECT_THAT(lines[2], ::testing::MatchesRegex(" *25.0% +66.7% +3 +8 +inner +app"));
  EXPECT_THAT(lines[3], ::testing::MatchesRegex(" *16.7% +16.7% +2 +2 +Interpreter_\\[j\\] +anon"));
  EXPECT_THAT(top, ::testing::ContainsRegex("\n +8.3% +8.3% +1 +1 +recurse +app\n"));
  EXPECT_THAT(top, ::testing::ContainsRegex("\n +0.0% +83.3% +0 +10 +main +app\n"));
}

TEST(profile_top, shows_top_rows_and_says_how_many_more) {
  ProfileSinkOptions options;
  options.top = 2;
  std::string top = written(sample_profile(), OutputFormat::Text, options);
  EXPECT_EQ(occurrences(top, "\n"), 4u) << top;
  EXPECT_THAT(top, HasSubstr("(7 more functions;"));
}

TEST(profile_summary, names_samples_processes_losses_and_the_complete_share) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  print_profile_summary(sample_profile(), f);
  std::fclose(f);
  std::string line(buf, size);
  std::free(buf);
  EXPECT_EQ(line,
            "uscope: 12 samples from 2 processes in 10.0 s at 49 Hz; lost: 2 user stacks "
            "(failed); complete stacks: 83.3% (reach _start/main/start_thread/clone3)\n");
}

TEST(profile_summary, groups_digits_rounds_the_share_down_and_names_unknown_causes) {
  Profile p;
  ProfileSample s;
  s.pid = 1;
  s.count = 9999;
  s.complete = true;
  p.samples.push_back(s);
  s.count = 1;
  s.complete = false;
  p.samples.push_back(s);
  p.losses = {{"stack_collided", 1234}, {"map_full", 0}, {"ring_overrun", 3}};
  std::string line = written_summary(p);
  EXPECT_EQ(line,
            "10,000 samples from 1 process; lost: 1,234 collided, 3 ring overrun; complete "
            "stacks: 99.9% (reach _start/main/start_thread/clone3)");
  p.user_frames = false;
  EXPECT_THAT(written_summary(p), HasSubstr("complete stacks: n/a (-K: no user frames)"));
}

TEST(profile_speedscope, writes_one_sampled_profile_per_process_root_first) {
  auto j = nlohmann::json::parse(
      written(sample_profile(), OutputFormat::Speedscope, {.title = "uscope profile -p 42"}));
  EXPECT_EQ(j["$schema"], "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(j["name"], "uscope profile -p 42");
  const auto& frames = j["shared"]["frames"];
  auto name = [&](const nlohmann::json& index) { return frames.at(index.get<size_t>())["name"]; };
  ASSERT_EQ(j["profiles"].size(), 2u);
  const auto& app = j["profiles"][0];
  EXPECT_EQ(app["type"], "sampled");
  EXPECT_EQ(app["name"], "app (42)");
  EXPECT_EQ(app["endValue"], 10);
  ASSERT_EQ(app["samples"].size(), 3u);
  EXPECT_EQ(app["weights"], nlohmann::json({5, 3, 2}));
  const auto& first = app["samples"][0];
  ASSERT_EQ(first.size(), 5u);
  EXPECT_EQ(name(first[0]), "_start");
  EXPECT_EQ(name(first[2]), "outer");
  EXPECT_EQ(name(first[3]), "inner");
  EXPECT_EQ(name(first[4]), "do_syscall_64_[k]");
  EXPECT_EQ(frames.at(first[3].get<size_t>())["file"], "app.h");
  EXPECT_EQ(name(app["samples"][2][1]), "Interpreter_[j]");
  EXPECT_EQ(j["profiles"][1]["name"], "worker (43)");
  // Recursion and a repeated function reuse one shared frame.
  const auto& recursive = j["profiles"][1]["samples"][0];
  EXPECT_EQ(recursive[2], recursive[4]);
  EXPECT_EQ(app["samples"][0][1], j["profiles"][1]["samples"][0][1]);  // main
}

TEST(profile_svg, is_self_contained_with_one_frame_per_merged_path) {
  std::string svg = written(sample_profile(), OutputFormat::Svg, {.title = "uscope profile -p 42"});
  EXPECT_TRUE(svg.starts_with("<?xml")) << svg.substr(0, 100);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_THAT(svg, HasSubstr("<script><![CDATA["));
  // Nothing fetched: the only URL is the SVG namespace.
  EXPECT_EQ(occurrences(svg, "http"), 1u);
  EXPECT_THAT(svg, Not(HasSubstr("href")));
  EXPECT_THAT(svg, HasSubstr(">uscope profile -p 42</text>"));
  EXPECT_THAT(svg, HasSubstr("12 samples from 2 processes"));
  // all, app, worker, and the 13 frames above them after merging identical paths.
  EXPECT_EQ(occurrences(svg, "<g class=\"f"), 16u);
  EXPECT_THAT(svg, HasSubstr("<title>std::vector&lt;int&gt;::push_back(int&amp;&amp;)\n"));
  EXPECT_THAT(svg, HasSubstr("<title>inner\n8 samples, 66.67%\nself: 3 samples, 25.00%</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>do_syscall_64_[k]\n"));
  EXPECT_THAT(svg, HasSubstr("<title>Interpreter_[j]\n"));
  for (const char* legend : {">user<", ">inlined<", ">kernel<", ">JIT<", ">unknown<"})
    EXPECT_THAT(svg, HasSubstr(legend));
  EXPECT_THAT(svg, Not(HasSubstr("not drawn")));
}

TEST(profile_svg, drops_frames_narrower_than_a_tenth_of_a_pixel_and_says_so) {
  Profile p = sample_profile();
  p.samples[1].count = 1'000'000;
  std::string svg = written(p, OutputFormat::Svg);
  // worker (2 samples of a million) and its 6 frames, [unknown] and Interpreter (2 samples),
  // do_syscall_64 (5): all, app, _start, main, outer and inner stay.
  EXPECT_THAT(svg, HasSubstr(">10 frames narrower than 0.1 px not drawn</text>"));
  EXPECT_THAT(svg, Not(HasSubstr("<title>worker")));
  EXPECT_THAT(svg, Not(HasSubstr("<title>do_syscall_64")));
  EXPECT_EQ(occurrences(svg, "<g class=\"f"), 6u);
}

TEST(profile_svg, replaces_bytes_that_are_not_utf8) {
  Profile p = sample_profile();
  p.functions[0].name = "bad\xff\x01name";
  std::string svg = written(p, OutputFormat::Svg);
  EXPECT_THAT(svg, HasSubstr("<title>bad\xEF\xBF\xBD\xEF\xBF\xBDname\n"));
}

TEST(profile_formats, write_something_valid_for_an_empty_profile) {
  Profile p;
  EXPECT_EQ(written(p, OutputFormat::Folded), "");
  EXPECT_EQ(written(p, OutputFormat::Text), "no samples\n");
  auto j = nlohmann::json::parse(written(p, OutputFormat::Speedscope));
  EXPECT_TRUE(j["profiles"].empty());
  std::string svg = written(p, OutputFormat::Svg);
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  EXPECT_THAT(svg, HasSubstr(">no samples</text>"));
  EXPECT_EQ(written_summary(p),
            "0 samples from 0 processes; lost: 0; complete stacks: n/a (no samples)");
}

TEST(profile_formats, refuses_json) {
  EXPECT_THAT(written(sample_profile(), OutputFormat::Json),
              HasSubstr("error: a profile cannot be written as json"));
}

}  // namespace
}  // namespace uscope
