// The unwind table builder against functions of known shapes (tests/fixtures/unwind), glibc's
// signal trampoline and thread entries, PLT stubs, and Go's SP deltas (checked against the
// .debug_frame the Go linker derives from the same table).
#include "discover/unwind_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "discover/gopclntab.h"
#include "discover/unwind_spans.h"
#include "tool_output.h"

namespace uscope {
namespace {

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/" + name;
}

struct Built {
  std::unique_ptr<ElfFile> elf;
  UnwindTable table;
  std::map<std::string, ElfSymbol> symbols;  // functions by name
};

Built build(const std::string& path, const UnwindBuildOptions& options = {}) {
  Built b;
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf) << path << ": " << (elf ? "" : elf.error().message);
  if (!elf) return b;
  b.elf = std::make_unique<ElfFile>(std::move(*elf));
  auto t = build_unwind_table(*b.elf, options);
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  if (t) b.table = std::move(*t);
  if (auto syms = b.elf->symbols())
    for (const auto& s : *syms)
      if (s.kind == SymbolKind::Function && s.defined) b.symbols.emplace(s.name, s);
  return b;
}

// The rule in effect at `addr`.
UnwindRule rule_at(const UnwindTable& t, uint64_t addr) {
  auto it = std::upper_bound(t.rows.begin(), t.rows.end(), addr,
                             [](uint64_t a, const UnwindRow& r) { return a < r.vaddr; });
  if (it == t.rows.begin()) return UnwindRule{};
  return std::prev(it)->rule;
}

// The rows that start inside [start, end).
std::vector<UnwindRow> rows_in(const UnwindTable& t, uint64_t start, uint64_t end) {
  std::vector<UnwindRow> out;
  for (const auto& r : t.rows)
    if (r.vaddr >= start && r.vaddr < end) out.push_back(r);
  return out;
}

void expect_well_formed(const UnwindTable& t) {
  ASSERT_FALSE(t.rows.empty());
  for (size_t i = 1; i < t.rows.size(); ++i) {
    EXPECT_LT(t.rows[i - 1].vaddr, t.rows[i].vaddr) << "row " << i;
    EXPECT_NE(t.rows[i - 1].rule, t.rows[i].rule) << "row " << i;
  }
  EXPECT_EQ(t.rows.back().rule.cfa, UNWIND_CFA_NONE);
}

bool is_entry_rule(const UnwindRule& r) {
  return r.cfa == UNWIND_CFA_RSP && r.cfa_offset == 8 && r.ra_offset == -8;
}

TEST(unwind_table, function_entries_have_cfa_rsp_plus_8_and_ra_below_it) {
  auto b = build(fixture("unwind/cfi_shapes_o2"));
  expect_well_formed(b.table);
  EXPECT_EQ(b.table.source, ".eh_frame");
  EXPECT_EQ(b.table.unsupported, 0u);
  for (const char* f : {"shape_leaf", "shape_pushes", "shape_vla", "shape_noreturn", "main"}) {
    ASSERT_TRUE(b.symbols.count(f)) << f;
    auto r = rule_at(b.table, b.symbols[f].addr);
    EXPECT_TRUE(is_entry_rule(r)) << f << ": cfa kind " << r.cfa << " offset " << r.cfa_offset;
  }
  // A leaf never moves rsp: one rule from its entry to its end.
  const auto& leaf = b.symbols["shape_leaf"];
  EXPECT_EQ(rows_in(b.table, leaf.addr, leaf.addr + leaf.size).size(), 1u);
}

TEST(unwind_table, each_push_grows_the_cfa_offset_by_8) {
  auto b = build(fixture("unwind/cfi_shapes_o2"));
  const auto& f = b.symbols["shape_pushes"];
  auto rows = rows_in(b.table, f.addr, f.addr + f.size);
  ASSERT_GE(rows.size(), 4u);
  size_t pushes = 0;
  for (size_t i = 1; i < rows.size() && rows[i].rule.cfa_offset == rows[i - 1].rule.cfa_offset + 8;
       ++i)
    ++pushes;
  EXPECT_GE(pushes, 3u);  // callee-saved registers kept across the call to shape_leaf
  // rbp is one of them: once pushed, the caller's is found below the CFA.
  bool rbp_saved = std::any_of(rows.begin(), rows.end(), [](const UnwindRow& r) {
    return r.rule.rbp == UNWIND_RBP_AT_CFA && r.rule.rbp_offset < 0;
  });
  EXPECT_TRUE(rbp_saved);
}

