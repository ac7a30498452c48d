#include "plan/site_placement.h"

#include <elf.h>

#include <algorithm>

namespace uscope {

namespace {

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

SiteReads all_argument_reads() {
  SiteReads r{{}, true};
  for (uscope_reg reg : sysv_convention().int_args) r.registers.push_back(register_name(reg));
  return r;
}

Result<EntrySitePlan> plan_function_entry(const ElfFile& elf, uint64_t addr, uint64_t size,
                                          const std::vector<std::string>& reads, bool reads_memory,
                                          std::optional<std::vector<uint64_t>>& branch_targets) {
  auto code = elf.code_bytes(addr, size);
  auto plan = plan_entry_site(code, addr, reads, reads_memory);
  if (!plan || plan->offset_in_function == 0 || plan->skipped_only_landing_pads) return plan;
  if (!branch_targets) {
    branch_targets.emplace();
    for (const auto& s : elf.sections()) {
      if (!(s.flags & SHF_EXECINSTR) || s.type == SHT_NOBITS) continue;
      auto data = elf.section_data(s);
      if (!data) continue;
      auto t = direct_branch_targets(*data, s.addr);
      branch_targets->insert(branch_targets->end(), t.begin(), t.end());
    }
    std::sort(branch_targets->begin(), branch_targets->end());
  }
  return plan_entry_site(code, addr, reads, reads_memory, *branch_targets);
}

SitePlacement place_site(const MatchedSite& m, ProbeKind kind,
                         const std::vector<std::string>& reads, bool reads_memory,
                         bool allow_move) {
  SitePlacement p;
  p.offset = m.offset;
  p.address = m.address;
  const ElfFile& elf = m.object->elf;
  bool at_function_start = kind != ProbeKind::Usdt && !m.usdt && m.function_size > 0 &&
                           m.address == m.function_start;
  if (at_function_start && allow_move) {
    auto plan = plan_function_entry(elf, m.address, m.function_size, reads, reads_memory,
                                    m.object->branch_targets);
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

SitePlacement listed_entry_site(PlannedObject& o, const FunctionSymbol& f) {
  return place_site(function_site(o, f, f.demangled), ProbeKind::Entry, all_argument_reads(), true);
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
