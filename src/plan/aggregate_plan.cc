#include "plan/aggregate_plan.h"

#include "plan/return_sites.h"

namespace uscope {

namespace {

PlannedSite planned_site(const MatchedSite& m, const SitePlacement& place, uint64_t cookie,
                         bool retprobe, uint32_t probe, SiteRole role) {
  PlannedSite s;
  s.attach.path = m.object->ref.open_path;
  s.attach.display_path = m.object->ref.display_path;
  s.attach.offset = place.offset;
  s.attach.ref_ctr_offset = m.ref_ctr_offset;
  s.attach.cookie = cookie;
  s.attach.retprobe = retprobe;
  s.attach.go_code = m.object->is_go;
  s.probe = probe;
  s.role = role;
  s.object = m.object->ref.display_path;
  s.label = m.label;
  s.placement = place;
  return s;
}

}  // namespace

Result<CountPlan> plan_count(ObjectCache& cache, std::span<const ProbeSpec> patterns,
                             const AggregateOptions& opts) {
  auto matched = match_patterns(cache, patterns);
  if (!matched) return tl::unexpected(matched.error());
  CountPlan plan;
  for (const auto& m : *matched) {
    auto place = place_site(m, ProbeKind::Entry, SiteReads{}, opts.move_sites);
    if (place.cost.cost == SiteCost::Unprobeable) {
      plan.skipped.push_back({m.label, m.object->ref.display_path, place.cost.why});
      continue;
    }
    auto n = plan.sites.size();
    plan.sites.push_back(
        planned_site(m, place, n, false, static_cast<uint32_t>(n), SiteRole::Count));
  }
  return plan;
}

Result<void> check_latency_patterns(std::span<const ProbeSpec> patterns) {
  for (const auto& p : patterns)
    if (p.kind == ProbeKind::Usdt)
      return fail("latency measures functions; '{}' is a USDT probe", p.text);
  return {};
}

Result<LatencyPlan> plan_latency(ObjectCache& cache, std::span<const ProbeSpec> patterns,
                                 const AggregateOptions& opts) {
  if (auto r = check_latency_patterns(patterns); !r) return tl::unexpected(r.error());
  std::vector<ProbeSpec> returns(patterns.begin(), patterns.end());
  // Return probes need what entry+return tracing needs (no Go, rsp unchanged at a moved site).
  for (auto& p : returns) p.kind = ProbeKind::Return;
  auto matched = match_patterns(cache, returns);
  if (!matched) return tl::unexpected(matched.error());
  LatencyPlan plan;
  for (const auto& m : *matched) {
    auto k = static_cast<uint32_t>(plan.functions.size());
    const CallingConvention& cc = convention_of(*m.object);
    if (cc.returns == ReturnSites::RetInstructions) {
      // Go: the entry past the stack-growth check (rsp unchanged), a return half on each RET,
      // all keyed by goroutine.
      auto rets = place_return_instructions(m);
      if (!rets) return tl::unexpected(rets.error());
      auto entry = place_site(m, ProbeKind::Entry, SiteReads{}, opts.move_sites);
      LatencyPlan::Function f{m.label, m.object->ref.display_path, plan.sites.size(), {}};
      plan.recipes.push_back(latency_entry_recipe(k, entry.sp_delta, cc));
      plan.sites.push_back(
          planned_site(m, entry, f.entry_cookie, false, k, SiteRole::LatencyEntry));
      for (const auto& place : *rets) {
        f.return_cookies.push_back(plan.sites.size());
        plan.recipes.push_back(latency_return_recipe(k, cc));
        plan.sites.push_back(
            planned_site(m, place, plan.sites.size(), false, k, SiteRole::LatencyReturn));
      }
      plan.functions.push_back(std::move(f));
      continue;
    }
    // Entry and return halves on one site: the kernel runs both on one trap. A return probe
    // only moves while rsp is unchanged, which is what lets the entry half key on the entry rsp.
    auto place = place_site(m, ProbeKind::Return, SiteReads{}, opts.move_sites);
    LatencyPlan::Function f{
        m.label, m.object->ref.display_path, plan.sites.size(), {plan.sites.size() + 1}};
    plan.recipes.push_back(latency_entry_recipe(k, place.sp_delta, cc));
    plan.sites.push_back(planned_site(m, place, f.entry_cookie, false, k, SiteRole::LatencyEntry));
    plan.recipes.push_back(latency_return_recipe(k, cc));
    plan.sites.push_back(
        planned_site(m, place, f.return_cookies[0], true, k, SiteRole::LatencyReturn));
    plan.functions.push_back(std::move(f));
  }
  return plan;
}

}  // namespace uscope
