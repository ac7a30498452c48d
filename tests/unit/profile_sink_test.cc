// The text-shaped profile formats on hand-built profiles: folded stacks, the top table, the
// summary line, speedscope JSON and the SVG flame graph's structure (profile_svg_render_test
// renders it in Chromium; profile_pprof_test covers pprof).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

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
            "app;[unknown: no symbols in libfoo.so];Interpreter_[j] 2\n"
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
                            " *41.6% +41.6% +5 +5 +do_syscall_64_\\[k\\] +\\[kernel.kallsyms\\]"));
  EXPECT_THAT(lines[2], ::testing::MatchesRegex(" *25.0% +66.6% +3 +8 +inner +app"));
  EXPECT_THAT(lines[3], ::testing::MatchesRegex(" *16.6% +16.6% +2 +2 +Interpreter_\\[j\\] +anon"));
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
            "(walk failed); complete stacks: 83.3% (reach _start/main/start_thread/clone3)\n");
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
  p.losses = {{"kernel_stack_collided", 1234}, {"map_full", 0}, {"ring_overrun", 3}};
  std::string line = written_summary(p);
  EXPECT_EQ(line,
            "10,000 samples from 1 process; lost: 1,234 kernel stacks (collided), 3 ring overrun; "
            "complete stacks: 99.9% (reach _start/main/start_thread/clone3)");
  p.user_frames = false;
  EXPECT_THAT(written_summary(p), HasSubstr("complete stacks: n/a (-K: no user frames)"));
}

TEST(profile_summary, reads_every_cause_the_profiler_counts) {
  Profile p;
  p.losses = {{"user_stack_failed", 1},     {"kernel_stack_failed", 2}, {"user_stacks_full", 3},
              {"kernel_stack_collided", 1}, {"map_full", 1000},         {"process_record_lost", 2},
              {"stack_unreadable", 1},      {"walk_read_failed", 4},    {"walk_requests_lost", 1}};
  EXPECT_THAT(written_summary(p),
              HasSubstr("lost: 1 user stack (walk failed), 2 kernel stacks (walk failed), 3 user "
                        "stacks (stack table full), 1 kernel stack (collided), 1,000 samples "
                        "(count table full), 2 process records (ring full), 1 stack (unreadable), "
                        "4 user stacks (cut: stack unreadable), 1 unwinder request (ring full); "
                        "complete"));
}

TEST(profile_summary, says_what_the_java_names_lost_and_why) {
  Profile p;
  p.losses = {{"java_code_gone", 1}, {"java_method_reused", 2}};
  EXPECT_THAT(written_summary(p),
              HasSubstr("lost: 1 Java frame (the nmethod that ran flushed and its memory reused "
                        "before it was read: unnamed), 2 Java methods (their memory reused by "
                        "another after their class was unloaded: interpreted frames unnamed); "));
}

// A profile of python3.11 whose innermost frame is unnamed in `unnamed` of 10 samples.
Profile python_profile(uint64_t unnamed, const std::string& file) {
  Profile p;
  ProfileMapping m;
  m.start = 0x1000;
  m.limit = 0x2000;
  m.file = file;
  p.mappings.push_back(m);
  p.functions.push_back({"[unknown: no symbol covers the address in python3.11]", "", ""});
  p.functions.push_back({"_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault", ""});
  for (uint32_t f : {0u, 1u}) {
    ProfileLocation loc;
    loc.address = 0x1100 + f * 0x100;
    loc.mapping = 1;
    loc.lines = {{f, 0}};
    p.locations.push_back(loc);
  }
  ProfileSample s;
  s.pid = 7;
  s.count = unnamed;
  s.locations = {0, 1};
  p.samples.push_back(s);
  s.count = 10 - unnamed;
  s.locations = {1};
  p.samples.push_back(s);
  return p;
}

