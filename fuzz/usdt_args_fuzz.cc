// libFuzzer target: arbitrary bytes as a USDT argument spec, for both architectures. Besides
// memory safety it checks what callers rely on: errors are one bounded line, and every accepted
// argument has a valid size and scale, non-empty text that is a piece of the input, and registers
// where its kind needs them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "discover/usdt.h"

namespace {

bool valid_width(int n) {
  return n == 1 || n == 2 || n == 4 || n == 8;
}

void check(std::string_view spec, uscope::UsdtArch arch) {
  auto r = uscope::parse_usdt_args(spec, arch);
  if (!r) {
    const std::string& msg = r.error().message;
    if (msg.find('\n') != std::string::npos || msg.size() > 400) __builtin_trap();
    return;
  }
  for (const uscope::UsdtArg& a : *r) {
    if (!valid_width(a.size) || !valid_width(a.scale)) __builtin_trap();
    if (a.text.empty() || spec.find(a.text) == std::string_view::npos) __builtin_trap();
    switch (a.kind) {
      case uscope::UsdtArg::Kind::Register:
      case uscope::UsdtArg::Kind::Memory:
        if (a.base_reg.empty()) __builtin_trap();
        break;
      case uscope::UsdtArg::Kind::Indexed:
        if (a.index_reg.empty()) __builtin_trap();
        break;
      default:
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view spec(reinterpret_cast<const char*>(data), size);
  check(spec, uscope::UsdtArch::X86_64);
  check(spec, uscope::UsdtArch::AArch64);
  return 0;
}
