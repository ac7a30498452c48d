#include "collect/go_goroutines.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "discover/process.h"

namespace uscope {

namespace {

// runtime2.go: the status values of a g, and the bit a GC scan adds to them.
constexpr uint32_t kGidle = 0, kGdead = 6, kGscan = 0x1000;

// process_vm_readv with one iovec per g, at most IOV_MAX at a time: one system call per 1024
// goroutines, where read_process_memory() would make one per field. A g whose bytes cannot be read
// (freed and unmapped under the read) is skipped.
constexpr size_t kBatch = 1024;

}  // namespace

void tally_goroutine(uint32_t status, uint64_t startpc, const GoroutineLayout& layout,
                     uint64_t bias, GoroutineCount& count) {
  status &= ~kGscan;
  if (status == kGidle || status == kGdead) return;
  (layout.system_starts.count(startpc - bias) ? count.system : count.user) += 1;
}

Result<GoroutineCount> count_goroutines(pid_t pid, const GoroutineLayout& layout, uint64_t bias) {
  uint64_t header[2] = {0, 0};  // array pointer, length
  auto got = read_process_memory(pid, layout.allgs + bias,
                                 {reinterpret_cast<uint8_t*>(header), sizeof header});
  if (!got) return tl::unexpected(got.error());
  if (*got != sizeof header) return fail("cannot read runtime.allgs of process {}", pid);
  const uint64_t n = header[1];
  if (n > kMaxCensusGoroutines)
    return fail("runtime.allgs of process {} says {} goroutines: more than uscope reads ({})", pid,
                n, kMaxCensusGoroutines);
  std::vector<uint64_t> gs(n);
  if (n) {
    auto read = read_process_memory(pid, header[0], {reinterpret_cast<uint8_t*>(gs.data()), n * 8});
    if (!read) return tl::unexpected(read.error());
    if (*read != n * 8) return fail("cannot read the {} goroutines of process {}", n, pid);
  }
  // Each g's bytes from the lower of the two fields to the end of the higher.
  const uint64_t lo = std::min(layout.status_offset, layout.startpc_offset);
  const uint64_t hi = std::max(layout.status_offset + 4, layout.startpc_offset + 8);
  const uint64_t span = hi - lo;
  std::vector<uint8_t> bytes(std::min<uint64_t>(n, kBatch) * span);
  std::vector<iovec> local, remote;
  GoroutineCount count;
  for (uint64_t first = 0; first < n; first += kBatch) {
    const uint64_t m = std::min<uint64_t>(kBatch, n - first);
    local.clear();
    remote.clear();
    for (uint64_t i = 0; i < m; ++i) {
      local.push_back({bytes.data() + i * span, span});
      remote.push_back({reinterpret_cast<void*>(gs[first + i] + lo), span});
    }
    // process_vm_readv stops at the first g it cannot read: read on past it, one batch at a time.
    for (uint64_t done = 0; done < m;) {
      ssize_t r =
          process_vm_readv(pid, local.data() + done, m - done, remote.data() + done, m - done, 0);
      if (r < 0 && errno != EFAULT)
        return fail("cannot read the goroutines of process {}: {}", pid, std::strerror(errno));
      uint64_t whole = r > 0 ? static_cast<uint64_t>(r) / span : 0;
      for (uint64_t i = done; i < done + whole; ++i) {
        uint32_t status;
        uint64_t startpc;
        std::memcpy(&status, bytes.data() + i * span + (layout.status_offset - lo), 4);
        std::memcpy(&startpc, bytes.data() + i * span + (layout.startpc_offset - lo), 8);
        tally_goroutine(status, startpc, layout, bias, count);
      }
      done += whole + 1;  // past the g that stopped the read (or the last one read)
    }
  }
  return count;
}

}  // namespace uscope
