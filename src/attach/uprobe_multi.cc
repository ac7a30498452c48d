#include "attach/uprobe_multi.h"

#include "attach/uprobe_links.h"

#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace uscope {

namespace {

// Mirrors the uprobe_multi member of union bpf_attr's link_create (include/uapi/linux/bpf.h).
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
};

}  // namespace

Result<UniqueFd> create_uprobe_multi_link(int prog_fd, const UprobeMultiRequest& req) {
  if (req.offsets.empty()) return fail("uprobe_multi: no offsets");
  union bpf_attr attr;
  static_assert(sizeof(LinkCreateUprobeMulti) <= sizeof(attr));
  std::memset(&attr, 0, sizeof(attr));
  LinkCreateUprobeMulti lc{};
  lc.prog_fd = static_cast<uint32_t>(prog_fd);
  lc.attach_type = kBpfTraceUprobeMulti;
  lc.path = reinterpret_cast<uint64_t>(req.path->c_str());
  lc.offsets = reinterpret_cast<uint64_t>(req.offsets.data());
  lc.ref_ctr_offsets =
      req.ref_ctr_offsets.empty() ? 0 : reinterpret_cast<uint64_t>(req.ref_ctr_offsets.data());
  lc.cookies = req.cookies.empty() ? 0 : reinterpret_cast<uint64_t>(req.cookies.data());
  lc.cnt = static_cast<uint32_t>(req.offsets.size());
  lc.multi_flags = req.retprobe ? kBpfFUprobeMultiReturn : 0;
  lc.pid = req.pid > 0 ? static_cast<uint32_t>(req.pid) : 0;
  std::memcpy(&attr, &lc, sizeof(lc));
  int fd = static_cast<int>(syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr)));
  if (fd < 0) {
    int e = errno;
    return fail_errno(e, "cannot attach uprobes to {} ({} sites): {}",
                      req.display_path ? *req.display_path : *req.path, req.offsets.size(),
                      describe_errno(e));
  }
  return UniqueFd(fd);
}

}  // namespace uscope
