// The planner as the one owner of attach sites, against the built fixtures with no process: every
// command's plan is a site table indexed by the bpf cookie (probe and role per site); trace globs
// make a probe per function; count leaves out what cannot be probed and says why; latency pairs
// its halves; list's entry site is trace's. Offsets are checked against the ELF symbol table.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "discover/elf_file.h"
#include "plan/aggregate_plan.h"
#include "plan/planner.h"
#include "util/names.h"

namespace uscope {
namespace {

std::string fixture(const std::string& rel) {
  return std::string(USCOPE_FIXTURE_DIR) + "/" + rel;
}

const std::string kGlobTargets = fixture("native/glob_targets");
const std::string kTargetLoop = fixture("native/target_loop");
const std::string kGoWork = fixture("go/gowork");

struct Planner {
  explicit Planner(std::string main) : ctx{nullptr, std::move(main), 0}, cache(ctx) {}
  TargetContext ctx;
  ObjectCache cache;
};

std::vector<ProbeSpec> specs_of(std::vector<std::string_view> texts, bool patterns = false) {
  std::vector<ProbeSpec> out;
  for (auto t : texts) {
    auto s = patterns ? parse_probe_pattern(t) : parse_probe_spec(t);
    EXPECT_TRUE(s.has_value()) << t << ": " << (s ? "" : s.error().message);
    if (s) out.push_back(*s);
  }
  return out;
}

// File offset of a function symbol, read from the ELF directly.
uint64_t symbol_offset(const std::string& path, const std::string& name) {
  auto elf = ElfFile::open(path);
  if (!elf) return ~0ull;
  auto syms = elf->symbols();
  if (!syms) return ~0ull;
  for (const auto& s : *syms)
    if (s.name == name && s.defined && s.addr) return elf->vaddr_to_offset(s.addr).value_or(~0ull);
  return ~0ull;
}

void expect_cookies_are_indexes(std::span<const PlannedSite> sites) {
  for (size_t i = 0; i < sites.size(); ++i) EXPECT_EQ(sites[i].attach.cookie, i) << i;
}

TEST(site_table, trace_glob_makes_a_probe_per_function) {
  Planner p(kGlobTargets);
  auto r = plan_trace(p.cache, specs_of({R"(p::glob_* "%d", arg1)"}), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  std::set<std::string> labels;
  for (const auto& probe : r->probes) labels.insert(probe.label);
  EXPECT_EQ(labels, (std::set<std::string>{"glob_alpha", "glob_beta", "glob_gamma"}));
  ASSERT_EQ(r->sites.size(), 3u);
  ASSERT_EQ(r->recipes.size(), 3u);
  expect_cookies_are_indexes(r->sites);
  for (size_t i = 0; i < r->sites.size(); ++i) {
    const auto& s = r->sites[i];
    EXPECT_EQ(r->probes[s.probe].label, s.label);
    EXPECT_EQ(s.role, SiteRole::Event);
    EXPECT_EQ(r->recipes[i].probe_id, s.probe);
    EXPECT_EQ(s.attach.offset, symbol_offset(kGlobTargets, s.label)) << s.label;
  }
  // The function whose first instruction the kernel refuses is left out, with the reason.
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].label, "glob_unprobeable");
  EXPECT_NE(r->skipped[0].why.find("VEX"), std::string::npos) << r->skipped[0].why;
  EXPECT_TRUE(r->skip_refused);
}

TEST(site_table, trace_exact_name_is_not_a_glob) {
  Planner p(kGlobTargets);
  auto r = plan_trace(p.cache, specs_of({R"(p::glob_alpha "%d", arg1)"}), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->sites.size(), 1u);
  EXPECT_FALSE(r->skip_refused);
}

TEST(site_table, trace_glob_over_the_cap_is_refused) {
  Planner p(kGlobTargets);
  TraceOptions opts;
  opts.max_glob_functions = 2;
  auto r = plan_trace(p.cache, specs_of({R"(p::glob_* "%d", arg1)"}), opts);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message,
            "probe spec column 4: 'glob_*' matches 4 functions in " + kGlobTargets +
                "; trace prints an event per call and takes at most 2 functions per glob: narrow "
                "the glob, or count the calls first with uscope count 'glob_*'");
}

