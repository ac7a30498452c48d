#pragma once
// A Python process's memory for tests of the frame walk and code objects: blocks of bytes at
// addresses; a read of anything not wholly inside one block fails, as a read of an unmapped page
// does. Counts reads.
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "discover/python_runtime.h"

namespace uscope::test {

struct FakePythonTarget {
  std::map<uint64_t, std::vector<uint8_t>> blocks;
  size_t reads = 0;

  void put(uint64_t addr, const std::vector<uint8_t>& b) { blocks[addr] = b; }
  // A block of `size` zero bytes at `addr`, to fill with word().
  void zeros(uint64_t addr, size_t size) { blocks[addr].assign(size, 0); }
  void word(uint64_t addr, uint64_t v, size_t width = 8) {
    auto it = blocks.upper_bound(addr);
    --it;
    std::memcpy(it->second.data() + (addr - it->first), &v, width);
  }
  TargetMemory memory() {
    return [this](uint64_t addr, std::span<uint8_t> out) {
      ++reads;
      auto it = blocks.upper_bound(addr);
      if (it == blocks.begin()) return false;
      --it;
      uint64_t off = addr - it->first;
      if (off + out.size() > it->second.size()) return false;
      std::memcpy(out.data(), it->second.data() + off, out.size());
      return true;
    };
  }
};

}  // namespace uscope::test
