#include "plan/planner.h"

#include <fmt/format.h>

#include <map>

#include "plan/name_resolver.h"
#include "plan/return_sites.h"
#include "util/names.h"

namespace uscope {

const char* site_role_name(SiteRole role) {
  switch (role) {
    case SiteRole::Event:
      return "event";
    case SiteRole::SaveEntry:
      return "save-entry";
    case SiteRole::LatencyEntry:
      return "latency-entry";
    case SiteRole::LatencyReturn:
      return "latency-return";
    case SiteRole::Count:
      return "count";
    case SiteRole::Aggregate:
      return "aggregate";
    case SiteRole::Abandon:
      return "abandon";
  }
  return "?";
}

std::optional<uint64_t> find_cookie(std::span<const PlannedSite> sites, uint32_t probe,
                                    SiteRole role) {
  for (const auto& s : sites)
    if (s.probe == probe && s.role == role) return s.attach.cookie;
  return std::nullopt;
}

SiteContext site_context(const MatchedSite& m, ProbeKind kind, const SitePlacement& place) {
  SiteContext ctx;
  ctx.kind = kind;
  ctx.usdt = m.usdt;
  ctx.site_addr = place.address;
  ctx.sp_delta = place.sp_delta;
  ctx.cc = &convention_of(*m.object);
  if (ctx.cc == &go_stack_convention())
    ctx.go_stack_abi = m.object->go ? m.object->go->version : std::string("an old Go");
  PlannedObject* obj = m.object;
  ctx.symbol_address = [obj](const std::string& name) { return symbol_address(*obj, name); };
  return ctx;
}

namespace {

// Whether an expression reads an argument register or a register by name (argN, $entry(argN),
// ctx->REG): what a copy inlined into another function does not have.
bool reads_registers(const Expr& e) {
  if (e.op == Expr::Op::Arg || e.op == Expr::Op::Reg ||
      (e.op == Expr::Op::Entry && e.children.empty()))
    return true;
  for (const auto& c : e.children)
    if (reads_registers(c)) return true;
  return false;
}

bool has_dwarf_sections(const ElfFile& elf) {
  return elf.section(".debug_info") || elf.section(".zdebug_info");
}

}  // namespace

Result<void> check_inlined_site(const MatchedSite& m, const ProbeSpec& spec) {
  if (m.inlined_in.empty()) return {};
  bool registers = spec.predicate && reads_registers(*spec.predicate);
  for (const auto& a : spec.args) registers |= reads_registers(a);
  const bool dwarf = has_dwarf_sections(m.object->elf);
  std::string why;
  if (spec.kind == ProbeKind::Return)
    why = "a copy has no return of its own";
  else if (registers)
    why =
        "a copy's arguments are not in Go's argument registers (name its parameters instead: "
        "DWARF places them)";
  else if (has_names(spec) && !dwarf)
    why = fmt::format(
        "only DWARF says where a copy's parameters are, and {} has none (built with -ldflags=-w)",
        m.object->ref.display_path);
  if (why.empty()) return {};
  auto callees = functions_called_by_copy(m);
  std::string instead;
  for (size_t i = 0; i < callees.size() && i < 3; ++i)
    instead += fmt::format("{}{}", i ? ", " : "", callees[i]);
  return fail(
      "probe spec column {}: {} is inlined into {} in {}: {}; probe {}{}, or count the copy's "
      "calls without arguments",
      spec.function_column, m.label, m.inlined_in, m.object->ref.display_path, why,
      instead.empty() ? "" : "a function it calls (" + instead + ") or ", m.inlined_in);
}

Result<TracePlan> plan_trace(ObjectCache& cache, std::span<const ProbeSpec> specs,
                             const TraceOptions& opts) {
  TracePlan plan;
  for (const auto& spec : specs) {
    const bool glob = is_function_glob(spec.function);
    if (glob && spec.offset)
      return fail(
          "probe spec column {}: '{}' is a glob, and +{:#x} names an instruction of one "
          "function; name the function, or drop the offset",
          spec.function_column, spec.function, spec.offset);
    auto matched = match_sites(cache, spec);
    if (!matched) return tl::unexpected(matched.error());
    if (glob && spec.kind != ProbeKind::Usdt && matched->size() > opts.max_glob_functions)
      return fail(
          "probe spec column {}: '{}' matches {} functions in {}; trace prints an event per "
          "call and takes at most {} functions per glob: narrow the glob, or count the calls "
          "first with uscope count '{}{}{}'",
          spec.function_column, spec.function, matched->size(),
          matched->front().object->ref.display_path, opts.max_glob_functions, spec.target,
          spec.target.empty() ? "" : ":", spec.function);
    plan.skip_refused |= glob;

    std::map<std::string, uint32_t> probe_of_label;
    for (const auto& m : *matched) {
      if (auto r = check_inlined_site(m, spec); !r) return tl::unexpected(r.error());
      // Parameter names and members are registers and offsets of this function in this object;
      // the registers a probe reads are known only once they are resolved.
      std::vector<NameOrigin> origins;
      auto resolved = resolve_names(spec, *m.object, m.function_start, m.label, &origins,
                                    m.inlined_in.empty() ? 0 : m.address);
      if (!resolved) return tl::unexpected(resolved.error());
      const CallingConvention& cc = convention_of(*m.object);
      const SiteReads reads = spec_reads(*resolved, cc);
      SitePlacement main_place = place_site(m, spec.kind, reads, opts.move_sites);
      // Code whose stacks move (Go) returns through uprobes on its RET instructions.
      const bool ret_sites =
          spec.kind == ProbeKind::Return && cc.returns == ReturnSites::RetInstructions;
      std::vector<SitePlacement> returns;
      std::vector<SitePlacement> abandons;
      const bool end_entries = ret_sites && !spec.ends_at.empty();
      if (end_entries) {
        for (const auto& end : spec.ends_at) {
          auto placed =
              place_end_entry(m, end, reads, opts.move_sites, spec.one_per_goroutine, false);
          if (!placed)
            return fail("probe spec column {}: {}", spec.function_column, placed.error().message);
          returns.push_back(*placed);
        }
        if (spec.one_per_goroutine)
          for (const auto& at : spec.abandoned_at) {
            auto placed = place_end_entry(m, at, {}, opts.move_sites, true, true);
            if (!placed)
              return fail("probe spec column {}: {}", spec.function_column, placed.error().message);
            abandons.push_back(*placed);
          }
        main_place = returns.front();
      } else if (ret_sites) {
        auto placed = place_return_instructions(m);
        if (!placed && glob) {
          plan.skipped.push_back({m.label, m.object->ref.display_path, placed.error().message});
          continue;
        }
        if (!placed)
          return fail("probe spec column {}: {}", spec.function_column, placed.error().message);
        returns = std::move(*placed);
        main_place = returns.front();
      }
      // A glob takes what it can probe; a function named exactly is attached or refused whole.
      if (glob && main_place.cost.cost == SiteCost::Unprobeable) {
        plan.skipped.push_back({m.label, m.object->ref.display_path, main_place.cost.why});
        continue;
      }
      auto [it, added] = probe_of_label.emplace(m.label, static_cast<uint32_t>(plan.probes.size()));
      if (added) plan.probes.push_back({spec, m.label, {}, std::move(origins)});
      uint32_t probe = it->second;

      SiteContext ctx = site_context(m, spec.kind, main_place);
      ctx.capture_stack = opts.capture_stack;
      if (end_entries) ctx.end_index = 0;
      PlannedObject* obj = m.object;
      auto compiled = compile_probe(*resolved, ctx, probe);
      if (!compiled) return tl::unexpected(compiled.error());
      // Each end of spec.ends_at reads only its own values (Expr::Op::AtEnd): a recipe per end.
      std::vector<uscope_recipe> end_recipes;
      for (size_t i = 1; end_entries && i < returns.size(); ++i) {
        SiteContext end_ctx = ctx;
        end_ctx.end_index = static_cast<int>(i);
        auto end = compile_probe(*resolved, end_ctx, probe);
        if (!end) return tl::unexpected(end.error());
        end_recipes.push_back(end->main);
      }
      plan.probes[probe].fields = compiled->fields;

      auto add_site = [&](const uscope_recipe& r, const SitePlacement& place, bool retprobe,
                          SiteRole role) {
        PlannedSite s;
        s.attach.path = obj->ref.open_path;
        s.attach.display_path = obj->ref.display_path;
        s.attach.offset = place.offset;
        s.attach.ref_ctr_offset = m.ref_ctr_offset;
        s.attach.cookie = plan.recipes.size();
        s.attach.retprobe = retprobe;
        s.attach.go_code = obj->is_go;
        s.probe = probe;
        s.role = role;
        s.object = obj->ref.display_path;
        s.label = m.label;
        s.placement = place;
        plan.recipes.push_back(r);
        plan.sites.push_back(std::move(s));
      };
      // One call per goroutine: its entry, ends and abandon site key by the goroutine alone.
      const uint32_t key_flags =
          end_entries && spec.one_per_goroutine && (compiled->main.flags & TRACE_F_GOROUTINE)
              ? TRACE_F_GOROUTINE_ONLY
              : 0u;
      compiled->main.flags |= key_flags;
      if (compiled->entry) {
        SitePlacement entry_place = place_site(m, ProbeKind::Entry, reads, opts.move_sites);
        compiled->entry->sp_delta = entry_place.sp_delta;
        compiled->entry->flags |= key_flags;
        add_site(*compiled->entry, entry_place, false, SiteRole::SaveEntry);
      }
      // Entry halves of return probes emit nothing: only the event's recipe takes the stack.
      if (opts.kernel_stack) compiled->main.flags |= TRACE_F_KSTACK;
      if (ret_sites) {
        for (size_t i = 0; i < returns.size(); ++i) {
          uscope_recipe r = i == 0 || !end_entries ? compiled->main : end_recipes[i - 1];
          r.flags = compiled->main.flags;  // with the key and stack flags added above
          add_site(r, returns[i], false, SiteRole::Event);
        }
      } else {
        add_site(compiled->main, main_place, spec.kind == ProbeKind::Return, SiteRole::Event);
      }
      if (key_flags)
        for (const auto& place : abandons) {
          uscope_recipe drop{};
          drop.probe_id = probe;
          drop.flags = TRACE_F_RETURN | TRACE_F_GOROUTINE | TRACE_F_ABANDON | key_flags;
          add_site(drop, place, false, SiteRole::Abandon);
        }
    }
  }
  return plan;
}

}  // namespace uscope