TEST(unwind_table, a_variable_length_array_makes_the_cfa_rbp_based) {
  auto b = build(fixture("unwind/cfi_shapes_o2"));
  const auto& f = b.symbols["shape_vla"];
  auto rows = rows_in(b.table, f.addr, f.addr + f.size);
  bool rbp_based = std::any_of(rows.begin(), rows.end(), [](const UnwindRow& r) {
    return r.rule.cfa == UNWIND_CFA_RBP && r.rule.cfa_offset == 16 &&
           r.rule.rbp == UNWIND_RBP_AT_CFA && r.rule.rbp_offset == -16;
  });
  EXPECT_TRUE(rbp_based);
}

TEST(unwind_table, frame_pointer_code_is_rbp_based_after_its_prologue) {
  auto b = build(fixture("unwind/cfi_shapes_o0"));
  expect_well_formed(b.table);
  for (const char* name : {"shape_leaf", "shape_pushes", "shape_vla", "main"}) {
    const auto& f = b.symbols[name];
    EXPECT_TRUE(is_entry_rule(rule_at(b.table, f.addr))) << name;
    // push %rbp (1 byte): CFA = rsp + 16; mov %rsp,%rbp (3 bytes): CFA = rbp + 16.
    auto pushed = rule_at(b.table, f.addr + 1);
    EXPECT_EQ(pushed.cfa, UNWIND_CFA_RSP) << name;
    EXPECT_EQ(pushed.cfa_offset, 16) << name;
    auto framed = rule_at(b.table, f.addr + 4);
    EXPECT_EQ(framed.cfa, UNWIND_CFA_RBP) << name;
    EXPECT_EQ(framed.cfa_offset, 16) << name;
    EXPECT_EQ(framed.rbp, UNWIND_RBP_AT_CFA) << name;
    EXPECT_EQ(framed.rbp_offset, -16) << name;
  }
}

TEST(unwind_table, start_is_the_outermost_frame) {
  auto b = build(fixture("unwind/cfi_shapes_o2"));
  ASSERT_TRUE(b.symbols.count("_start"));
  EXPECT_EQ(rule_at(b.table, b.symbols["_start"].addr).cfa, UNWIND_CFA_END);
}

TEST(unwind_table, lazy_plt_entries_get_the_plt_rule) {
  auto b = build(fixture("unwind/cfi_shapes_o2"));
  auto plt = b.elf->section(".plt");
  ASSERT_TRUE(plt);
  ASSERT_GE(plt->size, 32u);
  // PLT0 pushes the link map (CFA = rsp + 16), then jumps; each entry after it: jmp *GOT (6
  // bytes), push index (5 bytes), jmp PLT0.
  EXPECT_EQ(rule_at(b.table, plt->addr).cfa_offset, 16);
  for (uint64_t at : {plt->addr + 16, plt->addr + 16 + 11, plt->addr + plt->size - 1}) {
    auto r = rule_at(b.table, at);
    EXPECT_EQ(r.cfa, UNWIND_CFA_PLT) << std::hex << at;
    EXPECT_EQ(r.cfa_offset, 8);
    EXPECT_EQ(r.rbp_offset, 11);  // the threshold of (pc & 15)
    EXPECT_EQ(r.ra_offset, -8);
  }
}

TEST(unwind_table, code_no_fde_covers_is_none) {
  auto b = build(fixture("unwind/cfi_shapes_o2"));
  // Between two functions' FDEs lie alignment bytes no FDE covers.
  const auto& leaf = b.symbols["shape_leaf"];
  const auto& next = b.symbols["shape_pushes"];
  ASSERT_LT(leaf.addr + leaf.size, next.addr);
  EXPECT_EQ(rule_at(b.table, leaf.addr + leaf.size).cfa, UNWIND_CFA_NONE);
  EXPECT_EQ(rule_at(b.table, b.table.rows.back().vaddr + 100).cfa, UNWIND_CFA_NONE);
}

