// /proc/kallsyms text (or a file given for it) parsed into the kernel's symbol table: any bytes
// must parse, and every lookup must land on a symbol at or below the address, inside the table.
#include <cstddef>
#include <cstdint>
#include <string>

#include "symbolize/kernel_symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto k = uscope::KernelSymbols::parse(text);
  volatile size_t sink = k.size();
  // Addresses around the ones the text names, and the extremes.
  uint64_t probes[] = {0, 1, 0xffffffff80000000ull, ~uint64_t{0}};
  for (uint64_t a : probes) {
    auto s = k.find(a);
    if (s) sink = sink + s->name.size() + s->module.size() + s->offset;
    if (s && s->offset > a) __builtin_trap();
    auto f = k.frame(a);
    sink = sink + f.function.size() + f.object.size();
  }
  for (size_t i = 0; i + 16 <= size; i += 17) {
    uint64_t a = 0;
    for (size_t j = 0; j < 16; ++j) a = a << 4 | (data[i + j] & 0xf);
    auto s = k.find(a);
    if (s) sink = sink + s->name.size() + s->module.size();
    if (s && (s->name.empty() || s->offset > a)) __builtin_trap();
  }
  if (k.size() == 0 && k.find(~uint64_t{0})) __builtin_trap();
  return 0;
}
