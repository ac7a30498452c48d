#pragma once
// Target memory for the recipe interpreter in plan tests: words and bytes at fixed addresses; a
// read of any byte not put there fails, as a read of an unmapped page does.
#include <cstdint>
#include <map>
#include <string_view>

#include "plan/recipe_interpreter.h"

namespace uscope {

struct FakeMemory {
  std::map<uint64_t, uint8_t> bytes;
  void word(uint64_t addr, uint64_t v, int width = 8) {
    for (int i = 0; i < width; ++i) bytes[addr + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  void text(uint64_t addr, std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) bytes[addr + i] = static_cast<uint8_t>(s[i]);
  }
  MemoryReader reader() const {
    return [this](uint64_t addr, void* dst, size_t len) {
      auto* out = static_cast<uint8_t*>(dst);
      for (size_t i = 0; i < len; ++i) {
        auto it = bytes.find(addr + i);
        if (it == bytes.end()) return false;
        out[i] = it->second;
      }
      return true;
    };
  }
};

}  // namespace uscope