TEST(site_table, trace_glob_with_an_offset_is_refused) {
  Planner p(kGlobTargets);
  auto r = plan_trace(p.cache, specs_of({"p::glob_*+4"}), {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message.rfind("probe spec column 4: 'glob_*' is a glob, and +0x4", 0), 0u)
      << r.error().message;
}

TEST(site_table, trace_return_glob_plans_entry_halves_and_returns) {
  Planner p(kGlobTargets);
  auto r = plan_trace(p.cache, specs_of({R"(r::glob_[ab]* "%d %d", $entry(arg1), retval)"}), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->probes.size(), 2u);
  ASSERT_EQ(r->sites.size(), 4u);
  expect_cookies_are_indexes(r->sites);
  for (uint32_t probe = 0; probe < 2; ++probe) {
    auto save = find_cookie(r->sites, probe, SiteRole::SaveEntry);
    auto event = find_cookie(r->sites, probe, SiteRole::Event);
    ASSERT_TRUE(save && event) << probe;
    EXPECT_FALSE(r->sites[*save].attach.retprobe);
    EXPECT_TRUE(r->sites[*event].attach.retprobe);
    EXPECT_EQ(r->recipes[*save].flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY));
    EXPECT_EQ(r->sites[*save].label, r->probes[probe].label);
  }
}

TEST(site_table, cookie_table_names_probe_and_role) {
  Planner p(kTargetLoop);
  auto r = plan_trace(
      p.cache, specs_of({R"(r::work "%d", $entry(arg1))", R"(p::first_is_x "%s", arg1)"}), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 3u);
  expect_cookies_are_indexes(r->sites);
  EXPECT_EQ(r->sites[0].probe, 0u);
  EXPECT_EQ(r->sites[0].role, SiteRole::SaveEntry);
  EXPECT_EQ(r->sites[1].probe, 0u);
  EXPECT_EQ(r->sites[1].role, SiteRole::Event);
  EXPECT_EQ(r->sites[2].probe, 1u);
  EXPECT_EQ(r->sites[2].role, SiteRole::Event);
  EXPECT_EQ(find_cookie(r->sites, 0, SiteRole::SaveEntry), 0u);
  EXPECT_EQ(find_cookie(r->sites, 0, SiteRole::Event), 1u);
  EXPECT_EQ(find_cookie(r->sites, 1, SiteRole::Event), 2u);
  EXPECT_EQ(find_cookie(r->sites, 1, SiteRole::SaveEntry), std::nullopt);
  EXPECT_STREQ(site_role_name(SiteRole::SaveEntry), "save-entry");
}

TEST(site_table, count_leaves_out_unprobeable_sites_and_says_why) {
  Planner p(kGlobTargets);
  auto r = plan_count(p.cache, specs_of({"glob_*", "glob_alpha"}, true), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 3u);  // glob_alpha once
  expect_cookies_are_indexes(r->sites);
  std::set<std::string> labels;
  for (size_t i = 0; i < r->sites.size(); ++i) {
    const auto& s = r->sites[i];
    labels.insert(s.label);
    EXPECT_EQ(s.role, SiteRole::Count);
    EXPECT_EQ(s.probe, i);
    EXPECT_FALSE(s.attach.retprobe);
    EXPECT_EQ(s.object, kGlobTargets);
    EXPECT_NE(s.placement.cost.cost, SiteCost::Unprobeable);
    EXPECT_FALSE(s.placement.cost.insn.empty());  // the cost class travels with the site
  }
  EXPECT_EQ(labels, (std::set<std::string>{"glob_alpha", "glob_beta", "glob_gamma"}));
  ASSERT_EQ(r->skipped.size(), 1u);
  EXPECT_EQ(r->skipped[0].label, "glob_unprobeable");
  EXPECT_EQ(r->skipped[0].object, kGlobTargets);
  EXPECT_EQ(r->skipped[0].why, "VEX/EVEX-encoded (AVX) instruction: kernel refuses (ENOTSUPP)");
}

