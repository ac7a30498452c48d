// The name resolver against the dwarf_app / dwarf_cpp fixtures: what names and members become
// (the expressions compile_probe gets), and every refusal. Specs are built as the parser builds
// them (Name, Member, declared lists), so these tests do not depend on the parser's syntax.
#include "plan/name_resolver.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "plan/planner.h"
#include "plan/probe_parse.h"
#include "temp_dir.h"

namespace uscope {
namespace {

using Op = Expr::Op;

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/dwarf/" + name;
}

Expr name(std::string n, int column = 20) {
  Expr e;
  e.op = Op::Name;
  e.text = std::move(n);
  e.column = column;
  return e;
}

Expr member(Expr base, std::string m, bool arrow = true) {
  Expr e;
  e.op = Op::Member;
  e.text = std::move(m);
  e.index = arrow ? 1 : 0;
  e.column = base.column;
  e.children.push_back(std::move(base));
  return e;
}

Expr arg(int n) {
  Expr e;
  e.op = Op::Arg;
  e.index = n;
  e.column = 30;
  return e;
}

// A spec printing `args` with `format` ("%s %d"), conversions parsed as the parser does.
ProbeSpec spec_of(ProbeKind kind, const std::string& function, const std::string& format,
                  std::vector<Expr> args) {
  ProbeSpec s;
  s.kind = kind;
  s.function = function;
  s.format = format;
  probe_detail::Token tok;
  tok.kind = probe_detail::Token::Kind::String;
  tok.text = format;
  for (size_t i = 0; i < format.size(); ++i) tok.columns.push_back(static_cast<int>(i) + 10);
  auto convs = probe_detail::parse_format(tok);
  EXPECT_TRUE(convs) << convs.error().message;
  s.conversions = *convs;
  s.args = std::move(args);
  return s;
}

uint64_t symbol_address(const std::string& path, const std::string& sym) {
  auto elf = ElfFile::open(path);
  auto syms = elf->symbols();  // the range-for must not outlive it
  for (const auto& s : *syms)
    if (s.name == sym && s.defined) return s.addr;
  ADD_FAILURE() << "no " << sym;
  return 0;
}

class Resolve : public testing::Test {
 protected:
  void SetUp() override { types_ = open(fixture("dwarf_app")); }

  static std::unique_ptr<DwarfTypes> open(const std::string& path) {
    auto elf = ElfFile::open(path);
    EXPECT_TRUE(elf);
    DebugSearchPaths none;
    none.debug_roots = {"/nonexistent"};
    auto t = DwarfTypes::open(*elf, none);
    EXPECT_TRUE(t) << t.error().message;
    return std::move(*t);
  }

  Result<ProbeSpec> run(const ProbeSpec& s, DwarfTypes* types = nullptr,
                        const std::string& path = fixture("dwarf_app")) {
    NameSite site;
    site.dwarf = types ? types : types_.get();
    site.function = s.function;
    // dbg_stripped has no .symtab; it is dwarf_app's code, at the same addresses.
    const std::string& symbols = path.ends_with("dbg_stripped") ? fixture("dwarf_app") : path;
    site.function_addr = symbol_address(symbols, s.function);
    site.object = path;
    return resolve_names(s, site);
  }

  std::string error_of(const ProbeSpec& s, DwarfTypes* types = nullptr,
                       const std::string& path = fixture("dwarf_app")) {
    auto r = run(s, types, path);
    EXPECT_FALSE(r) << "resolved, expected an error";
    return r ? "" : r.error().message;
  }

