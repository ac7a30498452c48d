// `uscope list --info` on the Go fixtures, with DWARF and stripped, checked against the Go
// toolchain's own reading of them (`go version`, `go version -m`), on a C program (not Go), and
// on bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// `go version -m PATH`: the version (its first line's "PATH: go1.19.8") and the module info
// lines, without their leading tab and without the empty line Go 1.19 writes after a
// replacement.
struct GoVersionM {
  std::string version;
  std::vector<std::string> lines;
};

GoVersionM go_version_m(const std::string& path) {
  std::istringstream in(shell("go version -m " + path));
  GoVersionM r;
  std::string line;
  if (std::getline(in, line)) r.version = line.substr(line.rfind(": ") + 2);
  while (std::getline(in, line)) {
    if (line.size() > 1 && line[0] == '\t') r.lines.push_back(line.substr(1));
  }
  return r;
}

// The toolchain the fixtures were built with: "go version go1.19.8 linux/amd64" -> "go1.19.8".
std::string toolchain_version() {
  std::istringstream in(shell("go version"));
  std::string go, version, v;
  in >> go >> version >> v;
  return v;
}

// The module lines `go version -m` prints, rebuilt from list --info's JSON (Go 1.19's format).
std::vector<std::string> module_lines(const nlohmann::json& go) {
  std::vector<std::string> lines;
  auto module = [&](const std::string& word, const nlohmann::json& m) {
    const std::string head =
        word + "\t" + m["path"].get<std::string>() + "\t" + m["version"].get<std::string>();
    if (m["replace"].is_null()) {
      lines.push_back(head + "\t" + m["sum"].get<std::string>());
    } else {
      lines.push_back(head);
      const auto& r = m["replace"];
      lines.push_back("=>\t" + r["path"].get<std::string>() + "\t" +
                      r["version"].get<std::string>() + "\t" + r["sum"].get<std::string>());
    }
  };
  lines.push_back("path\t" + go["path"].get<std::string>());
  if (!go["main"].is_null()) module("mod", go["main"]);
  for (const auto& d : go["deps"]) module("dep", d);
  return lines;
}

// The "    key=value" lines under "build settings" in the text output, as "build\tkey=value".
std::vector<std::string> text_settings(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string line;
  bool in_settings = false;
  while (std::getline(in, line)) {
    if (line.rfind("  build settings", 0) == 0) {
      in_settings = true;
    } else if (in_settings && line.rfind("    ", 0) == 0) {
      out.push_back("build\t" + line.substr(4));
    } else {
      in_settings = false;
    }
  }
  return out;
}

// The functions `go tool nm` lists in a Go binary with symbols: text symbols with a size (the
// zero-size runtime.text and runtime.etext mark the text's bounds). A stripped binary has the
// same functions as its twin built with symbols.
size_t go_tool_nm_functions(const std::string& path) {
  std::istringstream in(shell("go tool nm -size " + path));
  size_t n = 0;
  std::string addr, size, type, name;
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    if ((l >> addr >> size >> type) && (type == "T" || type == "t") && size != "0") ++n;
  }
  return n;
}

void agrees_with_go_version_m(const std::string& name) {
  SCOPED_TRACE(name);
  const std::string path = fixture("go/" + name);
  const GoVersionM expected = go_version_m(path);
  ASSERT_FALSE(expected.lines.empty());

  auto json = uscope({"list", "--info", "--json", path});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto rows = json_lines(json.out);
  ASSERT_EQ(rows.size(), 1u) << json.out;
  const auto& go = rows[0]["go"];
  ASSERT_TRUE(go.is_object()) << json.out;
  EXPECT_EQ(go["version"], toolchain_version());
  EXPECT_EQ(go["version"], expected.version);
  EXPECT_EQ(go["register_abi"], true);  // Go 1.19 on amd64
  EXPECT_TRUE(go["modinfo_problems"].empty()) << json.out;
  const std::string with_symbols =
      name.ends_with("_stripped") ? path.substr(0, path.size() - std::string("_stripped").size())
                                  : path;
  const size_t functions = go_tool_nm_functions(with_symbols);
  EXPECT_GT(functions, 1000u) << "go tool nm " << with_symbols;
  EXPECT_EQ(go["gopclntab_functions"].get<size_t>(), functions);

  auto text = uscope({"list", "--info", path});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  Go              " + expected.version + ", register ABI"),
            std::string::npos)
      << text.out;

  // Every line of `go version -m`: modules from the JSON, build settings from the text.
  std::vector<std::string> got = module_lines(go);
  for (auto& s : text_settings(text.out)) got.push_back(std::move(s));
  EXPECT_EQ(got, expected.lines) << text.out;
}