TEST(site_table, count_reads_nothing_and_moves_furthest) {
  Planner p(kGlobTargets);
  auto r = plan_count(p.cache, specs_of({"reads_decide_site"}, true), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->sites.size(), 1u);
  // endbr64 (4), mov rax, rdi (3), xor esi, esi (2), then the emulated push rbp.
  EXPECT_EQ(r->sites[0].attach.offset, symbol_offset(kGlobTargets, "reads_decide_site") + 9);
  EXPECT_EQ(r->sites[0].placement.moved, 9u);
  EXPECT_EQ(r->sites[0].placement.cost.cost, SiteCost::Emulated);
  EXPECT_EQ(r->sites[0].placement.original.insn, "endbr64");
  auto fixed = plan_count(p.cache, specs_of({"reads_decide_site"}, true), {.move_sites = false});
  ASSERT_TRUE(fixed.has_value());
  EXPECT_EQ(fixed->sites[0].placement.moved, 0u);
}

TEST(site_table, latency_pairs_entry_and_return_halves_on_one_site) {
  Planner p(kTargetLoop);
  auto r = plan_latency(p.cache, specs_of({"work", "first_is_x", "wor*"}, true), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->functions.size(), 2u);
  ASSERT_EQ(r->sites.size(), 4u);
  ASSERT_EQ(r->recipes.size(), 4u);
  expect_cookies_are_indexes(r->sites);
  for (uint32_t k = 0; k < 2; ++k) {
    const auto& f = r->functions[k];
    const PlannedSite& entry = r->sites[f.entry_cookie];
    const PlannedSite& ret = r->sites[f.return_cookies.at(0)];
    EXPECT_EQ(entry.role, SiteRole::LatencyEntry);
    EXPECT_EQ(ret.role, SiteRole::LatencyReturn);
    EXPECT_EQ(entry.probe, k);
    EXPECT_EQ(ret.probe, k);
    EXPECT_FALSE(entry.attach.retprobe);
    EXPECT_TRUE(ret.attach.retprobe);
    EXPECT_EQ(entry.attach.offset, ret.attach.offset);
    EXPECT_EQ(entry.label, f.label);
    EXPECT_EQ(f.object, kTargetLoop);
    EXPECT_EQ(find_cookie(r->sites, k, SiteRole::LatencyEntry), f.entry_cookie);
    EXPECT_EQ(find_cookie(r->sites, k, SiteRole::LatencyReturn), f.return_cookies.at(0));
    const auto& er = r->recipes[f.entry_cookie];
    const auto& rr = r->recipes[f.return_cookies.at(0)];
    EXPECT_EQ(er.flags, static_cast<uint32_t>(TRACE_F_SAVE_ENTRY));
    EXPECT_EQ(er.probe_id, k);
    EXPECT_EQ(er.sp_delta, entry.placement.sp_delta);
    EXPECT_EQ(rr.flags,
              static_cast<uint32_t>(TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY | TRACE_F_HISTOGRAM));
    EXPECT_EQ(rr.probe_id, k);
  }
  EXPECT_EQ(r->functions[0].label, "work");
  // A return probe moves only while rsp is unchanged: past endbr64 to push rbp.
  EXPECT_EQ(r->sites[0].attach.offset, symbol_offset(kTargetLoop, "work") + 4);
}

