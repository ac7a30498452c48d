#pragma once
// Per-site hit counting in the kernel (hit_counter.bpf.c): the engine behind `count` and the
// self-test of `check`. Lifecycle mirrors the skeleton: create -> attach -> read -> destroy.
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "attach/bpf_loader.h"
#include "attach/uprobe_links.h"
#include "util/result.h"

namespace uscope {

class HitCounts {
 public:
  // Loads the program sized for `sites.size()` counters; `target.tgid` 0 counts every process.
  // Uses uprobe_multi links when `use_multi` and the kernel has them, single links otherwise.
  // With `skip_refused`, sites the kernel cannot probe are left out (see refused()).
  static Result<HitCounts> attach(const std::vector<AttachSite>& sites, const TargetFilter& target,
                                  bool use_multi, bool skip_refused = false);

  HitCounts(HitCounts&&) noexcept;
  HitCounts& operator=(HitCounts&&) noexcept;
  ~HitCounts();

  // Sum over CPUs, indexed by site cookie.
  Result<std::vector<uint64_t>> read() const;
  bool used_multi() const { return used_multi_; }
  size_t link_count() const { return links_.link_count(); }
  void detach() { links_.detach_all(); }
  const std::vector<UprobeLinks::Refused>& refused() const { return links_.refused(); }
  // The loaded programs, for their run time in the kernel's BPF stats (collect/bpf_run_stats.h).
  std::vector<int> program_fds() const { return obj_.program_fds(); }

 private:
  HitCounts(BpfObject obj, size_t sites, pid_t tgid);

  BpfObject obj_;
  size_t sites_ = 0;
  UprobeLinks links_;  // after obj_: detached before the programs are destroyed
  bool used_multi_ = false;
};

}  // namespace uscope
