// libFuzzer target: arbitrary bytes as a Go program's .data section, searched for
// runtime.waitReasonStrings as a stripped program's is (plan/go_park_plan.h), and read as that
// table directly. The first 8 bytes pick the section's address; the rest is the section, and also
// the whole "program memory": reads are served from it at any address (taken modulo its size), so
// string headers can aim anywhere. Addresses with the top bit set get one byte too few, as a
// careless reader would return.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "plan/go_park_plan.h"

namespace {

void check(const std::vector<std::string>& reasons) {
  if (reasons.size() > 256) __builtin_trap();
  for (const auto& r : reasons)
    if (r.size() > 256) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t section_addr = 0;
  for (size_t i = 0; i < 8; ++i) section_addr |= static_cast<uint64_t>(data[i]) << (8 * i);
  const std::span<const uint8_t> section(data + 8, size - 8);
  const uscope::GoReadAt read = [section](uint64_t addr,
                                          uint64_t len) -> std::optional<std::span<const uint8_t>> {
    const uint64_t off = addr % (section.size() + 1);
    if (len > section.size() - off) return std::nullopt;
    auto slice = section.subspan(off, len);
    if ((addr >> 63) && !slice.empty()) slice = slice.first(slice.size() - 1);
    return slice;
  };
  if (auto table = uscope::find_go_wait_reasons(section, section_addr, read)) {
    if (table->second > 256 * 16) __builtin_trap();
    check(uscope::go_wait_reasons(read, table->first, table->second));
  }
  check(uscope::go_wait_reasons(read, section_addr, section.size()));
  return 0;
}