TEST(site_table, go_names_are_literal_where_globs_would_read_them) {
  auto p = go_name_pattern("main.(*Store).Get");
  EXPECT_TRUE(p.go);
  EXPECT_FALSE(p.glob_chars);
  EXPECT_FALSE(is_function_glob("main.(*Store).Get"));
  EXPECT_TRUE(is_function_glob("main.(*Store).*"));
  EXPECT_TRUE(glob_match(go_name_pattern("main.(*Store).*").glob, "main.(*Store).Get"));
  EXPECT_FALSE(glob_match(go_name_pattern("main.(*Store).*").glob, "main.(Store).Get"));
  EXPECT_TRUE(is_function_glob("main.Sum[...]"));
  EXPECT_TRUE(glob_match(go_name_pattern("main.Sum[...]").glob, "main.Sum[go.shape.int_0]"));
  EXPECT_FALSE(glob_match(go_name_pattern("main.Sum[...]").glob, "main.Sumx"));
  EXPECT_FALSE(is_function_glob("main.Sum[go.shape.int_0]"));
  EXPECT_TRUE(is_function_glob("net/http.*"));
  EXPECT_FALSE(go_name_pattern("str[a-z]*").go);  // a C glob keeps its character class
  EXPECT_TRUE(is_function_glob("str[a-z]*"));
}