  std::unique_ptr<DwarfTypes> types_;
};

TEST_F(Resolve, parameter_names_become_arguments_with_their_types) {
  auto r = run(spec_of(ProbeKind::Entry, "handle", "%p %d", {name("req"), name("len")}));
  ASSERT_TRUE(r) << r.error().message;
  const Expr& req = r->args[0];
  EXPECT_EQ(req.op, Op::Arg);
  EXPECT_EQ(req.index, 1);
  ASSERT_TRUE(req.type);
  EXPECT_EQ(req.type->name, "struct request");
  EXPECT_EQ(req.type->pointers, 1);
  // An int is 4 bytes of a 64-bit register: a signed 4-byte cast makes `len < 0` work.
  const Expr& len = r->args[1];
  EXPECT_EQ(len.op, Op::Cast);
  EXPECT_EQ(len.width, 4);
  EXPECT_TRUE(len.is_signed);
  ASSERT_EQ(len.children.size(), 1u);
  EXPECT_EQ(len.children[0].op, Op::Arg);
  EXPECT_EQ(len.children[0].index, 2);
  ASSERT_TRUE(len.type);
  EXPECT_EQ(len.type->name, "int");
}

TEST_F(Resolve, return_probe_reads_parameters_saved_at_entry) {
  auto r = run(spec_of(ProbeKind::Return, "handle", "%d", {name("len")}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->args[0].op, Op::Cast);
  EXPECT_EQ(r->args[0].children[0].op, Op::Entry);
  EXPECT_EQ(r->args[0].children[0].index, 2);
}

TEST_F(Resolve, char_array_member_printed_as_string_is_its_address) {
  auto r = run(spec_of(ProbeKind::Entry, "handle", "%s", {member(name("req"), "path")}));
  ASSERT_TRUE(r) << r.error().message;
  const Expr& s = r->args[0];
  ASSERT_EQ(s.op, Op::Str);
  const Expr& addr = s.children[0];
  ASSERT_EQ(addr.op, Op::Binary);
  EXPECT_EQ(addr.op_text, "+");
  EXPECT_EQ(addr.children[0].op, Op::Arg);
  EXPECT_EQ(addr.children[1].value, 16);
}

TEST_F(Resolve, char_pointer_member_is_read_then_printed) {
  auto r = run(spec_of(ProbeKind::Entry, "handle", "%s", {member(name("req"), "user")}));
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->args[0].op, Op::Str);
  const Expr& d = r->args[0].children[0];
  ASSERT_EQ(d.op, Op::Deref);
  EXPECT_EQ(d.width, 8);
  EXPECT_EQ(d.children[0].children[1].value, 48);
}

TEST_F(Resolve, nested_member_and_member_at_offset_zero) {
  auto r = run(spec_of(ProbeKind::Entry, "handle", "%u %ld %d",
                       {member(member(name("req"), "hdr"), "len", false), member(name("req"), "id"),
                        member(name("req"), "code")}));
  ASSERT_TRUE(r) << r.error().message;
  const Expr& len = r->args[0];
  ASSERT_EQ(len.op, Op::Deref);
  EXPECT_EQ(len.width, 4);
  EXPECT_FALSE(len.is_signed);
  EXPECT_EQ(len.children[0].children[1].value, 12);  // hdr at 8, len at 4 in it
  const Expr& id = r->args[1];
  ASSERT_EQ(id.op, Op::Deref);
  EXPECT_EQ(id.width, 8);
  EXPECT_TRUE(id.is_signed);
  EXPECT_EQ(id.children[0].op, Op::Arg);  // offset 0: no addition
  const Expr& code = r->args[2];          // in an anonymous union
  EXPECT_EQ(code.children[0].children[1].value, 56);
  ASSERT_TRUE(code.type);
  EXPECT_EQ(code.type->name, "int");
}

TEST_F(Resolve, unsigned_char_after_a_double_is_the_first_integer_argument) {
  auto r = run(spec_of(ProbeKind::Entry, "tag", "%u %ld", {name("code"), name("delta")}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->args[0].op, Op::Cast);
  EXPECT_EQ(r->args[0].width, 1);
  EXPECT_FALSE(r->args[0].is_signed);
  EXPECT_EQ(r->args[0].children[0].index, 1);
  EXPECT_EQ(r->args[1].op, Op::Arg);  // long: no cast needed
  EXPECT_EQ(r->args[1].index, 2);
}

TEST_F(Resolve, predicate_and_string_compare_of_a_char_pointer_member) {
  auto s = spec_of(ProbeKind::Entry, "handle", "", {});
  Expr lit;
  lit.op = Op::String;
  lit.text = "user1";
  Expr eq;
  eq.op = Op::Binary;
  eq.op_text = "==";
  eq.children.push_back(member(name("req"), "user"));
  eq.children.push_back(lit);
  s.predicate = eq;
  auto r = run(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->predicate->children[0].op, Op::Str);
}

TEST_F(Resolve, unknown_name_lists_closest_parameters) {
  auto e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {name("lenght", 27)}));
  EXPECT_EQ(e, "probe spec column 27: no parameter 'lenght' in handle(req, len); closest: len");
}

