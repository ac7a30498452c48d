#pragma once
// Reading one slot of a BPF per-CPU array: the kernel hands back one value per possible CPU, and
// what a counter means is their sum.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "util/result.h"

namespace uscope {

class PerCpuSum {
 public:
  explicit PerCpuSum(int map_fd)
      : fd_(map_fd), values_(static_cast<size_t>(std::max(libbpf_num_possible_cpus(), 1))) {}

  Result<uint64_t> sum(uint32_t key) {
    if (bpf_map_lookup_elem(fd_, &key, values_.data()))
      return fail_errno(errno, "cannot read BPF map slot {}: {}", key, std::strerror(errno));
    uint64_t total = 0;
    for (uint64_t v : values_) total += v;
    return total;
  }

 private:
  int fd_;
  std::vector<uint64_t> values_;
};

}  // namespace uscope