const char* kLibc = "/lib/x86_64-linux-gnu/libc.so.6";

TEST(unwind_table, libc_restore_rt_is_a_signal_frame_and_clone_ends_threads) {
  if (!std::filesystem::exists(kLibc)) GTEST_SKIP() << kLibc << " is not there";
  auto b = build(kLibc);
  expect_well_formed(b.table);
  std::vector<UnwindRule> signal;
  size_t ends = 0;
  for (const auto& r : b.table.rows) {
    if (r.rule.cfa == UNWIND_CFA_SIGNAL) signal.push_back(r.rule);
    ends += r.rule.cfa == UNWIND_CFA_END;
  }
  ASSERT_EQ(signal.size(), 1u);  // __restore_rt
  EXPECT_EQ(b.table.signal_frames, 1u);
  // The kernel's ucontext at rsp: uc_mcontext's rbp at 120, rsp at 160, rip at 168.
  EXPECT_EQ(signal[0].cfa_offset, 160);
  EXPECT_EQ(signal[0].rbp_offset, 120);
  EXPECT_EQ(signal[0].ra_offset, 168);
  EXPECT_GE(ends, 1u);  // clone3's child, clone's child
  // A handful of hand-written functions (setcontext, __longjmp) keep the CFA in other registers.
  EXPECT_LT(b.table.unsupported, 20u);
}

TEST(unwind_table, an_object_without_cfi_gets_an_empty_table) {
  auto b = build(fixture("go/gohi_stripped"));
  EXPECT_TRUE(b.table.rows.empty());
  EXPECT_EQ(b.table.source, "");
}

struct GoBuilt {
  Built b;
  std::optional<GoPclntab> go;
};

GoBuilt build_go(const std::string& path) {
  GoBuilt g;
  auto elf = ElfFile::open(path);
  EXPECT_TRUE(elf);
  if (!elf) return g;
  g.b.elf = std::make_unique<ElfFile>(std::move(*elf));
  auto t = GoPclntab::read(*g.b.elf);
  EXPECT_TRUE(t && *t);
  if (!t || !*t) return g;
  g.go = std::move(**t);
  UnwindBuildOptions options;
  options.go = &*g.go;
  auto table = build_unwind_table(*g.b.elf, options);
  EXPECT_TRUE(table) << (table ? "" : table.error().message);
  if (table) g.b.table = std::move(*table);
  return g;
}

const GoFunction* go_function(const GoPclntab& go, std::string_view name) {
  for (const auto& f : go.functions())
    if (f.name == name) return &f;
  return nullptr;
}

TEST(unwind_table, go_functions_unwind_by_their_sp_deltas) {
  auto g = build_go(fixture("go/gohi_stripped"));
  ASSERT_TRUE(g.go);
  expect_well_formed(g.b.table);
  EXPECT_EQ(g.b.table.source, ".gopclntab");
  const GoFunction* f = go_function(*g.go, "main.main");
  ASSERT_TRUE(f);
  EXPECT_TRUE(is_entry_rule(rule_at(g.b.table, f->entry)));
  // Inside the body: CFA = rsp + frame + 8, the caller's rbp saved in the frame's top slot.
  size_t index = static_cast<size_t>(f - g.go->functions().data());
  auto deltas = g.go->sp_deltas(index);
  auto body = std::max_element(deltas.begin(), deltas.end(), [](const auto& a, const auto& b) {
    return a.end - a.start < b.end - b.start;
  });
  ASSERT_NE(body, deltas.end());
  ASSERT_GT(body->delta, 0);
  auto r = rule_at(g.b.table, body->end - 1);
  EXPECT_EQ(r.cfa, UNWIND_CFA_RSP);
  EXPECT_EQ(r.cfa_offset, body->delta + 8);
  EXPECT_EQ(r.ra_offset, -8);
  EXPECT_EQ(r.rbp, UNWIND_RBP_AT_CFA);
  EXPECT_EQ(r.rbp_offset, -16);
  // The instruction that saves rbp (right after SUBQ) still runs with the caller's in rbp.
  EXPECT_EQ(rule_at(g.b.table, deltas[1].start).rbp, UNWIND_RBP_SAME);

  for (const char* outer : {"runtime.goexit", "runtime.mstart", "runtime.rt0_go"}) {
    const GoFunction* o = go_function(*g.go, outer);
    ASSERT_TRUE(o) << outer;
    EXPECT_EQ(rule_at(g.b.table, o->entry).cfa, UNWIND_CFA_END) << outer;
  }
}

