// --format and -o on every command that prints rows or events: the format chosen by the flag or
// the file's extension, written to the file (not stdout), and wrong choices refused as usage
// errors that name what would work.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "../unit/temp_dir.h"
#include "e2e_support.h"

namespace uscope::e2e {
namespace {

std::string loop_cmd(int n) {
  return fixture("native/target_loop") + " " + std::to_string(n);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(output_format, trace_writes_json_lines_to_the_o_file) {
  USCOPE_REQUIRE_ROOT();
  test::TempDir dir;
  const std::string path = dir.str() + "/events.jsonl";
  auto r = uscope({"trace", "-o", path, "-c", loop_cmd(3), "p::work \"%d\", arg1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("work"), std::string::npos) << "events went to stdout: " << r.out;
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  std::string text = read_file(path);
  auto lines = json_lines(text);
  size_t events = 0;
  for (const auto& j : lines) events += j["kind"] == "event";
  EXPECT_EQ(events, 3u) << text;
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["kind"], "summary") << text;
  // Every line of the file is JSON: no text header.
  EXPECT_EQ(lines.size(), static_cast<size_t>(std::count(text.begin(), text.end(), '\n'))) << text;
}

TEST(output_format, o_truncates_an_existing_file) {
  USCOPE_REQUIRE_ROOT();
  test::TempDir dir;
  const std::string path = dir.str() + "/events.txt";
  { std::ofstream(path) << std::string(100000, 'x') << "\n"; }
  auto r = uscope({"trace", "-o", path, "-c", loop_cmd(2), "p::work \"%d\", arg1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string text = read_file(path);
  EXPECT_EQ(text.find("xxx"), std::string::npos) << "not truncated";
  EXPECT_EQ(lines_with(text, "work").size(), 2u) << text;
  EXPECT_TRUE(json_lines(text).empty()) << ".txt is text: " << text;
}

TEST(output_format, count_format_json) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "--format", "json", "-c", loop_cmd(321), "work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint64_t> counts;
  for (const auto& j : json_lines(r.out)) counts[j["function"]] = j["count"];
  EXPECT_EQ(counts["work"], 321u) << r.out;
}

TEST(output_format, latency_and_hist_write_to_the_o_file) {
  USCOPE_REQUIRE_ROOT();
  test::TempDir dir;
  const std::string lat = dir.str() + "/latency.json";
  auto r = uscope({"latency", "-o", lat, "-c", loop_cmd(50), "work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json_lines(r.out).empty()) << r.out;
  auto rows = json_lines(read_file(lat));
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0]["kind"], "latency");
  const std::string hist = dir.str() + "/hist.out";
  auto h = uscope({"hist", "--format", "json", "-o", hist, "-c", loop_cmd(50), "p::work", "arg1"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  bool any_hist = false;
  for (const auto& j : json_lines(read_file(hist))) any_hist |= j["kind"] == "hist";
  EXPECT_TRUE(any_hist) << read_file(hist);
}

TEST(output_format, list_writes_to_the_o_file) {
  test::TempDir dir;
  const std::string path = dir.str() + "/functions.json";
  auto r = uscope({"list", "-o", path, fixture("native/target_loop"), "work"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  auto rows = json_lines(read_file(path));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["name"], "work");
}

TEST(output_format, refuses_a_format_the_command_does_not_write) {
  auto r = uscope({"trace", "--format", "svg", "-c", "true", "p::main"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not write svg: use one of text, json"), std::string::npos) << r.err;
  auto unknown = uscope({"count", "--format", "yaml", "-c", "true", "main"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown format 'yaml'"), std::string::npos) << unknown.err;
  auto by_name = uscope({"list", "-o", "/tmp/never-written.svg", fixture("native/target_loop")});
  EXPECT_EQ(by_name.exit_code, 2);
  EXPECT_NE(by_name.err.find("does not write svg"), std::string::npos) << by_name.err;
}

TEST(output_format, refuses_an_extension_that_names_no_format) {
  test::TempDir dir;
  const std::string path = dir.str() + "/events.out";
  auto r = uscope({"trace", "-o", path, "-c", "true", "p::main"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot tell the format from -o " + path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "a refused -o file is not created";
}

TEST(output_format, json_alias_conflicting_with_format_is_refused) {
  auto r = uscope({"count", "--json", "--format", "text", "-c", "true", "main"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--json means --format json"), std::string::npos) << r.err;
}

TEST(output_format, unwritable_o_file_names_the_path) {
  const std::string path = "/nonexistent-dir/events.json";
  auto r = uscope({"list", "-o", path, fixture("native/target_loop")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write " + path), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uscope::e2e
