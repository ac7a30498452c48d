// `list --info`'s text and JSON for a hand-made Go object and a non-Go one.
#include "sink/object_info_output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "discover/go_modinfo.h"

namespace uscope {
namespace {

ObjectInfo go_object() {
  ObjectInfo o;
  o.path = "/srv/app";
  o.machine = "x86-64";
  o.is_64bit = true;
  o.symtab_functions = 1400;
  o.dwarf = {".debug_info", "SHF_COMPRESSED"};
  GoFacts go;
  go.build = GoBuildInfo{};
  go.build->version = "go1.19.8";
  go.build->major = 1;
  go.build->minor = 19;
  go.build->mod_info =
      "path\texample.com/app\n"
      "mod\texample.com/app\t(devel)\t\n"
      "dep\texample.com/greet\tv0.1.0\n"
      "=>\t./greet\t(devel)\t\n"
      "dep\tgolang.org/x/text\tv0.3.7\th1:abc=\n"
      "build\t-ldflags=\"-s -w\"\n"
      "build\tGOARCH=amd64\n"
      "build\tbroken\n";
  go.modules = parse_go_modinfo(go.build->mod_info);
  go.pclntab_functions = 1398;
  o.go = go;
  return o;
}

TEST(object_info_output, go_text_is_aligned_and_shows_modules_as_go_does) {
  const std::string text = object_info_text(go_object());
  const std::string expected =
      "/srv/app (executable, x86-64, 64-bit, statically linked)\n"
      "  symbols         .symtab: 1400 functions; no .dynsym\n"
      "  DWARF           .debug_info (compressed: SHF_COMPRESSED)\n"
      "  Go              go1.19.8, register ABI (arguments in registers)\n"
      "  functions       1398 in .gopclntab\n"
      "  main package    example.com/app\n"
      "  main module     example.com/app (devel)\n"
      "  dependencies    2\n"
      "    example.com/greet  v0.1.0  => ./greet (devel)\n"
      "    golang.org/x/text  v0.3.7  h1:abc=\n"
      "  build settings\n"
      "    -ldflags=\"-s -w\"\n"
      "    GOARCH=amd64\n"
      "  module info     skipped line 8: build line missing '=' after key\n";
  EXPECT_EQ(text, expected);
}

TEST(object_info_output, go_json_has_every_fact) {
  const nlohmann::json j = object_info_json(go_object());
  EXPECT_EQ(j["kind"], "info");
  EXPECT_EQ(j["object"], "/srv/app");
  EXPECT_EQ(j["symtab_functions"], 1400);
  EXPECT_TRUE(j["dynsym_functions"].is_null());
  EXPECT_EQ(j["dwarf"]["section"], ".debug_info");
  const auto& go = j["go"];
  EXPECT_EQ(go["version"], "go1.19.8");
  EXPECT_EQ(go["register_abi"], true);
  EXPECT_EQ(go["path"], "example.com/app");
  EXPECT_EQ(go["main"]["version"], "(devel)");
  ASSERT_EQ(go["deps"].size(), 2u);
  EXPECT_EQ(go["deps"][0]["replace"]["path"], "./greet");
  EXPECT_TRUE(go["deps"][1]["replace"].is_null());
  EXPECT_EQ(go["deps"][1]["sum"], "h1:abc=");
  ASSERT_EQ(go["settings"].size(), 2u);
  EXPECT_EQ(go["settings"][0]["key"], "-ldflags");
  EXPECT_EQ(go["settings"][0]["value"], "-s -w");
  EXPECT_EQ(go["gopclntab_functions"], 1398);
  EXPECT_EQ(go["modinfo_problems"].size(), 1u);
}

TEST(object_info_output, non_go_object_says_so) {
  ObjectInfo o;
  o.path = "/bin/ls";
  o.machine = "x86-64";
  o.is_64bit = true;
  o.pie = true;
  o.dynamic = true;
  o.build_id = "abcd";
  o.dynsym_functions = 120;
  o.debuglink = "ls.debug";
  EXPECT_EQ(object_info_text(o),
            "/bin/ls (PIE executable, x86-64, 64-bit, dynamically linked, build-id abcd)\n"
            "  symbols         no .symtab; .dynsym: 120 functions\n"
            "  DWARF           none; debug link to ls.debug\n"
            "  Go              no: not a Go program (no .go.buildinfo or .gopclntab section)\n");
  const nlohmann::json j = object_info_json(o);
  EXPECT_TRUE(j["go"].is_null());
  EXPECT_TRUE(j["dwarf"].is_null());
  EXPECT_EQ(j["debuglink"], "ls.debug");
}

TEST(object_info_output, bytes_from_the_binary_stay_printable) {
  ObjectInfo o = go_object();
  o.go->modules.deps[1].path = "evil\x1b[2Jpath";
  o.go->modules.settings[0].value = "\x1b]0;title\x07";
  const std::string text = object_info_text(o);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x07'), std::string::npos) << text;
  o.go->modules.deps[1].path = "\xff\xfe";  // not UTF-8: JSON still dumps
  testing::internal::CaptureStdout();
  print_object_info(o, OutputFormat::Json, stdout);
  const std::string line = testing::internal::GetCapturedStdout();
  EXPECT_TRUE(nlohmann::json::accept(line)) << line;
}

}  // namespace
}  // namespace uscope
