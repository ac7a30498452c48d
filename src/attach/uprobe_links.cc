#include "attach/uprobe_links.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "attach/uprobe_multi.h"

namespace uscope {

Result<void> UprobeLinks::attach_each(bpf_program* prog, const std::vector<AttachSite>& sites) {
  for (const auto& s : sites) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts);
    opts.retprobe = s.retprobe;
    opts.ref_ctr_offset = s.ref_ctr_offset;
    opts.bpf_cookie = s.cookie;
    bpf_link* link = bpf_program__attach_uprobe_opts(prog, pid_, s.path.c_str(), s.offset, &opts);
    if (!link) {
      int e = errno;
      return fail_errno(e, "cannot attach {}probe to {} at offset {:#x}: {}",
                        s.retprobe ? "return " : "u", s.path, s.offset, std::strerror(e));
    }
    links_.emplace_back(link);
  }
  return {};
}

Result<void> UprobeLinks::attach_multi(bpf_program* prog, const std::vector<AttachSite>& sites) {
  struct Group {
    std::vector<uint64_t> offsets, ref_ctrs, cookies;
    bool any_ref_ctr = false;
  };
  std::map<std::pair<std::string, bool>, Group> groups;
  for (const auto& s : sites) {
    auto& g = groups[{s.path, s.retprobe}];
    g.offsets.push_back(s.offset);
    g.ref_ctrs.push_back(s.ref_ctr_offset);
    g.cookies.push_back(s.cookie);
    g.any_ref_ctr |= s.ref_ctr_offset != 0;
  }
  for (auto& [key, g] : groups) {
    UprobeMultiRequest req;
    req.path = &key.first;
    req.offsets = g.offsets;
    if (g.any_ref_ctr) req.ref_ctr_offsets = g.ref_ctrs;
    req.cookies = g.cookies;
    req.retprobe = key.second;
    req.pid = pid_ > 0 ? pid_ : 0;
    auto fd = create_uprobe_multi_link(bpf_program__fd(prog), req);
    if (!fd) return tl::unexpected(fd.error());
    multi_links_.push_back(std::move(*fd));
  }
  return {};
}

void UprobeLinks::detach_all() {
  links_.clear();
  multi_links_.clear();
}

}  // namespace uscope
