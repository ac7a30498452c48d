#include "collect/bpf_run_stats.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstring>

namespace uscope {

namespace {

bool sysctl_stats_on() {
  UniqueFd fd(::open("/proc/sys/kernel/bpf_stats_enabled", O_RDONLY | O_CLOEXEC));
  char c = 0;
  return fd.valid() && ::read(fd.get(), &c, 1) == 1 && c == '1';
}

}  // namespace

Result<BpfStatsSwitch> BpfStatsSwitch::turn_on() {
  int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd >= 0) return BpfStatsSwitch(UniqueFd(fd));
  int e = errno;
  if (sysctl_stats_on()) return BpfStatsSwitch(UniqueFd());
  return fail_errno(e, "cannot turn on BPF run-time stats: {}{}", std::strerror(e),
                    e == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
}

Result<BpfRunTime> bpf_run_time(std::span<const int> prog_fds) {
  BpfRunTime total;
  for (int fd : prog_fds) {
    bpf_prog_info info{};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) {
      int e = errno;
      return fail_errno(e, "cannot read a BPF program's run time: {}", std::strerror(e));
    }
    total.run_time_ns += info.run_time_ns;
    total.run_count += info.run_cnt;
  }
  return total;
}

}  // namespace uscope
