#include "collect/go_goroutines.h"

#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "discover/process.h"

namespace uscope {

namespace {

// runtime2.go: the status values of a g, and the bit a GC scan adds to them.
constexpr uint32_t kGidle = 0, kGwaiting = 4, kGdead = 6, kGscan = 0x1000;

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

namespace {

// Each g of runtime.allgs (the slice header at `allgs`, at run time) read from `lo` to `hi`
// (offsets in a g), handed to `fn` with its address and those bytes (from `lo`).
Result<void> for_each_g(pid_t pid, uint64_t allgs, uint64_t lo, uint64_t hi,
                        const std::function<void(uint64_t g, const uint8_t* bytes)>& fn) {
  uint64_t header[2] = {0, 0};  // array pointer, length
  auto got = read_process_memory(pid, allgs, {reinterpret_cast<uint8_t*>(header), sizeof header});
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
  const uint64_t span = hi - lo;
  std::vector<uint8_t> bytes(std::min<uint64_t>(n, kBatch) * span);
  std::vector<iovec> local, remote;
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
      for (uint64_t i = done; i < done + whole; ++i) fn(gs[first + i], bytes.data() + i * span);
      done += whole + 1;  // past the g that stopped the read (or the last one read)
    }
  }
  return {};
}

template <typename T>
T field_at(const uint8_t* bytes, uint64_t offset, uint64_t lo) {
  T v;
  std::memcpy(&v, bytes + (offset - lo), sizeof v);
  return v;
}

// A parked g's fields, as offsets from the lowest to the end of the highest.
std::pair<uint64_t, uint64_t> parked_span(const ParkedGoroutineLayout& l) {
  const uint64_t lo = std::min({l.status, l.waitreason, l.sched_sp, l.sched_pc, l.sched_bp});
  const uint64_t hi =
      std::max({l.status + 4, l.waitreason + 1, l.sched_sp + 8, l.sched_pc + 8, l.sched_bp + 8});
  return {lo, hi};
}

// The g at `g` (its bytes from `lo`) when it is parked (_Gwaiting, a GC scan or not).
std::optional<ParkedGoroutine> parked_of(uint64_t g, const uint8_t* bytes,
                                         const ParkedGoroutineLayout& l, uint64_t lo) {
  if ((field_at<uint32_t>(bytes, l.status, lo) & ~kGscan) != kGwaiting) return std::nullopt;
  return ParkedGoroutine{
      g, field_at<uint8_t>(bytes, l.waitreason, lo), field_at<uint64_t>(bytes, l.sched_pc, lo),
      field_at<uint64_t>(bytes, l.sched_sp, lo), field_at<uint64_t>(bytes, l.sched_bp, lo)};
}

}  // namespace

Result<GoroutineCount> count_goroutines(pid_t pid, const GoroutineLayout& layout, uint64_t bias) {
  // Each g's bytes from the lower of the two fields to the end of the higher.
  const uint64_t lo = std::min(layout.status_offset, layout.startpc_offset);
  const uint64_t hi = std::max(layout.status_offset + 4, layout.startpc_offset + 8);
  GoroutineCount count;
  auto r = for_each_g(pid, layout.allgs + bias, lo, hi, [&](uint64_t, const uint8_t* bytes) {
    tally_goroutine(field_at<uint32_t>(bytes, layout.status_offset, lo),
                    field_at<uint64_t>(bytes, layout.startpc_offset, lo), layout, bias, count);
  });
  if (!r) return tl::unexpected(r.error());
  return count;
}

Result<std::vector<ParkedGoroutine>> parked_goroutines(pid_t pid,
                                                       const ParkedGoroutineLayout& layout) {
  const auto [lo, hi] = parked_span(layout);
  std::vector<ParkedGoroutine> out;
  auto r = for_each_g(pid, layout.allgs, lo, hi, [&](uint64_t g, const uint8_t* bytes) {
    if (auto parked = parked_of(g, bytes, layout, lo)) out.push_back(*parked);
  });
  if (!r) return tl::unexpected(r.error());
  return out;
}

bool still_parked(pid_t pid, const ParkedGoroutineLayout& layout, const ParkedGoroutine& was) {
  const auto [lo, hi] = parked_span(layout);
  std::vector<uint8_t> bytes(hi - lo);
  auto got = read_process_memory(pid, was.g + lo, {bytes.data(), bytes.size()});
  if (!got || *got != bytes.size()) return false;
  const auto now = parked_of(was.g, bytes.data(), layout, lo);
  return now && now->pc == was.pc && now->sp == was.sp && now->wait == was.wait;
}

}  // namespace uscope
