// Go type layouts: DWARF (the fixture built with it), the runtime type descriptors (its stripped
// twin) and uscope's table must give the same offsets, each saying where it came from.
#include "discover/go_types.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "discover/go_buildinfo.h"
#include "tool_output.h"

namespace uscope {
namespace {

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/go/" + name;
}

struct Opened {
  std::unique_ptr<ElfFile> elf;
  std::unique_ptr<DwarfTypes> dwarf;
  std::optional<GoBuildInfo> info;
  std::unique_ptr<GoTypes> types;
};

Opened open_types(const std::string& path, bool with_dwarf = true, bool with_info = true) {
  Opened o;
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf.has_value()) << path;
  o.elf = std::make_unique<ElfFile>(std::move(*elf));
  if (with_dwarf) {
    auto d = DwarfTypes::open(*o.elf);
    EXPECT_TRUE(d.has_value());
    o.dwarf = std::move(*d);
  }
  if (with_info) {
    auto info = read_go_buildinfo(*o.elf);
    EXPECT_TRUE(info.has_value() && info->has_value());
    o.info = **info;
  }
  auto t = GoTypes::open(*o.elf, o.dwarf.get(), o.info ? &*o.info : nullptr);
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
  o.types = std::move(*t);
  return o;
}

struct Want {
  const char* type;
  const char* field;
};
constexpr Want kFields[] = {{"net/http.Request", "Method"},
                            {"net/http.Request", "URL"},
                            {"net/http.Request", "Host"},
                            {"net/url.URL", "Scheme"},
                            {"net/url.URL", "Host"},
                            {"net/url.URL", "Path"},
                            {"net/http.Response", "Status"},
                            {"net/http.Response", "StatusCode"},
                            {"net/http.response", "req"},
                            {"net/http.response", "status"},
                            {"net/http.Request", "ProtoMajor"},
                            {"net/http.Request", "ProtoMinor"},
                            {"net/http.http2responseWriter", "rws"},
                            {"net/http.http2responseWriterState", "req"},
                            {"net/http.http2responseWriterState", "status"}};

TEST(go_types, dwarf_descriptors_and_table_agree) {
  auto with_dwarf = open_types(fixture("gohttp_server"));
  auto stripped = open_types(fixture("gohttp_server_stripped"));
  // The table alone: the stripped binary's descriptors hidden by giving no module (a binary
  // without .gopclntab cannot be used, so compare through a type the descriptors lack instead).
  for (const Want& w : kFields) {
    auto d = with_dwarf.types->field(w.type, w.field);
    ASSERT_TRUE(d.has_value()) << w.type << "." << w.field << ": " << d.error().message;
    EXPECT_EQ(d->source, GoTypeSource::Dwarf);
    auto s = stripped.types->field(w.type, w.field);
    ASSERT_TRUE(s.has_value()) << w.type << "." << w.field << ": " << s.error().message;
    EXPECT_EQ(s->source, GoTypeSource::TypeDescriptor);
    EXPECT_EQ(s->offset, d->offset) << w.type << "." << w.field;
  }
  auto url = stripped.types->field("*net/http.Request", "URL");
  ASSERT_TRUE(url.has_value());
  EXPECT_EQ(url->type.name, "*net/url.URL");
  EXPECT_EQ(url->type.kind, GoKind::Pointer);
  auto method = stripped.types->field("net/http.Request", "Method");
  ASSERT_TRUE(method.has_value());
  EXPECT_EQ(method->type.kind, GoKind::String);
}

TEST(go_types, table_matches_go1_19_dwarf) {
  auto with_dwarf = open_types(fixture("gohttp_server"));
  ASSERT_TRUE(with_dwarf.info.has_value());
  EXPECT_EQ(with_dwarf.info->minor, 19);
  size_t listed = 0;
  for (const char* type :
       {"net/http.Request", "net/url.URL", "net/http.Response", "net/http.response",
        "net/http.http2responseWriter", "net/http.http2responseWriterState", "runtime.g",
        "runtime.gobuf"})
    for (const auto& f : go_table_fields(*with_dwarf.info, type)) {
      auto d = with_dwarf.types->field(type, f.name);
      ASSERT_TRUE(d.has_value()) << type << "." << f.name;
      EXPECT_EQ(d->offset, f.offset) << type << "." << f.name;
      ++listed;
    }
  // And runtime.g's atomicstatus, startpc, waitreason and sched, and runtime.gobuf's sp, pc, bp.
  EXPECT_EQ(listed, std::size(kFields) + 7);
}

// The offsets the Go toolchain itself gives (unsafe.Offsetof and reflect in a program it built),
// against each of uscope's three sources: DWARF, the runtime's type descriptors, the table.
TEST(go_types, offsets_are_the_toolchains) {
  std::map<std::pair<std::string, std::string>, uint64_t> toolchain;
  {
    std::istringstream in(test::command_output(fixture("gooffsets")));
    std::string type, field;
    uint64_t offset = 0;
    while (in >> type >> field >> offset) toolchain[{type, field}] = offset;
  }
  ASSERT_EQ(toolchain.size(), std::size(kFields)) << "gooffsets printed too little";
  auto with_dwarf = open_types(fixture("gohttp_server"));
  auto stripped = open_types(fixture("gohttp_server_stripped"));
  ASSERT_TRUE(with_dwarf.info.has_value());
  for (const auto& [key, offset] : toolchain) {
    const auto& [type, field] = key;
    SCOPED_TRACE(type + "." + field);
    auto d = with_dwarf.types->field(type, field);
    ASSERT_TRUE(d.has_value()) << d.error().message;
    EXPECT_EQ(d->offset, offset) << "DWARF";
    auto s = stripped.types->field(type, field);
    ASSERT_TRUE(s.has_value()) << s.error().message;
    EXPECT_EQ(s->offset, offset) << "type descriptors";
    bool in_table = false;
    for (const auto& f : go_table_fields(*with_dwarf.info, type))
      if (f.name == field) {
        in_table = true;
        EXPECT_EQ(f.offset, offset) << "table";
      }
    EXPECT_TRUE(in_table);
  }
}

// The client binary has no server types: the table answers for go1.19, and says so.
TEST(go_types, table_is_the_last_resort_and_says_so) {
  auto client = open_types(fixture("gohttp_client_stripped"));
  auto server = open_types(fixture("gohttp_server"));
  auto s = client.types->field("net/http.response", "status");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->source, GoTypeSource::VersionTable);
  auto d = server.types->field("net/http.response", "status");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(s->offset, d->offset);
  // Without the Go version the table is not used: an error, never a guess.
  auto no_version = open_types(fixture("gohttp_client_stripped"), false, false);
  auto n = no_version.types->field("net/http.response", "status");
  ASSERT_FALSE(n.has_value());
  EXPECT_NE(n.error().message.find("DWARF"), std::string::npos) << n.error().message;
}

TEST(go_types, unknown_fields_name_the_closest) {
  auto stripped = open_types(fixture("gohttp_server_stripped"));
  auto r = stripped.types->field("net/http.Request", "Methd");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("closest: Method"), std::string::npos) << r.error().message;
}

TEST(go_types, names_descriptors_by_address) {
  auto stripped = open_types(fixture("gohttp_server_stripped"));
  auto t = stripped.types->type("net/http.Request");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->source, GoTypeSource::TypeDescriptor);
  EXPECT_EQ(t->kind, GoKind::Struct);
  EXPECT_GT(t->size, 100u);
  auto s = stripped.types->type("string");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->kind, GoKind::String);
}

}  // namespace
}  // namespace uscope