TEST(profile_summary, names_the_debug_package_of_an_unnamed_python_interpreter) {
  EXPECT_EQ(debug_package_hint(python_profile(3, "/usr/bin/python3.11")),
            "30% of samples stop in the Python interpreter's unnamed functions: `apt install "
            "python3.11-dbg` names them (its debug files, found by build-id)");
  EXPECT_THAT(
      debug_package_hint(python_profile(3, "/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0"))
          .value_or(""),
      HasSubstr("`apt install python3.12-dbg`"));
  EXPECT_EQ(debug_package_hint(python_profile(0, "/usr/bin/python3.11")), std::nullopt);
  EXPECT_EQ(debug_package_hint(python_profile(3, "/usr/bin/redis-server")), std::nullopt);
}

TEST(profile_speedscope, writes_one_sampled_profile_per_process_root_first) {
  auto j = nlohmann::json::parse(
      written(sample_profile(), OutputFormat::Speedscope, {.title = "uscope profile -p 42"}));
  EXPECT_EQ(j["$schema"], "https://www.speedscope.app/file-format-schema.json");
  EXPECT_EQ(j["name"], "uscope profile -p 42");
  // Losses in a key of uscope's own, as pprof has them in its comments.
  EXPECT_EQ(j["uscope"]["losses"]["user_stack_failed"], 2);
  EXPECT_THAT(j["uscope"]["summary"].get<std::string>(), HasSubstr("lost: 2 user stacks"));
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
  // Nothing fetched: the only URL is the SVG namespace (of the file, and of the script's text).
  EXPECT_EQ(occurrences(svg, "http"), occurrences(svg, "\"http://www.w3.org/2000/svg\""));
  EXPECT_EQ(occurrences(svg, "url("), occurrences(svg, "url(#"));
  EXPECT_THAT(svg, Not(HasSubstr("href")));
  EXPECT_THAT(svg, HasSubstr(">uscope profile -p 42</text>"));
  EXPECT_THAT(svg, HasSubstr("12 samples from 2 processes"));
  // all, app, worker, and the 13 frames above them after merging identical paths.
  EXPECT_EQ(occurrences(svg, " data-n=\""), 16u);
  EXPECT_THAT(svg, HasSubstr("<title>std::vector&lt;int&gt;::push_back(int&amp;&amp;)</title>"));
  // inner: samples 2..10 of app's (after [unknown]'s 2), 3 of them its own.
  EXPECT_THAT(svg, HasSubstr("<g data-s=\"2\" data-n=\"8\" data-self=\"3\"><title>inner</title>"));
  EXPECT_THAT(svg, HasSubstr("<g class=\"root\" data-s=\"0\" data-n=\"12\"><title>all</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>do_syscall_64_[k]</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>Interpreter_[j]</title>"));
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
  EXPECT_EQ(occurrences(svg, " data-n=\""), 6u);
}

// 20,000 distinct stacks 8 to 40 frames deep over 400 functions, as a busy machine gives.
Profile big_profile() {
  Profile p;
  for (int f = 0; f < 400; ++f) {
    p.functions.push_back({fmt::format("function_number_{}", f), "", ""});
    p.locations.push_back({uint64_t(f), 0, FrameKind::User, {{uint32_t(f), 0}}});
  }
  uint64_t state = 42;
  auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  for (int i = 0; i < 20'000; ++i) {
    ProfileSample s;
    s.pid = pid_t(1 + next(50));
    s.comm = fmt::format("proc{}", s.pid);
    size_t depth = 8 + next(33);
    // Callers near the root are few (skewed), leaves spread: a realistic fan-out.
    for (size_t d = 0; d < depth; ++d) s.locations.push_back(uint32_t(next(d < 4 ? 3 : 400)));
    s.count = 1 + next(20);
    p.samples.push_back(s);
  }
  return p;
}