// The Go linker writes .debug_frame from the same SP deltas: where it says CFA = rsp + N, so must
// the table (it is dropped by -s -w; the table is built from .gopclntab alone).
TEST(unwind_table, go_rows_agree_with_the_go_linkers_debug_frame) {
  auto g = build_go(fixture("go/gohi_stripped"));
  auto df = build(fixture("go/gohi"));  // no Go options: its .debug_frame
  ASSERT_TRUE(g.go);
  ASSERT_EQ(df.table.source.rfind(".debug_frame", 0), 0u) << df.table.source;
  size_t compared = 0, differ = 0;
  for (const auto& row : g.b.table.rows) {
    if (row.rule.cfa != UNWIND_CFA_RSP) continue;
    auto theirs = rule_at(df.table, row.vaddr);
    if (theirs.cfa != UNWIND_CFA_RSP) continue;
    ++compared;
    if (theirs.cfa_offset != row.rule.cfa_offset || theirs.ra_offset != row.rule.ra_offset) {
      if (++differ <= 5)
        ADD_FAILURE() << std::hex << row.vaddr << std::dec << ": cfa rsp+" << row.rule.cfa_offset
                      << ", .debug_frame says rsp+" << theirs.cfa_offset;
    }
  }
  EXPECT_GT(compared, 1000u);
  EXPECT_EQ(differ, 0u);
}

// The rows binutils computes from the same CFI (readelf --debug-dump=frames-interp): at every
// location readelf lists, the table's rule must say what readelf says of the CFA, rbp and the
// return address. Rows whose CFA is a DWARF expression ("exp": PLT stubs, the signal trampoline)
// are left to the tests above.
void expect_rows_agree_with_readelf(const std::string& path) {
  SCOPED_TRACE(path);
  auto b = build(path);
  std::istringstream in(test::command_output("readelf --debug-dump=frames-interp " + path));
  std::vector<std::string> columns;  // of the current FDE's table: LOC CFA reg... ra
  bool in_fde = false;               // a CIE's own rows are no code's
  size_t compared = 0, differ = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() >= 2 && w[0] == "LOC" && w[1] == "CFA") {
      columns = w;
      continue;
    }
    if (line.find(" FDE ") != std::string::npos || line.find(" CIE ") != std::string::npos) {
      in_fde = line.find(" FDE ") != std::string::npos;
      columns.clear();
      continue;
    }
    if (!in_fde || columns.empty() || w.size() != columns.size() || line.starts_with(" ")) continue;
    std::map<std::string, std::string> at;
    for (size_t i = 0; i < w.size(); ++i) at[columns[i]] = w[i];
    const uint64_t loc = std::stoull(at["LOC"], nullptr, 16);
    const UnwindRule ours = rule_at(b.table, loc);
    const std::string& cfa = at["CFA"];
    const std::string rbp = at.contains("rbp") ? at["rbp"] : "u";
    std::string want, got;
    if (at["ra"] == "u") {
      want = "end";  // the outermost frame: _start, clone, thread entries
      got = ours.cfa == UNWIND_CFA_END ? "end" : "not end";
    } else if (cfa.starts_with("rsp+") || cfa.starts_with("rbp+")) {
      if (ours.cfa == UNWIND_CFA_PLT || ours.cfa == UNWIND_CFA_SIGNAL) continue;
      want = cfa + " ra=" + at["ra"] + " rbp=" + rbp;
      got = fmt::format("{}+{} ra=c{:+d} rbp={}",
                        ours.cfa == UNWIND_CFA_RSP   ? "rsp"
                        : ours.cfa == UNWIND_CFA_RBP ? "rbp"
                                                     : "other",
                        ours.cfa_offset, ours.ra_offset,
                        ours.rbp == UNWIND_RBP_AT_CFA ? fmt::format("c{:+d}", ours.rbp_offset)
                        : ours.rbp == UNWIND_RBP_SAME ? "u"
                                                      : "undefined");
    } else {
      continue;
    }
    ++compared;
    if (want != got && ++differ <= 5)
      ADD_FAILURE() << std::hex << loc << std::dec << ": readelf says " << want << ", the table "
                    << got;
  }
  EXPECT_GT(compared, 10u);
  EXPECT_EQ(differ, 0u) << "of " << compared << " rows";
}

