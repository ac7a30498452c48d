// Perf maps are written by whatever process owns the PID (any user can write /tmp), so the parser
// must survive any bytes and its result must keep its promises: sorted, disjoint, findable.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "symbolize/perf_map.h"

namespace {

// A found symbol holds the address, finds itself at both ends and nothing else does there.
void check(const uscope::PerfMap& map, uint64_t address) {
  const auto* s = map.find(address);
  if (!s) return;
  if (s->size == 0 || address < s->start || address - s->start >= s->size) __builtin_trap();
  if (map.find(s->start) != s || map.find(s->start + (s->size - 1)) != s) __builtin_trap();
  if (s->start > 0 && map.find(s->start - 1) == s) __builtin_trap();
  if (s->name.empty()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto map = uscope::PerfMap::parse(text);
  for (uint64_t a : {uint64_t{0}, uint64_t{1}, uint64_t{0x1000}, ~uint64_t{0}}) check(map, a);
  // Addresses taken from the input itself land near the ranges it declares.
  for (size_t at = 0; at + 8 <= size && at < 256; at += 8) {
    uint64_t a;
    std::memcpy(&a, data + at, sizeof a);
    check(map, a);
  }
  for (size_t eol = 0; eol < text.size() && eol < 4096; ++eol) {
    if (text[eol] != '\n') continue;
    // The start of each line as hex, however malformed the rest.
    uint64_t a = 0;
    for (size_t i = eol + 1; i < text.size() && i < eol + 17; ++i) {
      char c = text[i];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) break;
      a = a << 4 | static_cast<uint64_t>(d);
    }
    check(map, a);
    check(map, a + 1);
  }
  return 0;
}
