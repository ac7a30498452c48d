#pragma once
// Attaching one BPF program to many uprobe sites and detaching all of them on every exit path.
// Sites go through the kernel's uprobe_multi link when it has one (one syscall for thousands of
// sites) and through one perf-event-backed libbpf link per site otherwise.
#include <bpf/libbpf.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/result.h"
#include "util/unique_fd.h"

namespace uscope {

struct AttachSite {
  std::string path;     // file to probe (may be /proc/PID/map_files/... or /proc/PID/root/...)
  uint64_t offset = 0;  // file offset of the probed instruction
  uint64_t ref_ctr_offset = 0;  // file offset of a USDT semaphore, 0 = none
  uint64_t cookie = 0;          // bpf_get_attach_cookie() value: the site's index in uscope's maps
  bool retprobe = false;
  std::string display_path{};  // the path the user knows, for messages; "" = `path`
};

// The path to name in a message about the site: never a /proc/PID/map_files link when the user
// knows the file by its name.
inline const std::string& shown_path(const AttachSite& s) {
  return s.display_path.empty() ? s.path : s.display_path;
}

// strerror() that also names the kernel-internal errors uprobe attach returns.
std::string describe_errno(int e);

struct LinkDeleter {
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};
using LinkPtr = std::unique_ptr<bpf_link, LinkDeleter>;

class UprobeLinks {
 public:
  // `pid` -1 probes every process mapping the file; otherwise only that process.
  explicit UprobeLinks(pid_t pid = -1) : pid_(pid) {}

  // Before load: of two copies of one program, readies `multi_prog` for uprobe_multi links when
  // `wanted` and the kernel has them (libbpf 1.1 does not know the attach type), else
  // `single_prog`; the other is not loaded (each costs a verification). Returns whether sites
  // should go through attach_multi().
  static bool prepare_programs(bpf_program* single_prog, bpf_program* multi_prog, bool wanted);

  // One libbpf uprobe link per site.
  Result<void> attach_each(bpf_program* prog, const std::vector<AttachSite>& sites);
  // One uprobe_multi link per (path, retprobe) group; `prog` must have been loaded with
  // expected_attach_type BPF_TRACE_UPROBE_MULTI. The kernel takes or refuses a group whole, so a
  // refused group is split in halves until the refused sites are found.
  Result<void> attach_multi(bpf_program* prog, const std::vector<AttachSite>& sites);

  // With skip_refused, sites the kernel refuses (an instruction it cannot probe) are recorded in
  // refused() instead of failing the attach.
  void set_skip_refused(bool skip) { skip_refused_ = skip; }
  struct Refused {
    AttachSite site;
    Error error;
  };
  const std::vector<Refused>& refused() const { return refused_; }

  size_t link_count() const {
    return links_.size() + return_links_.size() + multi_links_.size() + return_multi_links_.size();
  }
  void detach_all();

 private:
  Result<void> attach_group(bpf_program* prog, const std::vector<AttachSite>& sites,
                            std::span<const size_t> group);

  pid_t pid_;
  bool skip_refused_ = false;
  std::vector<Refused> refused_;
  // Return-probe links are kept apart so that detach_all() removes them before the entry links
  // they pair with: a return must never run without its entry half.
  std::vector<LinkPtr> links_, return_links_;
  std::vector<UniqueFd> multi_links_, return_multi_links_;
};

}  // namespace uscope