TEST(unwind_table, rows_agree_with_readelf_frames_interp) {
  expect_rows_agree_with_readelf(fixture("unwind/cfi_shapes_o2"));
  expect_rows_agree_with_readelf(fixture("unwind/cfi_shapes_o0"));
  expect_rows_agree_with_readelf(kLibc);
}

// The assembly of spans into rows, on made-up spans.
UnwindRule rsp(int32_t off) {
  return UnwindRule{.cfa = UNWIND_CFA_RSP, .cfa_offset = off};
}

TEST(unwind_rows, gaps_become_none_and_equal_neighbours_merge) {
  auto rows =
      rows_of_spans({{0x100, 0x110, rsp(8)}, {0x110, 0x120, rsp(8)}, {0x130, 0x140, rsp(16)}}, {});
  std::vector<UnwindRow> want = {
      {0x100, rsp(8)}, {0x120, UnwindRule{}}, {0x130, rsp(16)}, {0x140, UnwindRule{}}};
  EXPECT_EQ(rows, want);
}

TEST(unwind_rows, overlapping_spans_keep_the_lower_one) {
  auto rows = rows_of_spans({{0x100, 0x120, rsp(8)}, {0x110, 0x130, rsp(16)}}, {});
  std::vector<UnwindRow> want = {{0x100, rsp(8)}, {0x120, rsp(16)}, {0x130, UnwindRule{}}};
  EXPECT_EQ(rows, want);
}

TEST(unwind_rows, fallback_spans_fill_only_what_primary_ones_leave) {
  auto rows = rows_of_spans({{0x110, 0x120, rsp(8)}}, {{0x100, 0x140, rsp(32)}});
  std::vector<UnwindRow> want = {
      {0x100, rsp(32)}, {0x110, rsp(8)}, {0x120, rsp(32)}, {0x140, UnwindRule{}}};
  EXPECT_EQ(rows, want);
}

TEST(unwind_rows, no_spans_no_rows) {
  EXPECT_TRUE(rows_of_spans({}, {}).empty());
}

TEST(fde_range, decodes_pcrel_sdata4_and_absolute_addresses) {
  // initial location -0x10 from the field, range 0x20
  const uint8_t pcrel[] = {0xf0, 0xff, 0xff, 0xff, 0x20, 0, 0, 0};
  auto r = decode_fde_range(pcrel, 0x2000, 0x1b, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 0x1ff0u);
  EXPECT_EQ(r->end, 0x2010u);
  const uint8_t abs[] = {0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 0, 0};
  r = decode_fde_range(abs, 0, 0x00, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 0x1000u);
  EXPECT_EQ(r->end, 0x1008u);
  EXPECT_FALSE(decode_fde_range(std::span(pcrel, 6), 0x2000, 0x1b, true));  // truncated range
  EXPECT_FALSE(decode_fde_range(pcrel, 0x2000, 0x3b, true));                // datarel: not for code
}

TEST(fde_range, finds_the_r_encoding_after_other_augmentations) {
  // "zPLR": personality (encoding 0x9b: indirect pcrel sdata4, 4 bytes), LSDA encoding, then R.
  const uint8_t data[] = {0x9b, 1, 2, 3, 4, 0x1b, 0x1b};
  EXPECT_EQ(cie_fde_encoding("zPLR", data, true), 0x1b);
  EXPECT_EQ(cie_fde_encoding("", {}, true), 0x00);
  EXPECT_FALSE(cie_fde_encoding("zPLR", std::span(data, 3), true));
  EXPECT_FALSE(cie_fde_encoding("zXR", data, true));
}

}  // namespace
}  // namespace uscope
