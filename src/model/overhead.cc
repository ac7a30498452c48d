#include "model/overhead.h"

#include <map>
#include <utility>

namespace uscope {

OverheadSite overhead_site(const AttachSite& a, std::string label, SiteCost cost, uint64_t hits) {
  return {std::move(label), shown_path(a), a.path, a.offset, a.retprobe, cost, hits};
}

Overhead estimate_overhead(const OverheadInput& in) {
  Overhead o;
  o.bpf_measured = in.bpf.has_value();
  o.bpf_note = in.bpf_note;
  o.cpu_note = in.cpu_note;
  o.target_cpu_ns = in.target_cpu_ns;
  o.system_wide = in.system_wide;
  if (in.bpf && in.bpf->run_count > 0) {
    o.bpf_ns_per_run =
        static_cast<double>(in.bpf->run_time_ns) / static_cast<double>(in.bpf->run_count);
  } else if (!in.bpf) {
    o.bpf_ns_per_run = in.table_bpf_ns_per_run;
  }

  // The trap at an address is charged to its busiest site.
  std::map<std::pair<std::string, uint64_t>, size_t> owner;
  for (size_t i = 0; i < in.sites.size(); ++i) {
    const OverheadSite& s = in.sites[i];
    auto [it, fresh] = owner.try_emplace({s.path, s.offset}, i);
    if (!fresh && s.hits > in.sites[it->second].hits) it->second = i;
  }

  const HitCosts& costs = measured_hit_costs();
  o.sites.resize(in.sites.size());
  for (size_t i = 0; i < in.sites.size(); ++i) {
    const OverheadSite& s = in.sites[i];
    SiteOverhead& so = o.sites[i];
    so.site = s;
    o.hits += s.hits;
    if (owner.at({s.path, s.offset}) == i) {
      so.traps = s.hits;
      so.ns += static_cast<double>(s.hits) * trap_ns(s.cost);
      o.trap_ns += static_cast<double>(s.hits) * trap_ns(s.cost);
      if (s.cost == SiteCost::Emulated) o.emulated_traps += s.hits;
      if (s.cost == SiteCost::SingleStepped) o.single_stepped_traps += s.hits;
    }
    if (s.retprobe) {
      o.returns += s.hits;
      so.ns += static_cast<double>(s.hits) * costs.return_ns;
      o.return_ns += static_cast<double>(s.hits) * costs.return_ns;
    }
    so.ns += static_cast<double>(s.hits) * o.bpf_ns_per_run;
  }
  o.traps = o.emulated_traps + o.single_stepped_traps;
  o.bpf_ns = static_cast<double>(o.hits) * o.bpf_ns_per_run;
  o.total_ns = o.trap_ns + o.return_ns + o.bpf_ns;
  if (o.target_cpu_ns && *o.target_cpu_ns > 0) {
    o.share = o.total_ns / static_cast<double>(*o.target_cpu_ns);
  } else if (o.target_cpu_ns) {
    o.cpu_note = "the target's CPU time over the session was below a clock tick of /proc";
  }
  return o;
}

}  // namespace uscope
