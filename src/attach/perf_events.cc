#include "attach/perf_events.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "util/unique_fd.h"

namespace uscope {

namespace {

long read_sysctl(const char* path, long fallback) {
  std::ifstream in(path);
  long v = fallback;
  if (!(in >> v)) return fallback;
  return v;
}

// No glibc wrapper exists for perf_event_open.
int open_cpu_clock(int cpu, uint64_t frequency_hz) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = frequency_hz;
  return static_cast<int>(
      syscall(SYS_perf_event_open, &attr, -1 /* every process */, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

Error open_error(int e, int cpu, uint64_t frequency_hz) {
  if (e == EACCES || e == EPERM)
    return Error{
        fmt::format("cannot open a cpu-clock perf event on every process: {} (needs "
                    "CAP_PERFMON or CAP_SYS_ADMIN, or kernel.perf_event_paranoid <= -1; "
                    "it is {})",
                    std::strerror(e), read_sysctl("/proc/sys/kernel/perf_event_paranoid", 2)),
        e};
  if (e == EINVAL && max_sample_frequency() && frequency_hz > max_sample_frequency())
    return Error{fmt::format("-F {} is above kernel.perf_event_max_sample_rate ({})", frequency_hz,
                             max_sample_frequency()),
                 e};
  if (e == ENOENT || e == EOPNOTSUPP)
    return Error{fmt::format("this kernel has no cpu-clock perf event: {}", std::strerror(e)), e};
  return Error{fmt::format("perf_event_open(cpu-clock, cpu {}): {}", cpu, std::strerror(e)), e};
}

}  // namespace

uint64_t max_sample_frequency() {
  long v = read_sysctl("/proc/sys/kernel/perf_event_max_sample_rate", 0);
  return v > 0 ? static_cast<uint64_t>(v) : 0;
}

Result<void> check_sample_frequency(uint64_t hz) {
  uint64_t max = max_sample_frequency();
  if (hz == 0)
    return fail("-F must be at least 1 Hz (and at most {}, kernel.perf_event_max_sample_rate)",
                max);
  if (max && hz > max)
    return fail("-F {} is above kernel.perf_event_max_sample_rate ({}): give -F 1..{}", hz, max,
                max);
  return {};
}

Result<void> PerfEventLinks::attach_cpu_clock(bpf_program* prog, uint64_t frequency_hz) {
  std::vector<LinkPtr> links;
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return fail_errno(-cpus, "cannot count the CPUs: {}", std::strerror(-cpus));
  for (int cpu = 0; cpu < cpus; ++cpu) {
    UniqueFd event(open_cpu_clock(cpu, frequency_hz));
    if (!event.valid()) {
      if (errno == ENODEV) continue;  // a possible CPU that is offline
      return tl::unexpected(open_error(errno, cpu, frequency_hz));
    }
    bpf_link* link = bpf_program__attach_perf_event(prog, event.get());
    if (!link) {
      int e = errno;
      return fail_errno(e, "cannot attach the profiler to the perf event of CPU {}: {}", cpu,
                        std::strerror(e));
    }
    event.release();  // the link closes it
    links.emplace_back(link);
  }
  if (links.empty()) return fail("no online CPU to sample");
  links_ = std::move(links);
  return {};
}

}  // namespace uscope
