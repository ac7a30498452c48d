#include "attach/uprobe_links.h"

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "attach/bpf_features.h"
#include "attach/uprobe_multi.h"

namespace uscope {

std::string describe_errno(int e) {
  // ENOTSUPP is kernel-internal and has no strerror text: it is how uprobes refuse instructions.
  if (e == 524) return "the kernel cannot probe the instruction there (ENOTSUPP)";
  return std::strerror(e);
}

bool UprobeLinks::prepare_programs(bpf_program* single_prog, bpf_program* multi_prog, bool wanted) {
  bool multi = wanted && probe_bpf_features().uprobe_multi;
  if (multi)
    bpf_program__set_expected_attach_type(multi_prog,
                                          static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
  bpf_program__set_autoload(multi ? single_prog : multi_prog, false);
  return multi;
}

Result<void> UprobeLinks::attach_each(bpf_program* prog, const std::vector<AttachSite>& sites) {
  for (const auto& s : sites) {
    LIBBPF_OPTS(bpf_uprobe_opts, opts);
    opts.retprobe = s.retprobe;
    opts.ref_ctr_offset = s.ref_ctr_offset;
    opts.bpf_cookie = s.cookie;
    bpf_link* link = bpf_program__attach_uprobe_opts(prog, pid_, s.path.c_str(), s.offset, &opts);
    if (!link) {
      int e = errno;
      auto err =
          fail_errno(e, "cannot attach {}probe to {} at offset {:#x}: {}",
                     s.retprobe ? "return " : "u", shown_path(s), s.offset, describe_errno(e));
      if (!skip_refused_) return err;
      refused_.push_back({s, err.value()});
      continue;
    }
    (s.retprobe ? return_links_ : links_).emplace_back(link);
  }
  return {};
}

Result<void> UprobeLinks::attach_group(bpf_program* prog, const std::vector<AttachSite>& sites,
                                       std::span<const size_t> group) {
  std::vector<uint64_t> offsets, ref_ctrs, cookies;
  bool any_ref_ctr = false;
  for (size_t i : group) {
    offsets.push_back(sites[i].offset);
    ref_ctrs.push_back(sites[i].ref_ctr_offset);
    cookies.push_back(sites[i].cookie);
    any_ref_ctr |= sites[i].ref_ctr_offset != 0;
  }
  const AttachSite& first = sites[group[0]];
  UprobeMultiRequest req;
  req.path = &first.path;
  req.display_path = &shown_path(first);
  req.offsets = offsets;
  if (any_ref_ctr) req.ref_ctr_offsets = ref_ctrs;
  req.cookies = cookies;
  req.retprobe = first.retprobe;
  req.pid = pid_ > 0 ? pid_ : 0;
  auto fd = create_uprobe_multi_link(bpf_program__fd(prog), req);
  if (fd) {
    (first.retprobe ? return_multi_links_ : multi_links_).push_back(std::move(*fd));
    return {};
  }
  int e = fd.error().errnum;
  // Errors about the link or the program, not about one site, are not split.
  if (e == EPERM || e == EBADF || e == ENOENT || e == ESRCH || e == ENOMEM)
    return tl::unexpected(fd.error());
  if (group.size() == 1) {
    auto err = fail_errno(e, "cannot attach {}probe to {} at offset {:#x}: {}",
                          first.retprobe ? "return " : "u", shown_path(first), first.offset,
                          describe_errno(e));
    if (!skip_refused_) return err;
    refused_.push_back({first, err.value()});
    return {};
  }
  size_t half = group.size() / 2;
  if (auto r = attach_group(prog, sites, group.first(half)); !r) return r;
  return attach_group(prog, sites, group.subspan(half));
}

Result<void> UprobeLinks::attach_multi(bpf_program* prog, const std::vector<AttachSite>& sites) {
  std::map<std::pair<std::string, bool>, std::vector<size_t>> groups;
  for (size_t i = 0; i < sites.size(); ++i) groups[{sites[i].path, sites[i].retprobe}].push_back(i);
  for (const auto& [key, group] : groups)
    if (auto r = attach_group(prog, sites, group); !r) return r;
  return {};
}

void UprobeLinks::detach_all() {
  return_links_.clear();
  return_multi_links_.clear();
  links_.clear();
  multi_links_.clear();
}

}  // namespace uscope
