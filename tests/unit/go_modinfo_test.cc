// Go's module info text: what cmd/go 1.19 writes (GOPATH and module builds, a replaced
// dependency followed by Go 1.19's empty line), Go's quoting of build settings, and every line
// Go's own parser refuses, skipped and named while the rest is still read.
#include "discover/go_modinfo.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "discover/elf_file.h"
#include "discover/go_buildinfo.h"

namespace uscope {
namespace {

// `go build -ldflags='-s -w' x.go` in GOPATH mode, as Go 1.19 stores it.
const char* const kGopathBuild =
    "path\tcommand-line-arguments\n"
    "build\t-compiler=gc\n"
    "build\t-ldflags=\"-s -w\"\n"
    "build\tCGO_ENABLED=1\n"
    "build\tCGO_CFLAGS=\n"
    "build\tGOARCH=amd64\n"
    "build\tGOOS=linux\n"
    "build\tGOAMD64=v1\n";

// A module build with a directory replacement (the fixture gomod's text, with a sum added): Go
// 1.19 writes an empty line after every replacement.
const char* const kModuleBuild =
    "path\texample.com/gomod\n"
    "mod\texample.com/gomod\t(devel)\t\n"
    "dep\texample.com/greet\tv0.1.0\n"
    "=>\t./greet\t(devel)\t\n"
    "\n"
    "dep\tgolang.org/x/text\tv0.3.7\th1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=\n"
    "build\t-compiler=gc\n"
    "build\tvcs=git\n"
    "build\tvcs.revision=0123456789abcdef\n"
    "build\tvcs.modified=true\n";

TEST(go_modinfo, gopath_build_has_a_package_and_settings_but_no_module) {
  const GoModInfo m = parse_go_modinfo(kGopathBuild);
  EXPECT_EQ(m.path, "command-line-arguments");
  EXPECT_FALSE(m.main);
  EXPECT_TRUE(m.deps.empty());
  ASSERT_EQ(m.settings.size(), 7u);
  EXPECT_EQ(m.settings[0].key, "-compiler");
  EXPECT_EQ(m.settings[0].value, "gc");
  EXPECT_EQ(m.settings[1].key, "-ldflags");
  EXPECT_EQ(m.settings[1].value, "-s -w");  // unquoted
  EXPECT_EQ(m.settings[3].value, "");
  ASSERT_NE(m.setting("GOARCH"), nullptr);
  EXPECT_EQ(*m.setting("GOARCH"), "amd64");
  EXPECT_EQ(m.setting("vcs.revision"), nullptr);
  EXPECT_TRUE(m.problems.empty());
}

TEST(go_modinfo, module_build_with_a_replaced_dependency) {
  const GoModInfo m = parse_go_modinfo(kModuleBuild);
  EXPECT_TRUE(m.problems.empty()) << m.problems[0];
  EXPECT_EQ(m.path, "example.com/gomod");
  ASSERT_TRUE(m.main);
  EXPECT_EQ(m.main->path, "example.com/gomod");
  EXPECT_EQ(m.main->version, "(devel)");
  EXPECT_EQ(m.main->sum, "");
  EXPECT_FALSE(m.main->replace);
  ASSERT_EQ(m.deps.size(), 2u);
  EXPECT_EQ(m.deps[0].path, "example.com/greet");
  EXPECT_EQ(m.deps[0].version, "v0.1.0");
  ASSERT_TRUE(m.deps[0].replace);
  EXPECT_EQ(m.deps[0].replace->path, "./greet");
  EXPECT_EQ(m.deps[0].replace->version, "(devel)");
  EXPECT_EQ(m.deps[1].path, "golang.org/x/text");
  EXPECT_EQ(m.deps[1].sum, "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=");
  EXPECT_FALSE(m.deps[1].replace);
  ASSERT_NE(m.setting("vcs.revision"), nullptr);
  EXPECT_EQ(*m.setting("vcs.revision"), "0123456789abcdef");
}

TEST(go_modinfo, replacement_of_the_main_module) {
  const GoModInfo m =
      parse_go_modinfo("mod\tex.com/a\tv1.0.0\th1:x=\n=>\tex.com/b\tv1.1.0\th1:y=\n");
  ASSERT_TRUE(m.main);
  ASSERT_TRUE(m.main->replace);
  EXPECT_EQ(m.main->replace->path, "ex.com/b");
  EXPECT_EQ(m.main->replace->sum, "h1:y=");
}

TEST(go_modinfo, quoted_keys_and_values_as_strconv_reads_them) {
  const GoModInfo m = parse_go_modinfo(
      "build\t\"key with space\"=\"a\\tb\\\"c\\\\\"\n"
      "build\t-gcflags=`all=-N -l`\n"
      "build\tX=\"\\x41\\101\\u00e9\\U0001F600\\n\"\n"
      "build\t\"\"=empty-key\n"
      "build\t`k=v`=1\n");
  EXPECT_TRUE(m.problems.empty()) << m.problems[0];
  ASSERT_EQ(m.settings.size(), 5u);
  EXPECT_EQ(m.settings[0].key, "key with space");
  EXPECT_EQ(m.settings[0].value, "a\tb\"c\\");
  EXPECT_EQ(m.settings[1].value, "all=-N -l");
  EXPECT_EQ(m.settings[2].value, "AA\xc3\xa9\xf0\x9f\x98\x80\n");
  EXPECT_EQ(m.settings[3].key, "");
  EXPECT_EQ(m.settings[4].key, "k=v");
  EXPECT_EQ(m.settings[4].value, "1");
}

TEST(go_modinfo, lines_go_refuses_are_skipped_and_named) {
  const GoModInfo m = parse_go_modinfo(
      "path\tex.com/a\n"               // 1
      "dep\tonly-a-path\n"             // 2: too few columns
      "dep\ta\tb\tc\td\n"              // 3: too many
      "=>\tex.com/r\tv1\th1:r=\n"      // 4: replaces nothing (line 3 was refused)
      "dep\tex.com/ok\tv1.0.0\n"       // 5
      "=>\tex.com/r\tv1\n"             // 6: two columns
      "=>\tex.com/r\tv1\th1:r=\n"      // 7: replaces ex.com/ok
      "=>\tex.com/s\tv2\th1:s=\n"      // 8: a second replacement
      "build\t\n"                      // 9: no '='
      "build\t=v\n"                    // 10: no key
      "build\tkey\n"                   // 11: no '=' after the key
      "build\tk y=v\n"                 // 12: unquoted key with a space
      "build\tk=a b\n"                 // 13: unquoted value with a space
      "build\tk=\"unterminated\n"      // 14
      "build\tk=\"bad \\q escape\"\n"  // 15
      "build\t\"k\"v\n"                // 16: no '=' after the quoted key
      "build\tk=\"\\ud800\"\n"         // 17: a surrogate is no rune
      "build\tk=\"\\400\"\n"           // 18: octal past \377
      "build\tk=\"x\"trailing\n"       // 19: more after the quoted value
      "unknown\tline\n"                // 20: ignored, as Go does
      "build\tGOOS=linux\n");          // 21
  EXPECT_EQ(m.path, "ex.com/a");
  ASSERT_EQ(m.deps.size(), 1u);
  EXPECT_EQ(m.deps[0].path, "ex.com/ok");
  ASSERT_TRUE(m.deps[0].replace);
  EXPECT_EQ(m.deps[0].replace->version, "v1");
  ASSERT_EQ(m.settings.size(), 1u);
  EXPECT_EQ(m.settings[0].key, "GOOS");

  const std::vector<std::string> expected = {
      "line 2: expected 2 or 3 columns; got 1",
      "line 3: expected 2 or 3 columns; got 4",
      "line 4: replacement with no module on the line before",
      "line 6: expected 3 columns for replacement; got 2",
      "line 8: replacement with no module on the line before",
      "line 9: build line missing '='",
      "line 10: build line with missing key",
      "line 11: build line missing '=' after key",
      "line 12: unquoted key \"k y\" must be quoted",
      "line 13: unquoted value \"a b\" must be quoted",
      "line 14: invalid quoted value in build line",
  };
  ASSERT_GE(m.problems.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(m.problems[i], expected[i]);
  EXPECT_EQ(m.problems.size(), 16u);  // lines 2-4, 6, 8-19: all shown
  EXPECT_EQ(m.problems[12], "line 16: unexpected character after quoted key: v");
  EXPECT_EQ(m.problems.back(), "line 19: invalid quoted value in build line");
}

TEST(go_modinfo, problems_are_capped) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "build\tbroken\n";
  text += "build\tGOOS=linux\n";
  const GoModInfo m = parse_go_modinfo(text);
  ASSERT_EQ(m.problems.size(), GoModInfo::kMaxProblems);
  EXPECT_EQ(m.problems[0], "line 1: build line missing '=' after key");
  EXPECT_EQ(m.problems.back(), "85 more lines skipped");
  ASSERT_EQ(m.settings.size(), 1u);
}

TEST(go_modinfo, last_line_without_newline_and_empty_text) {
  const GoModInfo m = parse_go_modinfo("mod\tex.com/a\tv1\nbuild\tGOOS=linux");
  ASSERT_TRUE(m.main);
  ASSERT_EQ(m.settings.size(), 1u);
  EXPECT_EQ(m.settings[0].value, "linux");

  const GoModInfo empty = parse_go_modinfo("");
  EXPECT_EQ(empty.path, "");
  EXPECT_FALSE(empty.main);
  EXPECT_TRUE(empty.settings.empty());
  EXPECT_TRUE(empty.problems.empty());
}

TEST(go_modinfo, setting_is_the_last_of_its_key) {
  const GoModInfo m = parse_go_modinfo("build\tGOOS=linux\nbuild\tGOOS=darwin\n");
  ASSERT_NE(m.setting("GOOS"), nullptr);
  EXPECT_EQ(*m.setting("GOOS"), "darwin");
}

TEST(go_modinfo, setting_text_quotes_as_go_version_m_does) {
  EXPECT_EQ(go_setting_text("gc", false), "gc");
  EXPECT_EQ(go_setting_text("", false), "");
  EXPECT_EQ(go_setting_text("", true), "\"\"");
  EXPECT_EQ(go_setting_text("-s -w", false), "\"-s -w\"");
  EXPECT_EQ(go_setting_text("a=b", false), "a=b");
  EXPECT_EQ(go_setting_text("a=b", true), "\"a=b\"");
  EXPECT_EQ(go_setting_text("q\"`\\", false), "\"q\\\"`\\\\\"");
  EXPECT_EQ(go_setting_text("\x1b[31m", false), "\"\\x1b[31m\"");  // never raw to a terminal
  EXPECT_EQ(go_setting_text("\xc3\xa9", false), "\xc3\xa9");

  // What it writes reads back as the same value.
  const std::vector<std::string> values = {"-s -w", "a\tb\nc", "q\"`\\", std::string("\0\x7f", 2)};
  for (const std::string& v : values) {
    const GoModInfo m = parse_go_modinfo("build\tk=" + go_setting_text(v, false) + "\n");
    ASSERT_EQ(m.settings.size(), 1u) << v;
    EXPECT_EQ(m.settings[0].value, v);
  }
}

TEST(go_modinfo, fixture_module_build) {
  auto elf = ElfFile::open(std::string(USCOPE_FIXTURE_DIR) + "/go/gomod");
  ASSERT_TRUE(elf) << elf.error().message;
  auto bi = read_go_buildinfo(*elf);
  ASSERT_TRUE(bi) << bi.error().message;
  ASSERT_TRUE(bi->has_value());
  EXPECT_EQ((*bi)->main_path, "example.com/gomod");
  const GoModInfo m = parse_go_modinfo((*bi)->mod_info);
  EXPECT_TRUE(m.problems.empty()) << m.problems[0];
  EXPECT_EQ(m.path, "example.com/gomod");
  ASSERT_EQ(m.deps.size(), 2u);
  EXPECT_EQ(m.deps[0].path, "example.com/greet");
  ASSERT_TRUE(m.deps[0].replace);
  EXPECT_EQ(m.deps[0].replace->path, "./greet");
  EXPECT_EQ(m.deps[1].path, "example.com/quote");
  EXPECT_EQ(m.deps[1].version, "v1.2.3");
  ASSERT_NE(m.setting("-compiler"), nullptr);
  EXPECT_EQ(*m.setting("-compiler"), "gc");
}

}  // namespace
}  // namespace uscope
