// libFuzzer target: arbitrary bytes as an NT_STAPSDT descriptor, read as both a 64- and a 32-bit
// note; an accepted note's argument string goes on to the x86_64 argument parser, as
// read_usdt_probes would send it.
#include <cstddef>
#include <cstdint>
#include <span>

#include "discover/usdt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> desc(data, size);
  for (bool is_64bit : {true, false}) {
    auto rec = uscope::parse_stapsdt_note(desc, is_64bit);
    if (!rec) continue;
    // Three addresses and three NUL-terminated strings must have fitted in the input.
    const size_t used =
        (is_64bit ? 24 : 12) + rec->provider.size() + rec->name.size() + rec->args.size() + 3;
    if (used > size || rec->provider.empty() || rec->name.empty()) __builtin_trap();
    (void)uscope::parse_usdt_args(rec->args, uscope::UsdtArch::X86_64);
  }
  return 0;
}
