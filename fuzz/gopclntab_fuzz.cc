// .gopclntab comes from whatever binary is traced: the parser must survive any bytes, and what it
// returns must keep its promises (sorted functions, lookups inside them, frames ending in the
// function that holds the pc).
#include <cstddef>
#include <cstdint>
#include <span>

#include "discover/gopclntab.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = uscope::GoPclntab::parse(std::span<const uint8_t>(data, size), 0x400000);
  if (!t) return 0;
  const auto& fs = t->functions();
  for (size_t i = 0; i < fs.size() && i < 64; ++i) {
    const auto& f = fs[i];
    if (f.end < f.entry) __builtin_trap();
    if (i > 0 && f.entry < fs[i - 1].entry) __builtin_trap();
    for (uint64_t pc : {f.entry, f.end - (f.end > f.entry ? 1 : 0), f.end}) {
      const auto* c = t->containing(pc);
      if (c && (pc < c->entry || pc >= c->end)) __builtin_trap();
      auto frames = t->frames_at(pc);
      if (c && (frames.empty() || frames.back().function != c->name)) __builtin_trap();
      if (!c && !frames.empty()) __builtin_trap();
    }
  }
  (void)t->inlined_calls();
  return 0;
}
