#include "plan/return_sites.h"

#include <fmt/format.h>

#include "plan/site_cost.h"

namespace uscope {

const CallingConvention& convention_of(const PlannedObject& o) {
  if (!o.is_go) return sysv_convention();
  // No build info (very old or unusual builds) is taken as the register ABI, the only one Go has
  // used since 2021.
  if (o.go && !o.go->register_abi()) return go_stack_convention();
  return go_register_convention();
}

Result<std::vector<SitePlacement>> place_return_instructions(const MatchedSite& m) {
  const std::string& where = m.object->ref.display_path;
  if (!m.inlined_in.empty())
    return fail(
        "{} in {} is a copy the compiler inlined into {}: it has no return of its own; probe the "
        "return of {} instead",
        m.label, where, m.inlined_in, m.inlined_in);
  if (&convention_of(*m.object) == &go_stack_convention())
    return fail(
        "{} was built by {}, before Go's register ABI (1.17): return probes find a call's "
        "goroutine in R14, which older Go does not use; entry probes (p:) work",
        where, m.object->go ? m.object->go->version : std::string("an old Go"));
  if (m.function_size == 0)
    return fail("{} in {} has no known size, so its return instructions cannot be found", m.label,
                where);
  auto code = m.object->elf.code_bytes(m.function_start, m.function_size);
  auto rets = return_instructions(code, m.function_start);
  if (!rets)
    return fail("{} in {}: {}; its returns cannot be probed safely", m.label, where,
                rets.error().message);
  if (rets->empty())
    return fail(
        "{} in {} has no RET instruction (it ends in a jump to another function or never "
        "returns); probe the entry (p:) instead",
        m.label, where);
  std::vector<SitePlacement> out;
  for (const auto& r : *rets) {
    SitePlacement p;
    p.address = r.addr;
    p.offset = m.offset - (m.address - m.function_start) + (r.addr - m.function_start);
    p.cost = r.cls;
    p.original = r.cls;
    p.note = fmt::format("RET at +{:#x}", r.addr - m.function_start);
    out.push_back(std::move(p));
  }
  return out;
}

Result<SitePlacement> place_end_entry(const MatchedSite& m, std::string_view function,
                                      const SiteReads& reads, bool allow_move, bool any_depth,
                                      bool abandon) {
  const std::string& where = m.object->ref.display_path;
  auto syms = m.object->stored->symbols();
  if (!syms) return tl::unexpected(syms.error());
  auto found = go_functions_named(**syms, function);
  const char* what = abandon ? "is dropped unfinished" : "ends";
  if (found.size() != 1)
    return fail("{} {} at the entry of {}, which {} has {} copies of", m.label, what, function,
                where, found.size());
  MatchedSite end = function_site(*m.object, *found.front(), std::string(function));
  SitePlacement p = place_site(end, ProbeKind::Entry, reads, allow_move);
  // Go entry sites keep rsp (place_site): a site past a push would key another depth.
  if ((p.sp_delta != 0 && !any_depth) || p.cost.cost == SiteCost::Unprobeable)
    return fail("{} {} at the entry of {} in {}, which cannot be probed there: {}", m.label, what,
                function, where, p.note);
  p.note = fmt::format("{}: entry of {}{}{}",
                       abandon ? "where the call is dropped unfinished" : "the call's end",
                       function, p.note.empty() ? "" : ", ", p.note);
  return p;
}

}  // namespace uscope