TEST_F(Resolve, parameters_outside_integer_registers_are_refused) {
  auto e = error_of(spec_of(ProbeKind::Entry, "tag", "%d", {name("scale")}));
  EXPECT_NE(e.find("'scale' is not in an integer register at entry: double is passed in an SSE "
                   "(xmm) register"),
            std::string::npos)
      << e;
  e = error_of(spec_of(ProbeKind::Entry, "many", "%d", {name("seventh")}));
  EXPECT_NE(e.find("past the six integer registers, on the stack"), std::string::npos) << e;
  e = error_of(spec_of(ProbeKind::Entry, "by_value", "%d", {name("big")}));
  EXPECT_NE(e.find("struct big of 32 bytes, passed in memory"), std::string::npos) << e;
  e = error_of(spec_of(ProbeKind::Entry, "by_value", "%d", {name("pair")}));
  EXPECT_NE(e.find("passed by value in registers"), std::string::npos) << e;
  auto ok = run(spec_of(ProbeKind::Entry, "by_value", "%d", {name("after")}));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->args[0].children[0].index, 3);  // pair took rdi and rsi
}

TEST_F(Resolve, member_errors) {
  auto e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {member(name("req"), "pth")}));
  EXPECT_NE(e.find("struct request has no member 'pth'; closest: path"), std::string::npos) << e;
  e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {member(name("req"), "retries")}));
  EXPECT_NE(e.find("req->retries is a bitfield (3 bits)"), std::string::npos) << e;
  e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {member(name("req"), "ratio")}));
  EXPECT_NE(e.find("req->ratio is a float; uscope prints integers"), std::string::npos) << e;
  e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {member(name("req"), "hdr")}));
  EXPECT_NE(e.find("req->hdr is a struct header, not a value; name one of its members: kind, len"),
            std::string::npos)
      << e;
  e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {member(name("len"), "x")}));
  EXPECT_NE(e.find("'->' needs a pointer to a struct but len is int"), std::string::npos) << e;
  e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {member(name("req"), "id", false)}));
  EXPECT_NE(e.find("'.' needs a struct but req is struct request *; write req->id"),
            std::string::npos)
      << e;
  e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {member(arg(1), "id")}));
  EXPECT_NE(e.find("arg1 has no C type"), std::string::npos) << e;
  e = error_of(spec_of(ProbeKind::Entry, "handle", "%s", {name("len")}));
  EXPECT_NE(e.find("%s needs a string but len is int"), std::string::npos) << e;
}

TEST_F(Resolve, without_dwarf_names_need_a_declared_list) {
  test::TempDir dir;
  const std::string copy = dir.str() + "/dbg_stripped";
  std::filesystem::copy_file(fixture("dbg_stripped"), copy);
  auto none = open(copy);
  ASSERT_FALSE(none->has_dwarf());
  auto e = error_of(spec_of(ProbeKind::Entry, "handle", "%d", {name("len")}), none.get(), copy);
  EXPECT_NE(e.find("parameter names need DWARF, and " + copy + " has no DWARF"), std::string::npos)
      << e;
  EXPECT_NE(e.find("declare them"), std::string::npos) << e;

  // bcc's form: the declared list names and types them.
  auto s = spec_of(ProbeKind::Entry, "handle", "%p %d", {name("r"), name("n")});
  s.params = std::vector<DeclaredParam>{{{"struct request", 1, 0, false}, "r", 12},
                                        {{"int", 0, 4, true}, "n", 30}};
  auto r = run(s, none.get(), copy);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->args[0].index, 1);
  EXPECT_EQ(r->args[1].op, Op::Cast);
  EXPECT_EQ(r->args[1].children[0].index, 2);

  // ... but a struct's layout still needs DWARF.
  s.args = {member(name("r"), "id")};
  s.format = "%d";
  s.conversions.resize(1);
  e = error_of(s, none.get(), copy);
  EXPECT_NE(e.find("no layout of struct request"), std::string::npos) << e;
  EXPECT_NE(e.find("struct members need DWARF: install the object's -dbg package, or read at "
                   "an explicit offset such as *(u64*)(r + 8)"),
            std::string::npos)
      << e;
}

TEST_F(Resolve, declared_list_takes_struct_layout_from_dwarf) {
  auto s = spec_of(ProbeKind::Entry, "handle", "%s", {member(name("r"), "path")});
  s.params = std::vector<DeclaredParam>{{{"struct request", 1, 0, false}, "r", 12}};
  auto r = run(s);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->args[0].op, Op::Str);
}

