// Go names resolved against the Go fixtures, each built with DWARF and stripped: a declared list
// on the stripped binary builds the expressions DWARF gives on the other, argN is the Nth
// parameter, fields come from the runtime type descriptors when DWARF is gone, every name says
// where it was found, and each refusal says why.
#include "plan/go_name_resolver.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "discover/elf_file.h"
#include "plan/name_resolver.h"
#include "plan/probe_parse.h"

namespace uscope {
namespace {

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/go/" + name;
}

std::string render(const Expr& e) {
  std::string kids;
  for (const Expr& c : e.children) kids += " " + render(c);
  switch (e.op) {
    case Expr::Op::Reg:
      return e.text;
    case Expr::Op::Int:
      return std::to_string(e.value);
    case Expr::Op::Entry:
      return "(entry" + kids + ")";
    case Expr::Op::Str:
      return "(str" + kids + ")";
    case Expr::Op::Deref:
      return "(*" + std::string(e.is_signed ? "s" : "u") + std::to_string(e.width * 8) + kids + ")";
    case Expr::Op::Binary:
      return "(" + e.op_text + kids + ")";
    case Expr::Op::Cast:
      return "(cast" + std::to_string(e.width * 8) + kids + ")";
    case Expr::Op::GoValue:
      return "(go " + e.text + kids + ")";
    default:
      return "?" + probe_detail::describe(e);
  }
}

struct Resolved {
  Result<ProbeSpec> spec;
  std::vector<NameOrigin> origins;
  std::string args() const {
    std::string out;
    if (spec)
      for (const Expr& a : spec->args) out += (out.empty() ? "" : ", ") + render(a);
    return out;
  }
  std::string error() const { return spec ? "" : spec.error().message; }
  std::string source_of(const std::string& name) const {
    for (const auto& o : origins)
      if (o.name == name) return o.source;
    return "<none>";
  }
};

// `text` resolved at the function it names in `binary`, as the planner resolves it.
Resolved resolve(const std::string& binary, const std::string& text) {
  TargetContext ctx{nullptr, fixture(binary), 0};
  ObjectCache cache(ctx);
  auto spec = parse_probe_spec(text);
  EXPECT_TRUE(spec.has_value()) << text << ": " << (spec ? "" : spec.error().message);
  if (!spec) return {tl::unexpected(spec.error()), {}};
  auto sites = match_sites(cache, *spec);
  EXPECT_TRUE(sites.has_value() && sites->size() == 1) << text;
  if (!sites || sites->empty()) return {fail("no site"), {}};
  const MatchedSite& m = sites->front();
  Resolved r{ProbeSpec{}, {}};
  r.spec = resolve_names(*spec, *m.object, m.function_start, m.label, &r.origins);
  return r;
}

TEST(go_names, a_declared_list_builds_what_dwarf_builds) {
  auto dwarf = resolve("gowork", R"(p::main.work "%d %s", i, tag)");
  ASSERT_TRUE(dwarf.spec) << dwarf.error();
  EXPECT_EQ(dwarf.args(), "rax, (str rbx rcx)");
  EXPECT_EQ(dwarf.source_of("tag"), "DWARF");
  auto declared = resolve("gowork_stripped", R"(p::main.work(i int, tag string) "%d %s", i, tag)");
  ASSERT_TRUE(declared.spec) << declared.error();
  EXPECT_EQ(declared.args(), dwarf.args());
  EXPECT_EQ(declared.source_of("tag"), "the declared list and the Go register ABI (amd64)");
  ASSERT_EQ(declared.origins.size(), 2u);
  EXPECT_EQ(declared.origins[1].where, "in rbx, rcx (string)");
}

TEST(go_names, argN_is_the_nth_parameter) {
  auto dwarf = resolve("gowork", R"(p::main.work (arg1 == 3) "%d %s %v", arg1, arg2, arg2)");
  ASSERT_TRUE(dwarf.spec) << dwarf.error();
  EXPECT_EQ(dwarf.args(), "rax, (str rbx rcx), (str rbx rcx)");
  EXPECT_EQ(render(*dwarf.spec->predicate), "(== rax 3)");
  auto declared =
      resolve("gowork_stripped", R"(p::main.work(i int, tag string) "%d %s", arg1, arg2)");
  ASSERT_TRUE(declared.spec) << declared.error();
  EXPECT_EQ(declared.args(), "rax, (str rbx rcx)");
  // Without DWARF or a list, argN is Go's Nth register.
  auto plain = resolve("gowork_stripped", R"(p::main.work "%d %d", arg1, arg2)");
  ASSERT_TRUE(plain.spec) << plain.error();
  EXPECT_EQ(plain.spec->args[1].op, Expr::Op::Arg);
  EXPECT_TRUE(plain.origins.empty());
}

TEST(go_names, return_probes_read_parameters_saved_at_entry) {
  auto r = resolve("gowork_stripped",
                   R"(r::main.work(i int, tag string) "%d %s %d", i, $entry(arg2), retval)");
  ASSERT_TRUE(r.spec) << r.error();
  EXPECT_EQ(r.args(), "(entry rax), (str (entry rbx) (entry rcx)), ?retval");
  EXPECT_EQ(r.origins[0].where, "saved at entry from rax (int)");
}

// The receiver of a method is its first parameter.
TEST(go_names, methods_take_the_receiver_first) {
  auto dwarf = resolve("gohttp_server", R"(r::main.(*Store).Get "%s %d", key, s.hits)");
  ASSERT_TRUE(dwarf.spec) << dwarf.error();
  auto declared =
      resolve("gohttp_server_stripped",
              R"(r::main.(*Store).Get(s *main.Store, key string) "%s %d", key, s.hits)");
  ASSERT_TRUE(declared.spec) << declared.error();
  EXPECT_EQ(declared.args(), dwarf.args());
  EXPECT_EQ(declared.args(), "(str (entry rbx) (entry rcx)), (*s64 (+ (entry rax) 16))");
  EXPECT_EQ(declared.source_of("s.hits"), "the runtime type descriptor");
  EXPECT_EQ(dwarf.source_of("s.hits"), "DWARF");
}

TEST(go_names, fields_through_pointers_come_from_type_descriptors_without_dwarf) {
  const std::string fields = R"( "%s %s %v", req.Method, req.URL.Path, rw)";
  auto dwarf = resolve("gohttp_server", "p::net/http.serverHandler.ServeHTTP" + fields);
  ASSERT_TRUE(dwarf.spec) << dwarf.error();
  auto declared = resolve("gohttp_server_stripped",
                          "p::net/http.serverHandler.ServeHTTP(sh net/http.serverHandler, "
                          "rw net/http.ResponseWriter, req *net/http.Request)" +
                              fields);
  ASSERT_TRUE(declared.spec) << declared.error();
  EXPECT_EQ(declared.args(),
            "(str (*u64 rdi) (*u64 (+ rdi 8))), (str (*u64 (+ (*u64 (+ rdi 16)) 56)) (*u64 (+ (+ "
            "(*u64 (+ rdi 16)) 56) 8))), (go net/http.ResponseWriter rbx rcx)");
  // DWARF reads the same words; its name for the interface is the runtime's.
  EXPECT_EQ(dwarf.spec->args[0].children.size(), 2u);
  EXPECT_EQ(render(dwarf.spec->args[1]), render(declared.spec->args[1]));
  EXPECT_EQ(declared.source_of("req.URL.Path"), "the runtime type descriptor");
  EXPECT_EQ(dwarf.source_of("req.URL.Path"), "DWARF");
  for (const auto& o : declared.origins) {
    if (o.name == "req.URL") {
      EXPECT_EQ(o.where, "at offset 16 in net/http.Request (*net/url.URL)");
    }
  }
}

TEST(go_names, a_declared_list_is_checked_against_dwarf) {
  auto ok = resolve("gowork", R"(p::main.work(n int, s string) "%d %s", n, s)");
  ASSERT_TRUE(ok.spec) << ok.error();
  EXPECT_EQ(ok.args(), "rax, (str rbx rcx)");
  EXPECT_EQ(ok.source_of("s"), "DWARF (the declared list agrees with it)");
  auto wrong = resolve("gowork", R"(p::main.work(i int, tag int) "%d", i)");
  ASSERT_FALSE(wrong.spec);
  EXPECT_NE(wrong.error().find("probe spec column 21: 'tag' is declared int but the DWARF of "
                               "main.work says string; declare the list as DWARF has it, "
                               "main.work(i int, tag string)"),
            std::string::npos)
      << wrong.error();
  auto more = resolve("gowork", R"(p::main.work(i int, tag string, x int) "%d", i)");
  ASSERT_FALSE(more.spec);
  EXPECT_NE(more.error().find("3 parameters declared, but the DWARF of main.work has 2"),
            std::string::npos)
      << more.error();
}

TEST(go_names, refusals_say_why) {
  auto expect_error = [](const std::string& binary, const std::string& text,
                         const std::string& message) {
    auto r = resolve(binary, text);
    ASSERT_FALSE(r.spec) << text << " resolved to " << r.args();
    EXPECT_NE(r.error().find(message), std::string::npos) << text << "\n" << r.error();
  };
  // A float parameter: in X registers. The string after it still takes RAX and RBX.
  expect_error("gowork_stripped", R"(p::main.work(f float64, tag string) "%d", f)",
               "'f' is a float64, passed in Go's floating-point registers (X0..X14)");
  auto after_float = resolve("gowork_stripped", R"(p::main.work(f float64, tag string) "%s", tag)");
  ASSERT_TRUE(after_float.spec) << after_float.error();
  EXPECT_EQ(after_float.args(), "(str rax rbx)");
  // Past the registers: on the stack, which a declared list does not place.
  expect_error("gowork_stripped", R"(p::main.work(a, b, c, d string, e []byte, f int) "%s", e)",
               "'e' is passed on the stack: its words do not fit in what is left of Go's 9 "
               "integer argument registers");
  auto last =
      resolve("gowork_stripped", R"(p::main.work(a, b, c, d string, e []byte, f int) "%d", f)");
  ASSERT_TRUE(last.spec) << last.error();
  EXPECT_EQ(last.args(), "r11");
  expect_error(
      "gowork_stripped", R"(p::main.work(i main.Nope, tag string) "%s", tag)",
      "probe spec column 14: uscope cannot tell how 'i' is passed: no Go type 'main.Nope'");
  expect_error("gowork_stripped", R"(p::main.work(int i, char *tag) "%d", i)",
               "main.work in " + fixture("gowork_stripped") +
                   " is Go code, and its parameters are declared C's way; declare them as Go "
                   "writes them, name then type: main.work(i int, tag string)");
  expect_error("gowork_stripped", R"(p::main.work "%d", i)", "has no DWARF, so the parameters");
  expect_error("gowork", R"(p::main.work "%d", arg3)",
               "arg3 is out of range: main.work(i int, tag string) has 2 parameters");
  expect_error("gowork", R"(p::main.work "%s", i)", "%s needs a string but 'i' is an int");
  expect_error("gowork", R"(p::main.work "%s", arg1)", "%s needs a string but 'arg1' is an int");
  expect_error(
      "gohttp_server_stripped",
      R"(p::net/http.serverHandler.ServeHTTP(sh uintptr, rw any, req *net/http.Request) "%s", req.Methd)",
      "Go type 'net/http.Request' has no field 'Methd'; closest: Method");
  expect_error("gowork_stripped", R"(p::main.work(i int, tag string) "%d", tag.x)",
               "'tag' is a string, not a struct");
  expect_error("gowork_stripped", R"(p::main.work(i *int, tag string) "%d", i.x)",
               "'i' points to an int, not a struct");
}

// Go before 1.17 passes everything on the stack: a declared list there names no register.
TEST(go_names, the_stack_abi_refuses_a_declared_list_that_needs_registers) {
  auto elf = ElfFile::open(fixture("gowork_stripped"));
  ASSERT_TRUE(elf.has_value());
  auto dwarf = DwarfTypes::open(*elf);
  ASSERT_TRUE(dwarf.has_value());
  auto spec = parse_probe_spec(R"(p::main.work(i int, tag string) "%d", i)");
  ASSERT_TRUE(spec.has_value());
  GoNameSite site{0, "main.work", "old", ProbeKind::Entry, &go_stack_convention(), "go1.16.15"};
  GoTypesSource none = []() -> Result<GoTypes*> { return fail("no types"); };
  auto r = resolve_go_names(*spec, **dwarf, none, site);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("'i' is on the stack: old was built by go1.16.15, which "
                                   "passes arguments on the stack (Go's register ABI starts with "
                                   "Go 1.17)"),
            std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace uscope
