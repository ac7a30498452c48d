// `uscope list` against the machine's real files and processes, checked against readelf and nm.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "e2e_support.h"
#include "sink/profile_writers.h"

namespace uscope::e2e {
namespace {

const char* const kPython = "/usr/bin/python3.11";
const char* const kLibjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so";

std::set<std::string> readelf_usdt_pairs(const std::string& path) {
  std::istringstream in(shell("readelf -n " + path));
  std::set<std::string> pairs;
  std::string line, provider;
  while (std::getline(in, line)) {
    auto p = line.find("Provider: ");
    if (p != std::string::npos) provider = line.substr(p + 10);
    auto n = line.find("Name: ");
    if (n != std::string::npos && !provider.empty()) {
      pairs.insert(provider + ":" + line.substr(n + 6));
      provider.clear();
    }
  }
  return pairs;
}

std::set<std::string> listed_usdt_pairs(const std::string& path) {
  auto r = uscope({"list", "--json", "--usdt", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> pairs;
  for (const auto& j : json_lines(r.out))
    pairs.insert(j["provider"].get<std::string>() + ":" + j["name"].get<std::string>());
  return pairs;
}

TEST(list_cli, usdt_of_python_agrees_with_readelf) {
  auto expected = readelf_usdt_pairs(kPython);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(listed_usdt_pairs(kPython), expected);
}

TEST(list_cli, usdt_of_libjvm_agrees_with_readelf) {
  auto expected = readelf_usdt_pairs(kLibjvm);
  ASSERT_GT(expected.size(), 50u);
  EXPECT_EQ(listed_usdt_pairs(kLibjvm), expected);
}

TEST(list_cli, python_usdt_filter_by_provider_glob) {
  auto r = uscope({"list", "--json", kPython, "python:function__*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> names;
  for (const auto& j : json_lines(r.out)) {
    EXPECT_EQ(j["kind"], "usdt");
    names.insert(j["name"].get<std::string>());
    for (const auto& loc : j["locations"]) EXPECT_FALSE(loc["semaphore"].is_null());
  }
  EXPECT_EQ(names, (std::set<std::string>{"function__entry", "function__return"}));
}

TEST(list_cli, cxx_pattern_with_scope_is_a_function_glob) {
  auto r = uscope({"list", "--json", kLibjvm, "JavaThread::run*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0]["kind"], "function");
  EXPECT_EQ(rows[0]["name"], "JavaThread::run()");
  EXPECT_EQ(rows[0]["mangled"], "_ZN10JavaThread3runEv");
}

TEST(list_cli, libssl_by_short_name_agrees_with_nm_dynamic) {
  std::istringstream in(
      shell("nm -D --defined-only /usr/lib/x86_64-linux-gnu/libssl.so.3 | awk '$2 ~ /^[TWi]$/ "
            "{print $3}'"));
  std::set<std::string> expected;
  std::string name;
  while (in >> name) expected.insert(name.substr(0, name.find('@')));
  ASSERT_GT(expected.size(), 300u);

  auto r = uscope({"list", "--json", "--functions", "ssl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> listed;
  for (const auto& j : json_lines(r.out)) {
    EXPECT_EQ(j["object"], "/lib/x86_64-linux-gnu/libssl.so.3");
    if (j["source"] == "dynsym") listed.insert(j["mangled"].get<std::string>());
  }
  EXPECT_EQ(listed, expected);
}

TEST(list_cli, process_lists_libc_functions_with_glob) {
  GatedProcess target({fixture("native/target_loop"), "1"});
  ASSERT_TRUE(wait_for_mapping(target.pid(), "libc.so"));
  auto r = uscope({"list", "--json", "-p", std::to_string(target.pid()), "str*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> objects, names;
  for (const auto& j : json_lines(r.out)) {
    objects.insert(j["object"].get<std::string>());
    names.insert(j["name"].get<std::string>());
  }
  EXPECT_TRUE(names.count("strlen")) << r.out;
  bool saw_libc = false;
  for (const auto& o : objects) saw_libc |= o.find("libc.so") != std::string::npos;
  EXPECT_TRUE(saw_libc);

  // One word after -p that names a mapped library is a target, not a pattern.
  auto lib = uscope({"list", "--json", "-p", std::to_string(target.pid()), "c", "malloc"});
  ASSERT_EQ(lib.exit_code, 0) << lib.err;
  auto rows = json_lines(lib.out);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0]["name"], "malloc");
}

TEST(list_cli, text_output_is_grouped_and_aligned) {
  std::string bin = USCOPE_BIN;
  auto r = uscope({"list", bin.substr(0, bin.rfind('/')) + "/uscope-demo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("process_order"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("demo:order__done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("USDT PROBE"), std::string::npos) << r.out;
}

struct BadInput {
  std::vector<std::string> args;
  int exit_code;
  std::string message;
};

TEST(list_cli, bad_input_gets_one_line_error_and_nonzero_exit) {
  std::string truncated = ::testing::TempDir() + "/truncated.elf";
  shell("head -c 300 " + fixture("native/target_loop") + " > " + truncated);
  std::string text_file = ::testing::TempDir() + "/not-elf.txt";
  std::ofstream(text_file) << "hello\n";
  const std::vector<BadInput> cases = {
      {{"list", "/nonexistent/binary"}, 1, "/nonexistent/binary: No such file or directory"},
      {{"list", "/etc"}, 1, "is a directory"},
      {{"list", text_file}, 1, "not an ELF file"},
      {{"list", truncated}, 1, truncated},
      {{"list", "-p", "999999999"}, 1, "999999999"},
      {{"list", kPython, "PyObject_Cal"}, 1, "closest: PyObject_Call"},
      {{"list", kPython, "python:no_such_probe"}, 1, "no USDT probe matches"},
      {{"list", "libdoesnotexist"}, 1, "libdoesnotexist"},
      {{"list"}, 2, "name a file or library"},
  };
  for (const auto& c : cases) {
    auto r = uscope(c.args);
    SCOPED_TRACE(c.args.back());
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// On a terminal, list says how far it is ("reading PATH: N of M functions", rewritten in place
// with \r) and erases that line at the end; off a terminal stderr gets nothing new.
TEST(list_cli, progress_only_on_a_terminal) {
  auto piped = uscope({"list", "--functions", "--json", kPython});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err, "");
  const size_t functions = json_lines(piped.out).size();
  ASSERT_GT(functions, 1000u);
  // script(1) gives uscope a pty; stdout goes to /dev/null, so all the pty carries is stderr.
  std::string tty = shell(fmt::format("script -qec '{} list --functions {} >/dev/null' /dev/null",
                                      USCOPE_BIN, kPython));
  std::string first =
      fmt::format("\ruscope: reading {}: 0 of {} functions\033[K", kPython, grouped(functions));
  EXPECT_TRUE(tty.starts_with(first)) << testing::PrintToString(tty);
  EXPECT_TRUE(tty.ends_with("\r\033[K")) << testing::PrintToString(tty);
  // Nothing but progress lines: each starts with \r, and no newline is left behind.
  EXPECT_EQ(tty.find('\n'), std::string::npos) << testing::PrintToString(tty);
}

}  // namespace
}  // namespace uscope::e2e