TEST(profile_svg, stays_small_for_big_profiles) {
  Profile p = big_profile();
  std::string svg = written(p, OutputFormat::Svg);
  // Every distinct path is either drawn once or counted as left out.
  std::set<std::string> paths{""};
  for (const auto& sample : p.samples) {
    std::string path = sample.comm;
    paths.insert(path);
    for (auto it = sample.locations.rbegin(); it != sample.locations.rend(); ++it)
      paths.insert(path += ";" + p.functions[*it].name);
  }
  std::smatch note;
  ASSERT_TRUE(std::regex_search(svg, note, std::regex(">([0-9,]+) frames narrower than 0.1 px")));
  std::string digits = std::regex_replace(note[1].str(), std::regex(","), "");
  size_t drawn = occurrences(svg, " data-n=\""), dropped = std::stoul(digits);
  EXPECT_EQ(drawn + dropped, paths.size());
  EXPECT_GT(dropped, paths.size() / 2);
  // Each drawn frame is at least 0.1 px wide, and costs little.
  std::regex width(" width=\"([0-9.]+)\" height=\"16\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), width); it != std::sregex_iterator();
       ++it)
    ASSERT_GE(std::stod((*it)[1].str()), 0.1);
  EXPECT_LT(svg.size() / drawn, 150u);
  RecordProperty("svg_bytes", std::to_string(svg.size()));
  RecordProperty("frames_drawn", std::to_string(drawn));
  RecordProperty("frames_dropped", std::to_string(dropped));
}

TEST(profile_svg, replaces_bytes_that_are_not_utf8) {
  Profile p = sample_profile();
  p.functions[0].name = "bad\xff\x01name";
  std::string svg = written(p, OutputFormat::Svg);
  EXPECT_THAT(svg, HasSubstr("<title>bad\xEF\xBF\xBD\xEF\xBF\xBDname</title>"));
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

// An off-CPU profile counts nanoseconds: each format says so in its own way.
TEST(profile_formats, a_profile_of_time_is_written_in_time_units) {
  Profile p = sample_profile();
  p.measure = ProfileMeasure::OffCpuTime;
  p.frequency_hz = 0;
  for (auto& s : p.samples) s.count *= 1'500'000;  // 1.5 ms per former sample
  // Folded: microseconds, as offcputime -f writes them.
  EXPECT_THAT(written(p, OutputFormat::Folded), HasSubstr("app;_start;main;outer;inner 4500\n"));
  // The table: times with their unit.
  EXPECT_THAT(written(p, OutputFormat::Text), HasSubstr("7.5 ms"));
  EXPECT_THAT(written(p, OutputFormat::Speedscope), HasSubstr("\"unit\":\"nanoseconds\""));
  EXPECT_THAT(written(p, OutputFormat::Svg), HasSubstr("TIME = true"));
  EXPECT_THAT(written_summary(p), HasSubstr("18.0 ms off-CPU from 2 processes in 10.0 s; lost:"));
  p.measure = ProfileMeasure::WallTime;
  EXPECT_THAT(written_summary(p), HasSubstr("18.0 ms of wall-clock time from 2 processes"));
  Profile empty;
  empty.measure = ProfileMeasure::OffCpuTime;
  EXPECT_THAT(written(empty, OutputFormat::Text),
              HasSubstr("no off-CPU time: no thread of the target waited"));
}

TEST(profile_summary, says_off_cpu_waits_it_could_not_count_and_their_time) {
  Profile p = sample_profile();
  p.measure = ProfileMeasure::OffCpuTime;
  p.losses = {{"off_cpu_unseen", 3}, {"off_cpu_unseen_ns", 2'500'000'000}, {"off_cpu_short", 7}};
  const std::string line = written_summary(p);
  EXPECT_THAT(line, HasSubstr("3 waits (began before the profile: not counted)"));
  EXPECT_THAT(line, HasSubstr("2.50 s (off cpu unseen)"));
  EXPECT_THAT(line, HasSubstr("7 waits (shorter than --min-block: left out)"));
}

TEST(profile_formats, refuses_json) {
  EXPECT_THAT(written(sample_profile(), OutputFormat::Json),
              HasSubstr("error: a profile cannot be written as json"));
}

}  // namespace
}  // namespace uscope
