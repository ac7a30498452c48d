// The planner against the built fixtures, with no process (TargetContext names the executable):
// where each site lands (file offset, cost, sp_delta, retprobe or not, USDT semaphore), which
// recipe it runs, and the errors for names that do not exist, Go return probes and IFUNCs.
// Expected offsets come from the ELF symbol table and `readelf -n`, not from the planner's own
// readers.
#include "plan/planner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "discover/elf_file.h"
#include "plan/expr_build.h"
#include "plan/site_cost.h"
#include "tool_output.h"

namespace uscope {
namespace {

std::string fixture(const std::string& rel) {
  return std::string(USCOPE_FIXTURE_DIR) + "/" + rel;
}

const std::string kTargetLoop = fixture("native/target_loop");
const std::string kGoWork = fixture("go/gowork");
const std::string kGoWorkStripped = fixture("go/gowork_stripped");
const std::string kUsdtDemo = fixture("usdt/usdt_demo");

// A planning context for `main_executable`, no process.
struct Planner {
  explicit Planner(std::string main) : ctx{nullptr, std::move(main), 0}, cache(ctx) {}
  TargetContext ctx;
  ObjectCache cache;
};

ProbeSpec spec_of(std::string_view text) {
  auto s = parse_probe_spec(text);
  EXPECT_TRUE(s.has_value()) << text << ": " << (s ? "" : s.error().message);
  return s ? *s : ProbeSpec{};
}

ProbeSpec pattern_of(std::string_view text) {
  auto s = parse_probe_pattern(text);
  EXPECT_TRUE(s.has_value()) << text << ": " << (s ? "" : s.error().message);
  return s ? *s : ProbeSpec{};
}

Result<TracePlan> plan(Planner& p, std::vector<std::string> texts, TraceOptions opts = {}) {
  std::vector<ProbeSpec> specs;
  for (const auto& t : texts) specs.push_back(spec_of(t));
  return plan_trace(p.cache, specs, opts);
}

// Link-time address, file offset and size of a defined symbol, read from the ELF directly.
struct Sym {
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

std::optional<Sym> elf_symbol(const std::string& path, const std::string& name) {
  auto elf = ElfFile::open(path);
  if (!elf) return std::nullopt;
  auto syms = elf->symbols();
  if (!syms) return std::nullopt;
  for (const auto& s : *syms) {
    if (s.name != name || !s.defined || s.addr == 0) continue;
    // .bss symbols have no file offset: 0.
    return Sym{s.addr, elf->vaddr_to_offset(s.addr).value_or(0), s.size};
  }
  return std::nullopt;
}

std::vector<uint8_t> bytes_at(const std::string& path, uint64_t addr, size_t n) {
  auto elf = ElfFile::open(path);
  if (!elf) return {};
  auto code = elf->code_bytes(addr, n);
  return {code.begin(), code.end()};
}

using test::command_output;

// readelf -n: link-time location addresses of each USDT probe name (in note order).
std::map<std::string, std::vector<uint64_t>> readelf_usdt_locations(const std::string& path) {
  std::map<std::string, std::vector<uint64_t>> out;
  std::istringstream in(command_output("LC_ALL=C readelf -nW '" + path + "' 2>/dev/null"));
  std::string name;
  for (std::string line; std::getline(in, line);) {
    if (auto at = line.find("    Name: "); at != std::string::npos) {
      name = line.substr(at + 10);
    } else if (auto loc = line.find("    Location: "); loc != std::string::npos && !name.empty()) {
      out[name].push_back(std::stoull(line.substr(loc + 14), nullptr, 16));
    }
  }
  return out;
}

uint64_t file_offset(const std::string& path, uint64_t vaddr) {
  auto elf = ElfFile::open(path);
  if (!elf) return ~0ull;
  return elf->vaddr_to_offset(vaddr).value_or(~0ull);
}

struct OpView {
  int code, a, b;
  int64_t imm;
  bool operator==(const OpView&) const = default;
};
void PrintTo(const OpView& o, std::ostream* os) {
  *os << "{code=" << o.code << " a=" << o.a << " b=" << o.b << " imm=" << o.imm << "}";
}
std::vector<OpView> ops(const uscope_recipe& r) {
  std::vector<OpView> out;
  for (uint32_t i = 0; i < r.n_ops && i < TRACE_MAX_OPS; ++i)
    out.push_back({r.ops[i].code, r.ops[i].a, r.ops[i].b, r.ops[i].imm});
  return out;
}

class planner_native : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = elf_symbol(kTargetLoop, "work");
    ASSERT_TRUE(w.has_value()) << kTargetLoop;
    work = *w;
    // The fixture is built with -fcf-protection and frame pointers: endbr64; push rbp.
    ASSERT_EQ(bytes_at(kTargetLoop, work.addr, 5),
              (std::vector<uint8_t>{0xf3, 0x0f, 0x1e, 0xfa, 0x55}));
  }
  Sym work;
};

TEST_F(planner_native, entry_probe_moves_past_endbr64_to_push_rbp) {
  Planner p(kTargetLoop);
  auto r = plan(p, {R"(p::work "%d", arg1)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  ASSERT_EQ(r->recipes.size(), 1u);
  ASSERT_EQ(r->probes.size(), 1u);
  const PlannedSite& s = r->sites[0];
  EXPECT_EQ(s.attach.path, kTargetLoop);
  EXPECT_EQ(s.attach.offset, work.offset + 4);
  EXPECT_EQ(s.attach.ref_ctr_offset, 0u);
  EXPECT_EQ(s.attach.cookie, 0u);
  EXPECT_FALSE(s.attach.retprobe);
  EXPECT_EQ(s.probe, 0u);
  EXPECT_EQ(s.label, "work");
  EXPECT_EQ(s.object, kTargetLoop);
  EXPECT_EQ(s.placement.offset, work.offset + 4);
  EXPECT_EQ(s.placement.address, work.addr + 4);
  EXPECT_EQ(s.placement.cost.cost, SiteCost::Emulated);
  EXPECT_EQ(s.placement.cost.insn, "push rbp");
  // The push has not executed at the site: rsp is still the entry rsp.
  EXPECT_EQ(s.placement.sp_delta, 0);
  const uscope_recipe& rec = r->recipes[0];
  EXPECT_EQ(ops(rec), (std::vector<OpView>{{TOP_REG, UREG_RDI, 0, 0}, {TOP_EMIT, 0, 0, 0}}));
  EXPECT_EQ(rec.flags, static_cast<uint32_t>(TRACE_F_AT_ENTRY));
  EXPECT_EQ(rec.sp_delta, 0);
  EXPECT_EQ(rec.probe_id, 0u);
  EXPECT_EQ(r->probes[0].label, "work");
  ASSERT_EQ(r->probes[0].fields.size(), 1u);
  EXPECT_EQ(r->probes[0].fields[0].kind, OutputField::Kind::Value);
}

TEST_F(planner_native, entry_probe_stays_at_offset_zero_without_move_sites) {
  Planner p(kTargetLoop);
  TraceOptions opts;
  opts.move_sites = false;
  auto r = plan(p, {R"(p::work "%d", arg1)"}, opts);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  const PlannedSite& s = r->sites[0];
  EXPECT_EQ(s.attach.offset, work.offset);
  EXPECT_EQ(s.placement.address, work.addr);
  EXPECT_EQ(s.placement.cost.cost, SiteCost::SingleStepped);
  EXPECT_EQ(s.placement.cost.insn, "endbr64");
  EXPECT_EQ(s.placement.sp_delta, 0);
}

TEST_F(planner_native, explicit_offset_is_not_moved) {
  Planner p(kTargetLoop);
  auto r = plan(p, {R"(p::work+5 "%d", arg1)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  EXPECT_EQ(r->sites[0].attach.offset, work.offset + 5);
  EXPECT_EQ(r->recipes[0].flags, 0u);  // not at the function entry
}

TEST_F(planner_native, offset_past_the_end_fails) {
  Planner p(kTargetLoop);
  auto r = plan(p, {"p::work+0x100"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(
      r.error().message,
      fmt::format("probe spec column 4: work+0x100 is past the end of the function ({} bytes)",
                  work.size));
}

TEST_F(planner_native, return_probe_with_entry_value_plans_entry_half_then_retprobe) {
  Planner p(kTargetLoop);
  auto r = plan(p, {R"(r::work "%d", $entry(arg1))"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 2u);
  ASSERT_EQ(r->recipes.size(), 2u);
  ASSERT_EQ(r->probes.size(), 1u);
  const PlannedSite& entry = r->sites[0];
  const PlannedSite& ret = r->sites[1];
  EXPECT_FALSE(entry.attach.retprobe);
  EXPECT_TRUE(ret.attach.retprobe);
  // rsp is unchanged at push rbp, so both halves share the cheaper site.
  EXPECT_EQ(entry.attach.offset, work.offset + 4);
  EXPECT_EQ(ret.attach.offset, work.offset + 4);
  EXPECT_EQ(entry.attach.cookie, 0u);
  EXPECT_EQ(ret.attach.cookie, 1u);
  EXPECT_EQ(entry.probe, 0u);
  EXPECT_EQ(ret.probe, 0u);
  EXPECT_EQ(ops(r->recipes[0]),
            (std::vector<OpView>{{TOP_REG, UREG_RDI, 0, 0}, {TOP_SAVE, 0, 0, 0}}));
  EXPECT_EQ(r->recipes[0].flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY));
  EXPECT_EQ(ops(r->recipes[1]), (std::vector<OpView>{{TOP_ENTRY, 0, 0, 0}, {TOP_EMIT, 0, 0, 0}}));
  EXPECT_EQ(r->recipes[1].flags, static_cast<uint32_t>(TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY));
  EXPECT_EQ(r->recipes[0].sp_delta, 0);
  EXPECT_EQ(r->recipes[1].sp_delta, 0);
}

TEST_F(planner_native, return_probe_without_entry_values_is_one_retprobe) {
  Planner p(kTargetLoop);
  auto r = plan(p, {R"(r::work "%ld", retval)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  EXPECT_TRUE(r->sites[0].attach.retprobe);
  EXPECT_EQ(r->sites[0].attach.offset, work.offset + 4);
  EXPECT_EQ(ops(r->recipes[0]),
            (std::vector<OpView>{{TOP_REG, UREG_RAX, 0, 0}, {TOP_EMIT, 0, 0, 0}}));
}

TEST_F(planner_native, several_specs_get_sequential_probes_and_cookies) {
  Planner p(kTargetLoop);
  auto r = plan(p, {R"(p::work "%d", arg1)", R"(p::first_is_x "%s", arg1)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 2u);
  ASSERT_EQ(r->probes.size(), 2u);
  EXPECT_EQ(r->probes[0].label, "work");
  EXPECT_EQ(r->probes[1].label, "first_is_x");
  EXPECT_EQ(r->sites[1].probe, 1u);
  EXPECT_EQ(r->sites[1].attach.cookie, 1u);
  EXPECT_EQ(r->recipes[1].probe_id, 1u);
  auto fx = elf_symbol(kTargetLoop, "first_is_x");
  ASSERT_TRUE(fx.has_value());
  // first_is_x is a leaf that starts with endbr64 too; whatever its site, it stays inside it.
  EXPECT_GE(r->sites[1].attach.offset, fx->offset);
  EXPECT_LT(r->sites[1].attach.offset, fx->offset + fx->size);
  ASSERT_EQ(r->probes[1].fields.size(), 1u);
  EXPECT_EQ(r->probes[1].fields[0].kind, OutputField::Kind::String);
}

TEST(planner, unknown_function_lists_the_closest_name) {
  Planner p(kTargetLoop);
  auto r = plan(p, {R"(p::wrok "%d", arg1)"});
  ASSERT_FALSE(r.has_value());
  const std::string prefix =
      "probe spec column 4: no function 'wrok' in " + kTargetLoop + "; closest: work";
  EXPECT_EQ(r.error().message.substr(0, prefix.size()), prefix) << r.error().message;
}

TEST(planner, missing_object_fails_at_the_target_column) {
  Planner p(kTargetLoop);
  auto r = plan(p, {"p:/nonexistent/uscope-test:f"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message.rfind("probe spec column 3: /nonexistent/uscope-test", 0), 0u)
      << r.error().message;
}

TEST(planner, object_cache_opens_each_target_once) {
  Planner p(kTargetLoop);
  auto a = p.cache.get("");
  auto b = p.cache.get("");
  ASSERT_TRUE(a.has_value()) << a.error().message;
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ((*a)->ref.open_path, kTargetLoop);
  EXPECT_FALSE((*a)->is_go);
  auto s1 = p.cache.symbols(**a);
  auto s2 = p.cache.symbols(**a);
  ASSERT_TRUE(s1.has_value());
  ASSERT_TRUE(s2.has_value());
  EXPECT_EQ(*s1, *s2);
  auto go = p.cache.get(kGoWork);
  ASSERT_TRUE(go.has_value()) << go.error().message;
  EXPECT_TRUE((*go)->is_go);
  EXPECT_NE(*go, *a);
}

TEST(planner, match_patterns_dedups_repeated_patterns_and_aliases) {
  Planner p(kTargetLoop);
  std::vector<ProbeSpec> pats = {pattern_of("work"), pattern_of("wor*"), pattern_of("work"),
                                 pattern_of(kTargetLoop + ":work")};
  auto r = match_patterns(p.cache, pats);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  auto w = elf_symbol(kTargetLoop, "work");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ((*r)[0].offset, w->offset);
  EXPECT_EQ((*r)[0].address, w->addr);
  EXPECT_EQ((*r)[0].function_start, w->addr);
  EXPECT_EQ((*r)[0].function_size, w->size);
  EXPECT_EQ((*r)[0].label, "work");
  EXPECT_EQ((*r)[0].usdt, nullptr);
}

TEST(planner, match_patterns_dedups_libc_aliases) {
  // malloc and __libc_malloc are one function in glibc; probing both must give one site.
  auto libc_malloc = elf_symbol("/lib/x86_64-linux-gnu/libc.so.6", "malloc");
  Planner p(kTargetLoop);
  std::vector<ProbeSpec> pats = {pattern_of("c:malloc"), pattern_of("c:__libc_malloc"),
                                 pattern_of("c:malloc")};
  auto r = match_patterns(p.cache, pats);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  ASSERT_TRUE(libc_malloc.has_value());
  EXPECT_EQ((*r)[0].offset, libc_malloc->offset);
  // A glob naming both aliases yields the address once.
  auto whole = match_sites(p.cache, pattern_of("c:*malloc"));
  ASSERT_TRUE(whole.has_value()) << whole.error().message;
  std::set<uint64_t> offsets;
  for (const auto& m : *whole) EXPECT_TRUE(offsets.insert(m.offset).second) << m.label;
  EXPECT_EQ(std::count_if(whole->begin(), whole->end(),
                          [&](const MatchedSite& m) { return m.offset == (*r)[0].offset; }),
            1);
}

TEST(planner, glob_over_fixture_takes_each_function_once) {
  Planner p(kTargetLoop);
  auto r = match_sites(p.cache, pattern_of("*"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  std::set<uint64_t> offsets;
  std::set<std::string> labels;
  for (const auto& m : *r) {
    EXPECT_TRUE(offsets.insert(m.offset).second) << "twice: " << m.label;
    labels.insert(m.label);
    EXPECT_EQ(m.offset, file_offset(kTargetLoop, m.address)) << m.label;
    EXPECT_EQ(m.address, m.function_start) << m.label;
  }
  for (const char* f : {"work", "first_is_x", "main"}) EXPECT_TRUE(labels.contains(f)) << f;
  // The same set again through match_patterns with a repeat.
  std::vector<ProbeSpec> pats = {pattern_of("*"), pattern_of("w*")};
  auto both = match_patterns(p.cache, pats);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->size(), r->size());
}

// Go moves goroutine stacks under a rewritten return address: a return probe is a uprobe on each
// RET of the function, keyed by goroutine, never a uretprobe.
TEST(planner, go_return_probe_is_a_uprobe_on_every_ret) {
  Planner p(kGoWork);
  // With DWARF, arg2 is work's second parameter, tag: a Go string in RBX and RCX.
  auto r = plan(p, {R"(r::main.work "%d %s", retval, $entry(arg2))"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto w = elf_symbol(kGoWork, "main.work");
  ASSERT_TRUE(w.has_value());
  auto rets = return_instructions(ElfFile::open(kGoWork)->code_bytes(w->addr, w->size), w->addr);
  ASSERT_TRUE(rets.has_value()) << rets.error().message;
  ASSERT_FALSE(rets->empty());
  ASSERT_EQ(r->sites.size(), 1 + rets->size());
  EXPECT_EQ(r->sites[0].role, SiteRole::SaveEntry);
  EXPECT_EQ(r->sites[0].attach.offset, w->offset);
  EXPECT_EQ(r->recipes[0].flags, TRACE_F_SAVE_ENTRY | TRACE_F_GOROUTINE);
  // The entry half saves tag's two words from Go's second and third argument registers.
  EXPECT_EQ(ops(r->recipes[0]), (std::vector<OpView>{{TOP_REG, UREG_RBX, 0, 0},
                                                     {TOP_SAVE, 0, 0, 0},
                                                     {TOP_REG, UREG_RCX, 0, 0},
                                                     {TOP_SAVE, 1, 0, 0}}));
  for (size_t i = 0; i < rets->size(); ++i) {
    const PlannedSite& s = r->sites[1 + i];
    EXPECT_EQ(s.role, SiteRole::Event);
    EXPECT_FALSE(s.attach.retprobe);
    EXPECT_TRUE(s.attach.go_code);
    EXPECT_EQ(s.placement.address, (*rets)[i].addr);
    EXPECT_EQ(s.attach.offset, w->offset + ((*rets)[i].addr - w->addr));
    EXPECT_TRUE(r->recipes[1 + i].flags & TRACE_F_GOROUTINE);
    EXPECT_TRUE(r->recipes[1 + i].flags & TRACE_F_RETURN);
    // retval is Go's first result register.
    EXPECT_EQ(ops(r->recipes[1 + i]).front(), (OpView{TOP_REG, UREG_RAX, 0, 0}));
  }
  for (const auto& s : r->sites) EXPECT_FALSE(s.attach.retprobe);
}

// A Go return probe with ends_at (uscope http's server probe) ends at the entry of the function
// its caller calls next: one emulated site on that entry, no RET, keyed by goroutine like a RET.
TEST(planner, go_return_probe_ends_at_another_functions_entry) {
  // The stripped twin (same code): without DWARF, arg1 is Go's first argument register.
  const std::string server = fixture("go/gohttp_server");
  Planner p(fixture("go/gohttp_server_stripped"));
  ProbeSpec spec = spec_of(R"(r::net/http.serverHandler.ServeHTTP "%x", $entry(arg1))");
  spec.ends_at = {"net/http.(*response).finishRequest"};
  auto r = plan_trace(p.cache, std::vector<ProbeSpec>{spec}, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto serve = elf_symbol(server, "net/http.serverHandler.ServeHTTP");
  auto finish = elf_symbol(server, "net/http.(*response).finishRequest");
  ASSERT_TRUE(serve && finish);
  ASSERT_EQ(r->sites.size(), 2u);
  EXPECT_EQ(r->sites[0].role, SiteRole::SaveEntry);
  EXPECT_GE(r->sites[0].placement.address, serve->addr);
  EXPECT_LT(r->sites[0].placement.address, serve->addr + serve->size);
  const PlannedSite& end = r->sites[1];
  EXPECT_EQ(end.role, SiteRole::Event);
  EXPECT_FALSE(end.attach.retprobe);
  EXPECT_GE(end.placement.address, finish->addr);
  EXPECT_LT(end.placement.address, finish->addr + 16);  // in the stack check, not a RET
  EXPECT_EQ(end.attach.offset, finish->offset + (end.placement.address - finish->addr));
  EXPECT_EQ(end.placement.cost.cost, SiteCost::Emulated) << end.placement.note;
  EXPECT_EQ(end.placement.sp_delta, 0);
  EXPECT_EQ(r->recipes[1].flags & (TRACE_F_RETURN | TRACE_F_GOROUTINE),
            TRACE_F_RETURN | TRACE_F_GOROUTINE);

  spec.ends_at = {"net/http.noSuchFunction"};
  auto missing = plan_trace(p.cache, std::vector<ProbeSpec>{spec}, {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("ends at the entry of net/http.noSuchFunction"),
            std::string::npos)
      << missing.error().message;
}

// uscope http's server probe with HTTP/2: two ends (finishRequest, handlerDone), each an emulated
// entry site; the call keyed by its goroutine alone, and dropped where it can no longer end (an
// HTTP/1 connection's deferred end, a new HTTP/2 stream on the goroutine), nothing emitted there.
TEST(planner, go_return_probe_ends_at_either_entry_and_is_dropped_where_it_cannot_end) {
  const std::string server = fixture("go/gohttp_server");
  Planner p(fixture("go/gohttp_server_stripped"));
  ProbeSpec spec = spec_of(R"(r::net/http.serverHandler.ServeHTTP "%x", $entry(arg1))");
  spec.ends_at = {"net/http.(*response).finishRequest",
                  "net/http.(*http2responseWriter).handlerDone"};
  spec.one_per_goroutine = true;
  spec.abandoned_at = {"net/http.(*conn).serve.func1", "net/http.(*http2serverConn).runHandler"};
  auto r = plan_trace(p.cache, std::vector<ProbeSpec>{spec}, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 5u);
  const char* functions[] = {
      "net/http.serverHandler.ServeHTTP", "net/http.(*response).finishRequest",
      "net/http.(*http2responseWriter).handlerDone", "net/http.(*conn).serve.func1",
      "net/http.(*http2serverConn).runHandler"};
  const SiteRole roles[] = {SiteRole::SaveEntry, SiteRole::Event, SiteRole::Event,
                            SiteRole::Abandon, SiteRole::Abandon};
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(functions[i]);
    const PlannedSite& s = r->sites[i];
    auto f = elf_symbol(server, functions[i]);
    ASSERT_TRUE(f);
    EXPECT_EQ(s.role, roles[i]);
    EXPECT_EQ(s.probe, 0u);
    EXPECT_FALSE(s.attach.retprobe);
    EXPECT_GE(s.placement.address, f->addr);
    EXPECT_LT(s.placement.address, f->addr + 16);  // in the stack check, never a RET
    EXPECT_EQ(s.placement.cost.cost, SiteCost::Emulated) << s.placement.note;
    const uint32_t flags = r->recipes[s.attach.cookie].flags;
    EXPECT_EQ(flags & (TRACE_F_GOROUTINE | TRACE_F_GOROUTINE_ONLY),
              TRACE_F_GOROUTINE | TRACE_F_GOROUTINE_ONLY);
    EXPECT_EQ((flags & TRACE_F_ABANDON) != 0, i >= 3);
  }
  for (size_t i = 3; i < 5; ++i)  // drops, emits nothing
    EXPECT_EQ(r->recipes[r->sites[i].attach.cookie].n_ops, 0u);
}

// A value of one end (expr::at_end) is read at that end only, -1 at the others; what it saved at
// the entry keeps its slot in every end's recipe (one entry half serves them all).
TEST(planner, each_end_reads_only_its_own_values) {
  Planner p(fixture("go/gohttp_server_stripped"));
  ProbeSpec spec = spec_of(R"(r::net/http.serverHandler.ServeHTTP "%x", $entry(arg1))");
  spec.ends_at = {"net/http.(*response).finishRequest",
                  "net/http.(*http2responseWriter).handlerDone"};
  spec.one_per_goroutine = true;
  expr::add_arg(spec, expr::at_end(0, expr::reg("rax")), 'x');
  expr::add_arg(spec, expr::at_end(1, expr::at_entry(expr::reg("rbx"))), 'x');
  auto r = plan_trace(p.cache, std::vector<ProbeSpec>{spec}, {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 3u);
  const OpView emit{TOP_EMIT, 0, 0, 0}, minus_one{TOP_CONST, 0, 0, -1};
  // The entry saves arg1 (RAX in Go's ABI) and RBX for the second end, in slots 0 and 1.
  EXPECT_EQ(ops(r->recipes[r->sites[0].attach.cookie]),
            (std::vector<OpView>{{TOP_REG, UREG_RAX, 0, 0},
                                 {TOP_SAVE, 0, 0, 0},
                                 {TOP_REG, UREG_RBX, 0, 0},
                                 {TOP_SAVE, 1, 0, 0}}));
  EXPECT_EQ(ops(r->recipes[r->sites[1].attach.cookie]),
            (std::vector<OpView>{
                {TOP_ENTRY, 0, 0, 0}, emit, {TOP_REG, UREG_RAX, 0, 0}, emit, minus_one, emit}));
  EXPECT_EQ(ops(r->recipes[r->sites[2].attach.cookie]),
            (std::vector<OpView>{
                {TOP_ENTRY, 0, 0, 0}, emit, minus_one, emit, {TOP_ENTRY, 1, 0, 0}, emit}));
  for (size_t i = 1; i < 3; ++i)
    EXPECT_EQ(r->recipes[r->sites[i].attach.cookie].flags,
              r->recipes[r->sites[1].attach.cookie].flags);
}

// Without DWARF or a declared list, argN is the Nth register of Go's ABI.
TEST(planner, go_entry_probe_reads_go_abi_registers_at_function_start) {
  Planner p(kGoWorkStripped);
  auto r = plan(p, {R"(p::main.work "%d %d", arg1, arg2)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  auto w = elf_symbol(kGoWork, "main.work");  // the stripped twin has the same code
  ASSERT_TRUE(w.has_value());
  // Go functions are never moved.
  EXPECT_EQ(r->sites[0].attach.offset, w->offset);
  EXPECT_EQ(r->sites[0].placement.sp_delta, 0);
  EXPECT_EQ(ops(r->recipes[0]), (std::vector<OpView>{{TOP_REG, UREG_RAX, 0, 0},
                                                     {TOP_EMIT, 0, 0, 0},
                                                     {TOP_REG, UREG_RBX, 0, 0},
                                                     {TOP_EMIT, 0, 0, 0}}));
}

TEST(planner, ifunc_names_its_implementations) {
  Planner p(kTargetLoop);
  auto r = plan(p, {"p:c:strlen"});
  ASSERT_FALSE(r.has_value());
  const std::string& msg = r.error().message;
  EXPECT_EQ(msg.rfind("probe spec column 5: strlen in ", 0), 0u) << msg;
  EXPECT_NE(msg.find(" is an IFUNC: its symbol is the resolver that picks an implementation at "
                     "load time; probe the implementations instead"),
            std::string::npos)
      << msg;
  // The implementations are local symbols: only there with libc's debug file (libc6-dbg).
  auto libc = ElfFile::open("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_TRUE(libc.has_value());
  auto id = libc->build_id();
  bool have_debug =
      id &&
      access(
          ("/usr/lib/debug/.build-id/" + id->substr(0, 2) + "/" + id->substr(2) + ".debug").c_str(),
          R_OK) == 0;
  if (!have_debug) GTEST_SKIP() << "no libc debug file: implementations not listed";
  EXPECT_NE(msg.find("__strlen_avx2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("__strlen_sse2"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(", strlen"), std::string::npos) << msg;  // not the IFUNC itself
}

TEST(planner, ifunc_is_skipped_by_globs) {
  Planner p(kTargetLoop);
  auto r = match_sites(p.cache, pattern_of("c:strle?"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto strlen_sym = elf_symbol("/lib/x86_64-linux-gnu/libc.so.6", "strlen");
  ASSERT_TRUE(strlen_sym.has_value());
  for (const auto& m : *r) EXPECT_NE(m.offset, strlen_sym->offset) << m.label;
}

class planner_usdt : public ::testing::Test {
 protected:
  void SetUp() override {
    locations = readelf_usdt_locations(kUsdtDemo);
    ASSERT_EQ(locations["twice"].size(), 2u);
    ASSERT_EQ(locations["guarded"].size(), 1u);
    ASSERT_EQ(locations["many"].size(), 1u);
  }
  std::map<std::string, std::vector<uint64_t>> locations;
};

TEST_F(planner_usdt, one_site_per_location_without_semaphore) {
  Planner p(kUsdtDemo);
  auto r = plan(p, {R"(u::usdt_demo:twice "%u %d", arg1, arg2)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 2u);
  ASSERT_EQ(r->probes.size(), 1u);  // one probe, two locations
  for (size_t i = 0; i < 2; ++i) {
    const PlannedSite& s = r->sites[i];
    EXPECT_EQ(s.attach.offset, file_offset(kUsdtDemo, locations["twice"][i]));
    EXPECT_EQ(s.placement.address, locations["twice"][i]);
    EXPECT_EQ(s.attach.ref_ctr_offset, 0u);
    EXPECT_FALSE(s.attach.retprobe);
    EXPECT_EQ(s.label, "usdt_demo:twice");
    EXPECT_EQ(s.probe, 0u);
    EXPECT_EQ(s.attach.cookie, i);
    EXPECT_EQ(s.placement.cost.cost, SiteCost::Emulated);  // the probe's nop
    // Arguments: 4@%edi -4@$1 (or $2)
    EXPECT_EQ(ops(r->recipes[i]), (std::vector<OpView>{{TOP_REG, UREG_RDI, 0, 0},
                                                       {TOP_EXT, 4, 0, 0},
                                                       {TOP_EMIT, 0, 0, 0},
                                                       {TOP_CONST, 0, 0, int64_t(i + 1)},
                                                       {TOP_EMIT, 0, 0, 0}}));
    EXPECT_EQ(r->recipes[i].flags, 0u);
  }
}

TEST_F(planner_usdt, semaphore_probe_sets_ref_ctr_offset) {
  auto sema = elf_symbol(kUsdtDemo, "usdt_demo_guarded_semaphore");
  ASSERT_TRUE(sema.has_value());
  ASSERT_NE(sema->offset, 0u);
  Planner p(kUsdtDemo);
  auto r = plan(p, {R"(u::usdt_demo:guarded "%d %s", arg1, arg2)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  EXPECT_EQ(r->sites[0].attach.offset, file_offset(kUsdtDemo, locations["guarded"][0]));
  EXPECT_EQ(r->sites[0].attach.ref_ctr_offset, sema->offset);
}

TEST_F(planner_usdt, only_semaphore_probes_have_ref_ctr_offsets) {
  auto g1 = elf_symbol(kUsdtDemo, "usdt_demo_guarded_semaphore");
  auto g2 = elf_symbol(kUsdtDemo, "usdt_demo_guarded2_semaphore");
  ASSERT_TRUE(g1 && g2);
  Planner p(kUsdtDemo);
  auto r = match_sites(p.cache, pattern_of("u::usdt_demo:*"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  size_t total = 0;
  for (const auto& [name, locs] : locations) total += locs.size();
  EXPECT_EQ(r->size(), total);
  for (const auto& m : *r) {
    uint64_t want = m.label == "usdt_demo:guarded"    ? g1->offset
                    : m.label == "usdt_demo:guarded2" ? g2->offset
                                                      : 0;
    EXPECT_EQ(m.ref_ctr_offset, want) << m.label;
    EXPECT_NE(m.usdt, nullptr);
    EXPECT_EQ(m.function_start, 0u);
  }
}

TEST_F(planner_usdt, rip_relative_operand_is_rebased_on_the_site) {
  // many's arg8 is -4@usdt_demo_counter(%rip).
  auto counter = elf_symbol(kUsdtDemo, "usdt_demo_counter");
  ASSERT_TRUE(counter.has_value());
  Planner p(kUsdtDemo);
  auto r = plan(p, {R"(u::usdt_demo:many "%d", arg8)"});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  const uint64_t site = locations["many"][0];
  EXPECT_EQ(ops(r->recipes[0]),
            (std::vector<OpView>{{TOP_REG, UREG_RIP, 0, static_cast<int64_t>(counter->addr - site)},
                                 {TOP_DEREF, 4, 1, 0},
                                 {TOP_EMIT, 0, 0, 0}}));
}

TEST_F(planner_usdt, argument_past_the_declared_count_fails) {
  Planner p(kUsdtDemo);
  auto r = plan(p, {R"(u::usdt_demo:one "%d", arg2)"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "probe spec column 24: this USDT probe has 1 argument; arg2 does not exist");
}

TEST_F(planner_usdt, unknown_probe_lists_the_closest) {
  Planner p(kUsdtDemo);
  auto r = plan(p, {"u::usdt_demo:twise"});
  ASSERT_FALSE(r.has_value());
  const std::string prefix = "probe spec column 14: no USDT probe 'usdt_demo:twise' in " +
                             kUsdtDemo + "; closest: usdt_demo:twice";
  EXPECT_EQ(r.error().message.substr(0, prefix.size()), prefix) << r.error().message;
}

TEST_F(planner_usdt, object_without_usdt_probes_says_so) {
  Planner p(kTargetLoop);
  auto r = plan(p, {"u::usdt_demo:twice"});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, "probe spec column 14: " + kTargetLoop + " has no USDT probes");
}

TEST(planner, collect_reads_names_sysv_registers_and_memory) {
  std::vector<std::string> regs;
  bool memory = false;
  auto s = spec_of(R"(p::f (arg1 > 0 && arg3 == arg1) "%d", arg6)");
  collect_reads(*s.predicate, s.kind, regs, memory);
  collect_reads(s.args[0], s.kind, regs, memory);
  EXPECT_EQ(regs, (std::vector<std::string>{"rdi", "rdx", "r9"}));
  EXPECT_FALSE(memory);

  regs.clear();
  auto d = spec_of(R"(p::f "%d", *(u32*)arg4)");
  collect_reads(d.args[0], d.kind, regs, memory);
  EXPECT_EQ(regs, (std::vector<std::string>{"rcx"}));
  EXPECT_TRUE(memory);

  regs.clear();
  memory = false;
  auto str = spec_of(R"(p::f "%s", arg2)");  // %s of a pointer reads memory
  collect_reads(str.args[0], str.kind, regs, memory);
  EXPECT_EQ(regs, (std::vector<std::string>{"rsi"}));
  EXPECT_TRUE(memory);

  regs.clear();
  memory = false;
  auto ret = spec_of(R"(r::f "%d %d", $entry(arg5), retval)");
  for (const auto& a : ret.args) collect_reads(a, ret.kind, regs, memory);
  EXPECT_EQ(regs, (std::vector<std::string>{"r8"}));
  EXPECT_FALSE(memory);

  regs.clear();
  auto usdt = spec_of(R"(u::p:n "%d", arg1)");  // USDT operands are not SysV registers
  collect_reads(usdt.args[0], usdt.kind, regs, memory);
  EXPECT_TRUE(regs.empty());
}

}  // namespace
}  // namespace uscope
