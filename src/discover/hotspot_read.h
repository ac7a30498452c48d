#pragma once
// Reads of a JVM's memory shared by the HotSpot runtime and its threads (discover/ only): a value,
// a pointer's plausibility, a C string, and reads that name what failed.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "discover/hotspot_runtime.h"

namespace uscope::hotspot_read {

inline constexpr uint64_t kUserTop = 1ull << 47;

template <class T>
std::optional<T> read_value(const TargetMemory& mem, uint64_t addr) {
  T v{};
  if (!mem(addr, {reinterpret_cast<uint8_t*>(&v), sizeof v})) return std::nullopt;
  return v;
}

inline bool plausible_pointer(uint64_t p) {
  return p >= 4096 && p < kUserTop;
}

// Reads a pointer-sized value at `addr`, naming `what` when it cannot.
inline Result<uint64_t> read_word(const HotspotRuntime& rt, const TargetMemory& mem, uint64_t addr,
                                  std::string_view what) {
  auto v = read_value<uint64_t>(mem, addr);
  if (!v) return fail("{}: cannot read {} at {:#x}", rt.name(), what, addr);
  return *v;
}

inline Result<int32_t> read_int(const HotspotRuntime& rt, const TargetMemory& mem, uint64_t addr,
                                std::string_view what) {
  auto v = read_value<int32_t>(mem, addr);
  if (!v) return fail("{}: cannot read {} at {:#x}", rt.name(), what, addr);
  return *v;
}

// A C string of the process (at most `max` bytes; never across a page it need not read).
inline std::optional<std::string> read_cstring(const TargetMemory& mem, uint64_t addr, size_t max) {
  std::string s;
  char chunk[64];
  while (s.size() < max) {
    size_t n = std::min<uint64_t>(sizeof chunk, 4096 - addr % 4096);
    if (!mem(addr, {reinterpret_cast<uint8_t*>(chunk), n})) return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
      if (chunk[i] == '\0') return s;
      s.push_back(chunk[i]);
    }
    addr += n;
  }
  return s;
}

}  // namespace uscope::hotspot_read
