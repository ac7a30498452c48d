#include "collect/hit_counts.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collect/percpu_sum.h"
#include "hit_counter.skel.h"

namespace uscope {

void HitCounts::SkelDeleter::operator()(hit_counter* s) const {
  hit_counter__destroy(s);
}

HitCounts::HitCounts(std::unique_ptr<hit_counter, SkelDeleter> skel, size_t sites, pid_t tgid)
    : skel_(std::move(skel)), sites_(sites), links_(tgid > 0 ? tgid : -1) {}
HitCounts::HitCounts(HitCounts&&) noexcept = default;
HitCounts& HitCounts::operator=(HitCounts&&) noexcept = default;
// links_ is declared after skel_, so the links are destroyed before the programs they use.
HitCounts::~HitCounts() = default;

Result<HitCounts> HitCounts::attach(const std::vector<AttachSite>& sites, pid_t tgid,
                                    bool use_multi, bool skip_refused, bool only_after_exec) {
  if (sites.empty()) return fail("no sites to count");
  std::unique_ptr<hit_counter, SkelDeleter> skel(hit_counter__open());
  if (!skel) return fail_errno(errno, "cannot open BPF object: {}", std::strerror(errno));
  skel->rodata->target_tgid = tgid > 0 ? static_cast<uint32_t>(tgid) : 0;
  // uscope never traces itself unless asked to by PID (`uscope check` does).
  skel->rodata->self_tgid = tgid == getpid() ? 0 : static_cast<uint32_t>(getpid());
  skel->rodata->only_after_exec = only_after_exec;
  bpf_map__set_max_entries(skel->maps.hits, static_cast<uint32_t>(sites.size()));
  bool multi =
      UprobeLinks::prepare_programs(skel->progs.count_hit, skel->progs.count_hit_multi, use_multi);
  if (int err = hit_counter__load(skel.get()))
    return fail_errno(-err, "cannot load BPF program: {}", std::strerror(-err));
  HitCounts hc(std::move(skel), sites.size(), tgid);
  hc.links_.set_skip_refused(skip_refused);
  auto r = multi ? hc.links_.attach_multi(hc.skel_->progs.count_hit_multi, sites)
                 : hc.links_.attach_each(hc.skel_->progs.count_hit, sites);
  if (!r) return tl::unexpected(r.error());
  hc.used_multi_ = multi;
  return hc;
}

Result<std::vector<uint64_t>> HitCounts::read() const {
  PerCpuSum hits(bpf_map__fd(skel_->maps.hits));
  std::vector<uint64_t> out(sites_);
  for (uint32_t i = 0; i < sites_; ++i) {
    auto n = hits.sum(i);
    if (!n) return tl::unexpected(n.error());
    out[i] = *n;
  }
  return out;
}

std::vector<int> HitCounts::program_fds() const {
  std::vector<int> fds;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (bpf_program__fd(prog) >= 0) fds.push_back(bpf_program__fd(prog));
  }
  return fds;
}

}  // namespace uscope
