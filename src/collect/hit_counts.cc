#include "collect/hit_counts.h"

#include "collect/percpu_sum.h"
#include "hit_counter.skel.h"

namespace uscope {

HitCounts::HitCounts(BpfObject obj, size_t sites, pid_t tgid)
    : obj_(std::move(obj)), sites_(sites), links_(tgid > 0 ? tgid : -1) {}
HitCounts::HitCounts(HitCounts&&) noexcept = default;
HitCounts& HitCounts::operator=(HitCounts&&) noexcept = default;
// links_ is declared after obj_, so the links are destroyed before the programs they use.
HitCounts::~HitCounts() = default;

Result<HitCounts> HitCounts::attach(const std::vector<AttachSite>& sites,
                                    const TargetFilter& target, bool use_multi, bool skip_refused) {
  if (sites.empty()) return fail("no sites to count");
  auto obj = BpfObject::open(hit_counter__open, hit_counter__destroy, "uscope's hit counter");
  if (!obj) return tl::unexpected(obj.error());
  if (auto r = obj->set_target(target); !r) return tl::unexpected(r.error());
  if (auto r = obj->set_max_entries("hits", static_cast<uint32_t>(sites.size())); !r)
    return tl::unexpected(r.error());
  auto* skel = obj->skeleton<hit_counter>();
  bool multi =
      UprobeLinks::prepare_programs(skel->progs.count_hit, skel->progs.count_hit_multi, use_multi);
  if (auto r = obj->load(); !r) return tl::unexpected(r.error());
  HitCounts hc(std::move(*obj), sites.size(), target.tgid);
  hc.links_.set_skip_refused(skip_refused);
  auto r = multi ? hc.links_.attach_multi(skel->progs.count_hit_multi, sites)
                 : hc.links_.attach_each(skel->progs.count_hit, sites);
  if (!r) return tl::unexpected(r.error());
  hc.used_multi_ = multi;
  return hc;
}

Result<std::vector<uint64_t>> HitCounts::read() const {
  PerCpuSum hits(obj_.map_fd("hits"));
  std::vector<uint64_t> out(sites_);
  for (uint32_t i = 0; i < sites_; ++i) {
    auto n = hits.sum(i);
    if (!n) return tl::unexpected(n.error());
    out[i] = *n;
  }
  return out;
}

}  // namespace uscope
