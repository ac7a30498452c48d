#pragma once
// Per-site hit counting in the kernel (hit_counter.bpf.c): the engine behind `count` and the
// self-test of `check`. Lifecycle mirrors the skeleton: create -> attach -> read -> destroy.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "attach/uprobe_links.h"
#include "util/result.h"

struct hit_counter;  // the bpftool skeleton

namespace uscope {

class HitCounts {
 public:
  // Loads the program sized for `sites.size()` counters; `tgid` 0 counts every process.
  // Uses uprobe_multi links when `use_multi` and the kernel has them, single links otherwise.
  // With `skip_refused`, sites the kernel cannot probe are left out (see refused()).
  // `only_after_exec`: `tgid` is a command uscope forked; nothing counts before its exec.
  static Result<HitCounts> attach(const std::vector<AttachSite>& sites, pid_t tgid, bool use_multi,
                                  bool skip_refused = false, bool only_after_exec = false);

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
  std::vector<int> program_fds() const;

 private:
  struct SkelDeleter {
    void operator()(hit_counter* s) const;
  };
  HitCounts(std::unique_ptr<hit_counter, SkelDeleter> skel, size_t sites, pid_t tgid);

  std::unique_ptr<hit_counter, SkelDeleter> skel_;
  size_t sites_ = 0;
  UprobeLinks links_;
  bool used_multi_ = false;
};

}  // namespace uscope
