#include "plan/planner.h"

#include <elf.h>

#include <algorithm>
#include <set>

#include "util/names.h"

namespace uscope {

namespace {

constexpr const char* kSysvArgRegs[] = {"rdi", "rsi", "rdx", "rcx", "r8", "r9"};

std::string spec_where(const ProbeSpec& spec, const PlannedObject& o) {
  return spec.target.empty() ? o.ref.display_path : spec.target;
}

Result<std::vector<MatchedSite>> match_usdt(ObjectCache& cache, PlannedObject& o,
                                            const ProbeSpec& spec) {
  auto probes = cache.usdt(o);
  if (!probes) return tl::unexpected(probes.error());
  std::vector<MatchedSite> out;
  std::vector<std::string> names;
  for (const auto& p : **probes) {
    names.push_back(p.provider + ":" + p.name);
    bool provider_ok = spec.provider.empty() || glob_match(spec.provider, p.provider);
    if (!provider_ok || !glob_match(spec.function, p.name)) continue;
    for (const auto& loc : p.locations) {
      MatchedSite m;
      m.object = &o;
      m.label = p.provider + ":" + p.name;
      m.address = loc.addr;
      m.offset = loc.offset;
      m.ref_ctr_offset = loc.semaphore ? loc.semaphore_offset : 0;
      m.usdt = &loc;
      out.push_back(m);
    }
  }
  if (out.empty()) {
    std::string wanted =
        spec.provider.empty() ? spec.function : spec.provider + ":" + spec.function;
    if (names.empty())
      return fail("probe spec column {}: {} has no USDT probes", spec.function_column,
                  o.ref.display_path);
    auto close = closest_names(wanted, names);
    return fail("probe spec column {}: no USDT probe '{}' in {}{}{}", spec.function_column, wanted,
                o.ref.display_path, close.empty() ? "" : "; closest: ", join(close));
  }
  return out;
}

Result<std::vector<MatchedSite>> match_functions(ObjectCache& cache, PlannedObject& o,
                                                 const ProbeSpec& spec) {
  auto syms = cache.symbols(o);
  if (!syms) return tl::unexpected(syms.error());
  std::vector<const FunctionSymbol*> found;
  // A demangled signature ("ns::f(char const*)") is a name, never a glob.
  const bool glob = has_glob_chars(spec.function) && spec.function.find('(') == std::string::npos;
  if (glob) {
    found = (*syms)->match(spec.function);
  } else {
    found = (*syms)->find(spec.function);  // "ns::f" names every overload, "ns::f(int)" one
  }
  if (found.empty()) {
    auto close = closest_names(spec.function, (*syms)->names());
    return fail("probe spec column {}: no function '{}' in {}{}{}", spec.function_column,
                spec.function, o.ref.display_path, close.empty() ? "" : "; closest: ", join(close));
  }
  // An IFUNC symbol is its resolver, run once at load time; a glob skips it, and naming it
  // exactly points at the implementations it chooses between.
  if (!glob && !found.empty() &&
      std::all_of(found.begin(), found.end(), [](const FunctionSymbol* f) { return f->ifunc; })) {
    std::vector<std::string> impls;
    for (const auto& name : (*syms)->names())
      if (name.find(spec.function) != std::string::npos && name != spec.function &&
          name.starts_with("__") && !name.starts_with("__GI_"))  // __GI_: glibc-internal alias
        impls.push_back(name);
    if (impls.size() > 8) impls.resize(8);
    return fail(
        "probe spec column {}: {} in {} is an IFUNC: its symbol is the resolver that "
        "picks an implementation at load time; probe the implementations instead{}{}",
        spec.function_column, spec.function, o.ref.display_path, impls.empty() ? "" : ": ",
        join(impls));
  }
  std::vector<MatchedSite> out;
  std::set<uint64_t> seen;
  for (const auto* f : found) {
    if (f->ifunc) continue;
    if (!seen.insert(f->offset).second) continue;  // alias of a function already taken
    if (spec.offset && f->size && spec.offset >= f->size)
      return fail("probe spec column {}: {}+{:#x} is past the end of the function ({} bytes)",
                  spec.function_column, f->demangled, spec.offset, f->size);
    MatchedSite m;
    m.object = &o;
    // A glob names every alias; a label should be the one users know.
    m.label = glob ? (*syms)->preferred_alias(*f)->demangled : f->demangled;
    m.address = f->addr + spec.offset;
    m.function_start = f->addr;
    m.offset = f->offset + spec.offset;
    m.function_size = f->size;
    out.push_back(m);
  }
  return out;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

Result<PlannedObject*> ObjectCache::get(const std::string& target) {
  if (auto it = by_target_.find(target); it != by_target_.end()) return it->second.get();
  Result<ObjectRef> ref =
      (target.empty() && !ctx_.process && !ctx_.main_executable.empty())
          ? Result<ObjectRef>(ObjectRef{ctx_.main_executable, ctx_.main_executable, false})
          : resolve_object(target, ctx_.process);
  if (!ref) return tl::unexpected(ref.error());
  auto elf = ElfFile::open(ref->open_path, ref->display_path);
  if (!elf) return tl::unexpected(elf.error());
  auto go = read_go_buildinfo(*elf);
  if (!go) return tl::unexpected(go.error());
  bool is_go = go->has_value() || elf->section(".gopclntab").has_value();
  auto obj = std::make_unique<PlannedObject>(
      PlannedObject{.ref = std::move(*ref), .elf = std::move(*elf)});
  obj->is_go = is_go;
  obj->go = std::move(*go);
  auto* raw = obj.get();
  by_target_.emplace(target, std::move(obj));
  return raw;
}

Result<const SymbolTable*> ObjectCache::symbols(PlannedObject& o) {
  if (!o.symbols) {
    auto s = SymbolTable::load(o.elf);
    if (!s) return tl::unexpected(s.error());
    o.symbols = std::move(*s);
  }
  return &*o.symbols;
}

Result<const std::vector<UsdtProbe>*> ObjectCache::usdt(PlannedObject& o) {
  if (!o.usdt) {
    auto p = read_usdt_probes(o.elf);
    if (!p) return tl::unexpected(p.error());
    o.usdt = std::move(*p);
  }
  return &*o.usdt;
}

Result<std::vector<MatchedSite>> match_sites(ObjectCache& cache, const ProbeSpec& spec) {
  auto obj = cache.get(spec.target);
  if (!obj) return fail("probe spec column 3: {}", obj.error().message);
  if ((*obj)->is_go && spec.kind == ProbeKind::Return)
    return fail(
        "probe spec column 1: {} is a Go program: return probes (uretprobes) crash Go "
        "code when its stack moves; use an entry probe (p:)",
        spec_where(spec, **obj));
  return spec.kind == ProbeKind::Usdt ? match_usdt(cache, **obj, spec)
                                      : match_functions(cache, **obj, spec);
}

Result<std::vector<MatchedSite>> match_patterns(ObjectCache& cache,
                                                std::span<const ProbeSpec> patterns) {
  std::vector<MatchedSite> out;
  std::set<std::pair<std::string, uint64_t>> seen;
  for (const auto& p : patterns) {
    auto sites = match_sites(cache, p);
    if (!sites) return tl::unexpected(sites.error());
    for (auto& m : *sites)
      if (seen.emplace(m.object->ref.open_path, m.offset).second) out.push_back(std::move(m));
  }
  return out;
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
  // Go functions start with a stack-growth check, not a prologue worth moving past; and the
  // registers read there follow Go's ABI, which collect_reads does not model.
  bool at_function_start = kind != ProbeKind::Usdt && !m.usdt && m.function_size > 0 &&
                           m.address == m.function_start && !m.object->is_go;
  if (at_function_start && allow_move) {
    auto plan = plan_function_entry(elf, m.address, m.function_size, reads, reads_memory,
                                    m.object->branch_targets);
    // A uretprobe takes the return address from the top of the stack when it hits, so a return
    // probe may only move while rsp is still the entry rsp (past endbr64, not past a push).
    if (plan && kind == ProbeKind::Return && plan->sp_delta != 0) {
      p.note =
          fmt::format("kept at +0x0: a return probe needs rsp unchanged, and {}", plan->reason);
    } else if (plan) {
      p.offset += plan->offset_in_function;
      p.address += plan->offset_in_function;
      p.sp_delta = static_cast<int32_t>(plan->sp_delta);
      p.cost = plan->site;
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
  return p;
}

void collect_reads(const Expr& e, ProbeKind kind, std::vector<std::string>& regs, bool& memory) {
  switch (e.op) {
    case Expr::Op::Arg:
      if (kind != ProbeKind::Usdt && e.index >= 1 && e.index <= 6)
        add_unique(regs, kSysvArgRegs[e.index - 1]);
      break;
    case Expr::Op::Entry:
      if (e.index >= 1 && e.index <= 6) add_unique(regs, kSysvArgRegs[e.index - 1]);
      break;
    case Expr::Op::Deref:
    case Expr::Op::Str:
      memory = true;
      break;
    default:
      break;
  }
  for (const auto& c : e.children) collect_reads(c, kind, regs, memory);
}

Result<TracePlan> plan_trace(ObjectCache& cache, std::span<const ProbeSpec> specs,
                             const TraceOptions& opts) {
  TracePlan plan;
  for (const auto& spec : specs) {
    auto matched = match_sites(cache, spec);
    if (!matched) return tl::unexpected(matched.error());
    std::vector<std::string> reads;
    bool memory = false;
    if (spec.predicate) collect_reads(*spec.predicate, spec.kind, reads, memory);
    for (const auto& a : spec.args) collect_reads(a, spec.kind, reads, memory);

    std::map<std::string, uint32_t> probe_of_label;
    for (const auto& m : *matched) {
      auto [it, added] = probe_of_label.emplace(m.label, static_cast<uint32_t>(plan.probes.size()));
      if (added) plan.probes.push_back({spec, m.label, {}});
      uint32_t probe = it->second;

      SitePlacement main_place = place_site(m, spec.kind, reads, memory, opts.move_sites);
      SiteContext ctx;
      ctx.kind = spec.kind;
      ctx.usdt = m.usdt;
      ctx.site_addr = main_place.address;
      ctx.sp_delta = main_place.sp_delta;
      ctx.capture_stack = opts.capture_stack;
      ctx.go_abi = m.object->is_go;
      // Before Go 1.17 arguments were on the stack; no build info (very old or stripped) is
      // taken as the register ABI, the only one Go has used since 2021.
      if (m.object->go && !m.object->go->register_abi()) ctx.go_stack_abi = m.object->go->version;
      PlannedObject* obj = m.object;
      ctx.symbol_address = [obj](const std::string& name) -> std::optional<uint64_t> {
        if (!obj->symbol_addresses) {
          obj->symbol_addresses.emplace();
          if (auto syms = obj->elf.symbols())
            for (const auto& s : *syms)
              if (s.defined) obj->symbol_addresses->emplace(s.name, s.addr);
        }
        auto it = obj->symbol_addresses->find(name);
        if (it == obj->symbol_addresses->end()) return std::nullopt;
        return it->second;
      };
      auto compiled = compile_probe(spec, ctx, probe);
      if (!compiled) return tl::unexpected(compiled.error());
      plan.probes[probe].fields = compiled->fields;

      auto add_site = [&](const uscope_recipe& r, const SitePlacement& place, bool retprobe) {
        PlannedSite s;
        s.attach.path = obj->ref.open_path;
        s.attach.display_path = obj->ref.display_path;
        s.attach.offset = place.offset;
        s.attach.ref_ctr_offset = m.ref_ctr_offset;
        s.attach.cookie = plan.recipes.size();
        s.attach.retprobe = retprobe;
        s.probe = probe;
        s.object = obj->ref.display_path;
        s.label = m.label;
        s.placement = place;
        plan.recipes.push_back(r);
        plan.sites.push_back(std::move(s));
      };
      if (compiled->entry) {
        SitePlacement entry_place = place_site(m, ProbeKind::Entry, reads, memory, opts.move_sites);
        compiled->entry->sp_delta = entry_place.sp_delta;
        add_site(*compiled->entry, entry_place, false);
      }
      add_site(compiled->main, main_place, spec.kind == ProbeKind::Return);
    }
  }
  return plan;
}

}  // namespace uscope
