#include "plan/site_placement.h"

#include <elf.h>

#include <algorithm>
#include <map>

#include "plan/branch_candidates.h"

namespace uscope {

namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

// possible_far_branches() into [first, last] of the executable `sections`, read a piece at a time
// and not kept (ElfFile::read_code): planning one function does not make all of a big .text
// resident. A piece is read on past its end by the longest encoding, so none is cut in two.
std::vector<PossibleBranch> far_branches_into(const ElfFile& elf,
                                              const std::vector<ElfSection>& sections,
                                              uint64_t first, uint64_t last) {
  constexpr uint64_t kPiece = 1 << 20, kLongest = 6;
  auto inside = [&](uint64_t target) {
    return std::any_of(sections.begin(), sections.end(),
                       [&](const ElfSection& s) { return target - s.addr < s.size; });
  };
  std::vector<PossibleBranch> out;
  std::vector<uint8_t> bytes;
  for (const auto& s : sections) {
    for (uint64_t at = 0; at < s.size; at += kPiece) {
      if (!elf.read_code(s.addr + at, kPiece + kLongest, bytes)) break;
      const uint64_t end = s.addr + at + kPiece;
      for_each_possible_branch(bytes, s.addr + at, [&](uint64_t pc, uint64_t target) {
        if (pc < end && target >= first && target <= last && is_far_branch(pc, target) &&
            inside(target))
          out.push_back({target, pc});
      });
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

SiteReads all_argument_reads() {
  SiteReads r{{}, true};
  for (uscope_reg reg : sysv_convention().int_args) r.registers.push_back(register_name(reg));
  return r;
}

Result<EntrySitePlan> plan_function_entry(const ElfFile& elf, uint64_t addr, uint64_t size,
                                          const std::vector<std::string>& reads, bool reads_memory,
                                          BranchScan& scan, const SymbolTable* symbols) {
  auto code = elf.code_bytes(addr, size);
  auto plan = plan_entry_site(code, addr, reads, reads_memory);
  if (!plan || plan->offset_in_function == 0 || plan->skipped_only_landing_pads) return plan;
  std::vector<ElfSection> sections;  // the executable ones
  for (const auto& s : elf.sections())
    if ((s.flags & SHF_EXECINSTR) && s.type != SHT_NOBITS) sections.push_back(s);
  // Branches from outside the function into what the move skips: the far ones found once for the
  // object, the near ones in the bytes just before and after the function.
  const uint64_t first = addr + 1, last = addr + plan->offset_in_function;
  std::vector<PossibleBranch> own_far;  // the first function's: trace plans one or a few
  if (!scan.far && (scan.far_scans++ > 0 || scan.plans_all)) {
    std::vector<std::pair<uint64_t, std::span<const uint8_t>>> all;
    for (const auto& s : sections)
      if (auto bytes = elf.code_bytes(s.addr, s.size); !bytes.empty())
        all.emplace_back(s.addr, bytes);
    scan.far = possible_far_branches(all);
  }
  if (!scan.far) own_far = far_branches_into(elf, sections, first, last);
  const std::vector<PossibleBranch>& far_branches = scan.far ? *scan.far : own_far;
  // A possible branch is a real one when the function holding it, decoded from its start, has
  // that branch at that pc; one in code no symbol covers counts as real. A symbol without a size
  // (crt's register_tm_clones, hand-written assembly) holds the code up to the next symbol.
  auto holder = [&](uint64_t pc) -> std::optional<std::pair<uint64_t, uint64_t>> {
    if (!symbols) return std::nullopt;
    if (const FunctionSymbol* f = symbols->containing(pc); f && f->size > 0)
      return std::pair{f->addr, f->size};
    const auto& fs = symbols->functions();
    auto next = std::upper_bound(fs.begin(), fs.end(), pc,
                                 [](uint64_t a, const FunctionSymbol& f) { return a < f.addr; });
    if (next == fs.begin() || next == fs.end() || std::prev(next)->size != 0) return std::nullopt;
    return std::pair{std::prev(next)->addr, next->addr - std::prev(next)->addr};
  };
  if (scan.decoded.size() > BranchScan::kMaxDecoded) scan.decoded.clear();
  auto real = [&](uint64_t pc, uint64_t target) {
    auto f = holder(pc);
    if (!f) return true;
    const auto [start, size] = *f;
    auto code = elf.code_bytes(start, size);
    if (code.size() != size) return true;  // not all of it readable: count the branch
    BranchScan::Decoded& d =
        scan.decoded.try_emplace(start, BranchScan::Decoded{{}, start}).first->second;
    if (d.next <= pc)
      d.next = for_each_direct_branch_before(
          code.subspan(d.next - start), d.next, pc + 1,
          [&](const DirectBranch& b) { d.branches.emplace_back(b.pc, b.target); });
    return std::binary_search(d.branches.begin(), d.branches.end(), std::pair{pc, target});
  };
  std::vector<uint64_t> external;
  for (auto it =
           std::lower_bound(far_branches.begin(), far_branches.end(), PossibleBranch{first, 0});
       it != far_branches.end() && it->target <= last; ++it)
    if ((it->pc < addr || it->pc - addr >= size) && real(it->pc, it->target))
      external.push_back(it->target);
  // Encodings starting in [lo, hi), read on past hi (one may end inside the function).
  auto near = [&](uint64_t lo, uint64_t hi) {
    for (const auto& s : sections) {
      const uint64_t from = std::max(lo, s.addr), to = std::min(hi + 8, s.addr + s.size);
      if (from >= to) continue;
      for_each_possible_branch(
          elf.code_bytes(from, to - from), from, [&](uint64_t pc, uint64_t target) {
            if (pc < hi && target >= first && target <= last && real(pc, target))
              external.push_back(target);
          });
    }
  };
  const auto reach = static_cast<uint64_t>(kNearBranchReach) + 8;  // + the longest encoding
  near(addr > reach ? addr - reach : 0, addr);
  near(addr + size, addr + size + reach);
  std::sort(external.begin(), external.end());
  return plan_entry_site(code, addr, reads, reads_memory, external);
}

SitePlacement place_site(const MatchedSite& m, ProbeKind kind,
                         const std::vector<std::string>& reads, bool reads_memory,
                         bool allow_move) {
  SitePlacement p;
  p.offset = m.offset;
  p.address = m.address;
  const ElfFile& elf = m.object->elf;
  bool at_function_start =
      kind != ProbeKind::Usdt && !m.usdt && m.function_size > 0 && m.address == m.function_start;
  if (at_function_start && allow_move) {
    auto symbols = m.object->stored->symbols();
    auto plan = plan_function_entry(elf, m.address, m.function_size, reads, reads_memory,
                                    m.object->branch_scan, symbols ? *symbols : nullptr);
    // A uretprobe takes the return address from the top of the stack when it hits, so a return
    // probe may only move while rsp is still the entry rsp (past endbr64, not past a push). Go
    // keys a call by its goroutine and rsp (goroutine_key), so any Go probe keeps rsp too: it
    // moves past the stack-growth check (`cmp rsp, [r14+0x10]`, single-stepped) onto its jcc
    // (emulated), which every call, and morestack's re-run, passes once.
    if (plan && (kind == ProbeKind::Return || m.object->is_go) && plan->sp_delta != 0) {
      p.note = fmt::format("kept at +0x0: {} needs rsp unchanged, and {}",
                           m.object->is_go ? "a Go probe" : "a return probe", plan->reason);
    } else if (plan) {
      p.offset += plan->offset_in_function;
      p.address += plan->offset_in_function;
      p.moved = plan->offset_in_function;
      p.sp_delta = static_cast<int32_t>(plan->sp_delta);
      p.cost = plan->site;
      p.original = plan->original;
      p.note = plan->reason;
      return p;
    }
    if (!plan) p.note = plan.error().message;
  }
  auto code = elf.code_bytes(m.address, 16);
  auto cls = classify_site(code, m.address);
  if (cls)
    p.cost = *cls;
  else
    p.cost = SiteClass{SiteCost::Unprobeable, "?", 0, cls.error().message};
  p.original = p.cost;
  return p;
}

SitePlacement place_site(const MatchedSite& m, ProbeKind kind, const SiteReads& reads,
                         bool allow_move) {
  return place_site(m, kind, reads.registers, reads.memory, allow_move);
}

AttachSite entry_probe_site(PlannedObject& o, const FunctionSymbol& f, const SiteReads& reads,
                            SitePlacement& placed) {
  placed = place_site(function_site(o, f, f.name), ProbeKind::Entry, reads, true);
  AttachSite site;
  site.path = o.ref.open_path;
  site.display_path = o.ref.display_path;
  site.offset = placed.offset;
  site.go_code = o.is_go;
  return site;
}

SitePlacement listed_entry_site(PlannedObject& o, const FunctionSymbol& f) {
  static const SiteReads reads = all_argument_reads();  // the same for every function
  o.branch_scan.plans_all = true;
  return place_site(function_site(o, f, f.demangled()), ProbeKind::Entry, reads, true);
}

SitePlacement listed_usdt_site(PlannedObject& o, const UsdtProbe& p, const UsdtLocation& loc) {
  return place_site(usdt_site(o, p, loc), ProbeKind::Usdt, SiteReads{}, true);
}

void collect_reads(const Expr& e, ProbeKind kind, std::vector<std::string>& regs, bool& memory,
                   const CallingConvention& cc) {
  auto arg_reg = [&](int index) {
    if (index >= 1 && static_cast<size_t>(index) <= cc.int_args.size())
      add_unique(regs, register_name(cc.int_args[static_cast<size_t>(index - 1)]));
  };
  switch (e.op) {
    case Expr::Op::Arg:
      if (kind != ProbeKind::Usdt) arg_reg(e.index);
      break;
    case Expr::Op::Entry:
      if (e.children.empty()) arg_reg(e.index);  // else its child says what it reads
      break;
    case Expr::Op::Deref:
    case Expr::Op::Str:
      memory = true;
      break;
    case Expr::Op::Reg:  // ctx->rdx; "rip" keeps the probe where it was asked for
      add_unique(regs, canonical_register(e.text));
      break;
    case Expr::Op::Name:
    case Expr::Op::Member:
      // Not resolved yet (a parameter, perhaps a member behind it): it may be any argument, and
      // a member is read from memory. Conservative, so a site is never moved past a clobber.
      if (kind != ProbeKind::Usdt)
        for (uscope_reg r : cc.int_args) add_unique(regs, register_name(r));
      if (e.op == Expr::Op::Member) memory = true;
      break;
    default:
      break;
  }
  for (const auto& c : e.children) collect_reads(c, kind, regs, memory, cc);
}

SiteReads spec_reads(const ProbeSpec& spec, const CallingConvention& cc) {
  SiteReads r;
  if (spec.predicate) collect_reads(*spec.predicate, spec.kind, r.registers, r.memory, cc);
  for (const auto& a : spec.args) collect_reads(a, spec.kind, r.registers, r.memory, cc);
  return r;
}

}  // namespace uscope