// Go names in real symbols: a receiver, every instantiation of a generic function.
TEST(site_table, go_names_select_go_functions) {
  Planner go(fixture("go/gohttp_server"));
  auto obj = go.cache.get("");
  ASSERT_TRUE(obj.has_value());
  auto syms = go.cache.symbols(**obj);
  ASSERT_TRUE(syms.has_value());
  auto names = [&](std::string_view n) {
    std::vector<std::string> out;
    for (const auto* f : functions_named(**syms, n)) out.push_back(f->name);
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(names("main.(*Store).Get"), std::vector<std::string>{"main.(*Store).Get"});
  EXPECT_EQ(names("main.Sum[...]"),
            (std::vector<std::string>{"main.Sum[go.shape.float64_0]", "main.Sum[go.shape.int_0]"}));
  EXPECT_EQ(names("main.Sum[go.shape.int_0]"),
            std::vector<std::string>{"main.Sum[go.shape.int_0]"});
  EXPECT_FALSE(names("net/http.(*response).*").empty());
}

TEST(site_table, latency_refuses_usdt) {
  Planner p(kTargetLoop);
  auto usdt = plan_latency(p.cache, specs_of({"u::prov:name"}, true), {});
  ASSERT_FALSE(usdt.has_value());
  EXPECT_EQ(usdt.error().message, "latency measures functions; 'u::prov:name' is a USDT probe");
}

// Go: one entry site and a return site per RET, all keyed by goroutine; no uretprobe.
TEST(site_table, latency_on_go_times_every_ret) {
  Planner go(kGoWork);
  auto r = plan_latency(go.cache, specs_of({"main.work"}, true), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_EQ(r->functions.size(), 1u);
  const auto& f = r->functions[0];
  ASSERT_FALSE(f.return_cookies.empty());
  expect_cookies_are_indexes(r->sites);
  EXPECT_EQ(r->sites[f.entry_cookie].role, SiteRole::LatencyEntry);
  EXPECT_EQ(r->recipes[f.entry_cookie].flags, TRACE_F_SAVE_ENTRY | TRACE_F_GOROUTINE);
  for (uint64_t c : f.return_cookies) {
    EXPECT_EQ(r->sites[c].role, SiteRole::LatencyReturn);
    EXPECT_FALSE(r->sites[c].attach.retprobe);
    EXPECT_NE(r->sites[c].attach.offset, r->sites[f.entry_cookie].attach.offset);
    EXPECT_EQ(r->recipes[c].flags,
              TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY | TRACE_F_HISTOGRAM | TRACE_F_GOROUTINE);
  }
}

// list's ENTRY PROBE SITE is where trace attaches a p: probe reading every argument and memory.
SitePlacement listed_site(Planner& p, const std::string& name) {
  auto obj = p.cache.get("");
  EXPECT_TRUE(obj.has_value());
  auto syms = p.cache.symbols(**obj);
  EXPECT_TRUE(syms.has_value());
  auto found = functions_named(**syms, name);
  EXPECT_EQ(found.size(), 1u) << name;
  return listed_entry_site(**obj, *found[0]);
}

TEST(site_table, list_entry_site_is_where_trace_attaches_a_probe_reading_everything) {
  for (const auto& [path, name] :
       std::vector<std::pair<std::string, std::string>>{{kGlobTargets, "reads_decide_site"},
                                                        {kGlobTargets, "glob_alpha"},
                                                        {kTargetLoop, "work"},
                                                        {kGoWork, "main.main"}}) {
    Planner p(path);
    SitePlacement listed = listed_site(p, name);
    // On Go code with DWARF argN is the Nth parameter (main.main has none): its registers are
    // read as ctx->REG.
    const std::string args = path == kGoWork
                                 ? "ctx->ax, ctx->bx, ctx->cx, ctx->di, ctx->si, ctx->r8"
                                 : "arg1, arg2, arg3, arg4, arg5, arg6";
    auto t = plan_trace(p.cache, specs_of({"p::" + name + R"( "%d %d %d %d %d %s", )" + args}), {});
    ASSERT_TRUE(t.has_value()) << t.error().message;
    ASSERT_EQ(t->sites.size(), 1u);
    EXPECT_EQ(listed.offset, t->sites[0].placement.offset) << name;
    EXPECT_EQ(listed.cost.cost, t->sites[0].placement.cost.cost) << name;
    EXPECT_EQ(listed.note, t->sites[0].placement.note) << name;
  }
}

TEST(site_table, fewer_reads_may_move_further_than_list_shows) {
  Planner p(kGlobTargets);
  SitePlacement listed = listed_site(p, "reads_decide_site");
  EXPECT_EQ(listed.moved, 0u);  // arg2 is clobbered before the push
  auto t = plan_trace(p.cache, specs_of({R"(p::reads_decide_site "%d", arg1)"}), {});
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->sites[0].placement.moved, 9u);
}

TEST(site_table, unresolved_names_and_registers_count_as_reads) {
  Expr reg;
  reg.op = Expr::Op::Reg;
  reg.text = "edx";
  Expr name;
  name.op = Expr::Op::Name;
  name.text = "len";
  Expr member;
  member.op = Expr::Op::Member;
  member.text = "path";
  member.index = 1;
  member.children.push_back(name);

  std::vector<std::string> regs;
  bool memory = false;
  collect_reads(reg, ProbeKind::Entry, regs, memory);
  EXPECT_EQ(regs, (std::vector<std::string>{"rdx"}));
  EXPECT_FALSE(memory);

  regs.clear();
  collect_reads(name, ProbeKind::Entry, regs, memory);
  EXPECT_EQ(regs, (std::vector<std::string>{"rdi", "rsi", "rdx", "rcx", "r8", "r9"}));
  EXPECT_FALSE(memory);

  regs.clear();
  collect_reads(member, ProbeKind::Entry, regs, memory);
  EXPECT_EQ(regs.size(), 6u);
  EXPECT_TRUE(memory);
}

TEST(site_table, usdt_glob_makes_a_probe_per_probe_name) {
  Planner p(fixture("usdt/usdt_demo"));
  auto r = plan_trace(p.cache, specs_of({R"(u::usdt_demo:gu* "g")"}), {});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  std::set<std::string> labels;
  for (const auto& probe : r->probes) labels.insert(probe.label);
  EXPECT_EQ(labels, (std::set<std::string>{"usdt_demo:guarded", "usdt_demo:guarded2"}));
  for (const auto& s : r->sites) EXPECT_NE(s.attach.ref_ctr_offset, 0u) << s.label;
}

}  // namespace
}  // namespace uscope
