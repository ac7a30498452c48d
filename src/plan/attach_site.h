#pragma once
// Where one uprobe goes: what the planner hands to attach/. A plain struct, free of libbpf, so
// plan/ stays pure (unit-tested and fuzzed without BPF).
#include <cstdint>
#include <string>

namespace uscope {

struct AttachSite {
  std::string path;     // file to probe (may be /proc/PID/map_files/... or /proc/PID/root/...)
  uint64_t offset = 0;  // file offset of the probed instruction
  uint64_t ref_ctr_offset = 0;  // file offset of a USDT semaphore, 0 = none
  uint64_t cookie = 0;          // bpf_get_attach_cookie() value: the site's index in uscope's maps
  bool retprobe = false;
  // In a Go program: attach/ refuses a uretprobe here whatever asks for it (Go moves goroutine
  // stacks under the return address a uretprobe rewrites, and the program crashes).
  bool go_code = false;
  std::string display_path{};  // the path the user knows, for messages; "" = `path`
};

// The path to name in a message about the site: never a /proc/PID/map_files link when the user
// knows the file by its name.
inline const std::string& shown_path(const AttachSite& s) {
  return s.display_path.empty() ? s.path : s.display_path;
}

}  // namespace uscope
