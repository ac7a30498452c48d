#pragma once
// The kernel's BPF_TRACE_UPROBE_MULTI link (Linux 6.6+), created through the bpf syscall because
// Debian's libbpf 1.1 predates its API and its UAPI headers predate the attr layout.
#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>

#include "util/result.h"
#include "util/unique_fd.h"

namespace uscope {

inline constexpr uint32_t kBpfTraceUprobeMulti = 48;   // enum bpf_attach_type, Linux 6.6
inline constexpr uint32_t kBpfFUprobeMultiReturn = 1;  // BPF_F_UPROBE_MULTI_RETURN

struct UprobeMultiRequest {
  const std::string* path = nullptr;
  const std::string* display_path = nullptr;  // for messages; nullptr = path
  std::span<const uint64_t> offsets;
  std::span<const uint64_t> ref_ctr_offsets;  // empty or same size as offsets
  std::span<const uint64_t> cookies;          // empty or same size as offsets
  bool retprobe = false;
  pid_t pid = 0;  // 0 = every process
};

Result<UniqueFd> create_uprobe_multi_link(int prog_fd, const UprobeMultiRequest& req);

}  // namespace uscope