TEST_F(Resolve, declared_list_that_disagrees_with_dwarf) {
  auto s = spec_of(ProbeKind::Entry, "handle", "%d", {name("n")});
  s.params = std::vector<DeclaredParam>{{{"int", 0, 4, true}, "n", 12}};
  auto e = error_of(s);
  EXPECT_NE(e.find("column 12: 'n' is declared int but DWARF of handle says struct request *req"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("handle(struct request *req, int len)"), std::string::npos) << e;

  s.params = std::vector<DeclaredParam>{{{"int", 0, 4, true}, "len", 12},
                                        {{"char", 1, 1, true}, "req", 20}};
  e = error_of(s);
  EXPECT_NE(e.find("'len' is parameter 1 here but 2 in DWARF of handle"), std::string::npos) << e;

  s.params = std::vector<DeclaredParam>{{{"char", 1, 1, true}, "a", 12},
                                        {{"int", 0, 4, true}, "b", 20},
                                        {{"int", 0, 4, true}, "n", 28}};
  e = error_of(s);
  EXPECT_NE(e.find("column 28: 'n' is integer argument 3 but DWARF of handle has 2"),
            std::string::npos)
      << e;
}

TEST_F(Resolve, usdt_probes_have_no_names) {
  auto s = spec_of(ProbeKind::Usdt, "handle", "%d", {name("len")});
  auto e = error_of(s);
  EXPECT_NE(e.find("USDT probes have no parameter names"), std::string::npos) << e;
}

TEST_F(Resolve, this_is_the_first_argument_of_a_member_function) {
  auto cpp = open(fixture("dwarf_cpp"));
  const std::string path = fixture("dwarf_cpp");
  auto add = spec_of(ProbeKind::Entry, "_ZN4shop6Basket3addEi", "%ld %d",
                     {member(name("this"), "items_"), name("count")});
  auto r = run(add, cpp.get(), path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->args[0].op, Op::Deref);
  EXPECT_EQ(r->args[0].children[0].op, Op::Arg);
  EXPECT_EQ(r->args[0].children[0].index, 1);
  EXPECT_EQ(r->args[1].children[0].index, 2);
  // A Receipt (32 bytes) returned by value: rdi holds where it goes, `this` moves to rsi.
  auto receipt = spec_of(ProbeKind::Entry, "_ZNK4shop6Basket7receiptEl", "%p %ld",
                         {name("this"), name("tax")});
  r = run(receipt, cpp.get(), path);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->args[0].index, 2);
  EXPECT_EQ(r->args[1].index, 3);
}

TEST_F(Resolve, resolving_twice_and_checking_formats_twice_changes_nothing) {
  auto r =
      run(spec_of(ProbeKind::Entry, "handle", "%s %d", {member(name("req"), "path"), name("len")}));
  ASSERT_TRUE(r) << r.error().message;
  ProbeSpec again = *r;
  ASSERT_TRUE(probe_detail::check_format_args(again));
  auto twice = run(again);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->args[0].op, Op::Str);
  EXPECT_EQ(twice->args[0].children[0].op, Op::Binary);
  EXPECT_EQ(again.args[0].op, Op::Str);
  EXPECT_EQ(again.args[0].children[0].op, Op::Binary);
}

TEST(plan_trace_names, resolves_names_per_matched_site_before_compiling) {
  TargetContext ctx;
  ObjectCache cache(ctx);
  auto s = spec_of(ProbeKind::Entry, "handle", "%s %d", {member(name("req"), "path"), name("len")});
  s.target = fixture("dwarf_app");
  auto plan = plan_trace(cache, std::span<const ProbeSpec>(&s, 1), {});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->sites.size(), 1u);
  ASSERT_EQ(plan->probes[0].fields.size(), 2u);
  EXPECT_EQ(plan->probes[0].fields[0].kind, OutputField::Kind::String);
  EXPECT_EQ(plan->probes[0].fields[1].kind, OutputField::Kind::Value);

  s.args[1] = name("lenght", 27);
  plan = plan_trace(cache, std::span<const ProbeSpec>(&s, 1), {});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().message,
            "probe spec column 27: no parameter 'lenght' in handle(req, len); closest: len");
}

}  // namespace
}  // namespace uscope
