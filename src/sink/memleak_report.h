#pragma once
// `uscope memleak`'s report, as bcc's memleak prints it: at each interval (and at the end) the
// stacks holding blocks allocated and not freed, each with its bytes and blocks outstanding and
// its frames innermost first; the stacks that grew the most since the last report first.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

#include "model/alloc_counts.h"
#include "model/profile.h"

namespace uscope {

class MemleakReport {
 public:
  explicit MemleakReport(size_t top) : top_(top) {}
  // One report of `profile` (measure LiveBytes) at `unix_ns`, headed by what the probes saw: its
  // `top` stacks by growth since the last report (by bytes outstanding at the first), then a line
  // of what the rest hold.
  void write(const Profile& profile, const AllocCounts& counts, int64_t unix_ns, std::FILE* out);

 private:
  size_t top_;
  bool first_ = true;
  // A stack (process, frames) -> its bytes and blocks at the last report.
  std::map<std::string, std::pair<uint64_t, uint64_t>> last_;
};

}  // namespace uscope