TEST(go_info, module_build_agrees_with_go_version_m) {
  agrees_with_go_version_m("gomod");
  agrees_with_go_version_m("gomod_stripped");
}

TEST(go_info, gopath_build_agrees_with_go_version_m) {
  agrees_with_go_version_m("gohi");
  agrees_with_go_version_m("gohi_stripped");
}

TEST(go_info, module_text_shows_main_module_and_dependencies) {
  auto r = uscope({"list", "--info", fixture("go/gomod")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {
           "  main package    example.com/gomod\n",
           "  main module     example.com/gomod (devel)\n",
           "  dependencies    2\n",
           "    example.com/greet  v0.1.0  => ./greet (devel)\n",
           "    example.com/quote  v1.2.3\n",
       }) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(go_info, stripped_binary_has_no_symtab_or_dwarf_but_the_same_go_tables) {
  auto full = uscope({"list", "--info", "--json", fixture("go/gomod")});
  auto stripped = uscope({"list", "--info", "--json", fixture("go/gomod_stripped")});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  ASSERT_EQ(stripped.exit_code, 0) << stripped.err;
  const auto f = nlohmann::json::parse(full.out);
  const auto s = nlohmann::json::parse(stripped.out);
  EXPECT_GT(f["symtab_functions"].get<size_t>(), 1000u);
  EXPECT_EQ(f["dwarf"]["section"], ".debug_info");
  EXPECT_TRUE(s["symtab_functions"].is_null());
  EXPECT_TRUE(s["dwarf"].is_null());
  EXPECT_EQ(s["go"]["gopclntab_functions"], f["go"]["gopclntab_functions"]);
  EXPECT_EQ(s["go"]["deps"], f["go"]["deps"]);
  // `go tool buildid` reads the same note.
  EXPECT_EQ(s["go"]["build_id"], trimmed(shell("go tool buildid " + fixture("go/gomod_stripped"))));

  auto text = uscope({"list", "--info", fixture("go/gomod_stripped")});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  symbols         no .symtab"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  DWARF           none"), std::string::npos) << text.out;
}

TEST(go_info, running_go_program_by_pid) {
  const int port = free_port();
  GatedProcess server({fixture("go/gohttp_server_stripped"), std::to_string(port)});
  auto r = uscope({"list", "--info", "--json", "-p", std::to_string(server.pid())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["go"]["version"], toolchain_version());
  EXPECT_EQ(j["go"]["path"], "command-line-arguments");
}

TEST(go_info, c_program_is_described_and_said_not_to_be_go) {
  const std::string ls = "/bin/ls";
  auto text = uscope({"list", "--info", ls});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("not a Go program (no .go.buildinfo"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("dynamically linked"), std::string::npos) << text.out;

  auto json = uscope({"list", "--info", "--json", ls});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["kind"], "info");
  EXPECT_TRUE(j["go"].is_null());
  EXPECT_EQ(j["machine"], "x86-64");
  EXPECT_EQ(j["dynamic"], true);
  const std::string build_id = j["build_id"].get<std::string>();
  EXPECT_NE(shell("readelf -n " + ls).find(build_id), std::string::npos);
}

struct BadInput {
  std::vector<std::string> args;
  int exit_code;
  std::string message;
};

TEST(go_info, bad_input_gets_one_line_error_and_nonzero_exit) {
  const std::vector<BadInput> cases = {
      {{"list", "--info", "/nonexistent/goapp"},
       1,
       "/nonexistent/goapp: No such file or directory"},
      {{"list", "--info", "/etc"}, 1, "is a directory"},
      {{"list", "--info"}, 2, "name a file or library to describe, or give -p PID"},
      {{"list", "--info", fixture("go/gomod"), "main.*"}, 2, "one TARGET and no pattern"},
      {{"list", "--info", "--usdt", fixture("go/gomod")}, 2, "drop --functions/--usdt"},
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

}  // namespace
}  // namespace uscope::e2e
