#pragma once
// `uscope memleak`'s report, as bcc's memleak prints it: at each interval (and at the end) the
// stacks holding blocks allocated and not freed, each with its bytes and blocks outstanding and
// its frames innermost first; the stacks that grew the most since the last report first.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "model/profile.h"

namespace uscope {

struct MemleakTotals {
  uint64_t calls = 0;          // allocator calls seen
  uint64_t followed = 0;       // blocks followed (all, or the sampled ones)
  uint64_t frees = 0;          // of them freed
  uint64_t frees_unknown = 0;  // frees of blocks not followed
  uint64_t sample_bytes = 0;   // --sample-bytes; 0: every block followed
  uint64_t estimated = 0;      // blocks followed that stand for more (--sample-bytes, Go's sampler)
};

class MemleakReport {
 public:
  explicit MemleakReport(size_t top) : top_(top) {}
  // One report of `profile` (measure LiveBytes) at `unix_ns`: its `top` stacks by growth since
  // the last report (by bytes outstanding at the first), then a line of what the rest hold.
  void write(const Profile& profile, const MemleakTotals& totals, int64_t unix_ns, std::FILE* out);

 private:
  size_t top_;
  // A stack (process, frames) -> its bytes and blocks at the last report.
  std::map<std::string, std::pair<uint64_t, uint64_t>> last_;
};

}  // namespace uscope
