// libFuzzer target: arbitrary bytes as a .go.buildinfo section. The first 8 bytes pick the
// section's address; the rest is the section, and also the whole "program memory": read_at serves
// slices of it at any address (taken modulo its size), so pointer-layout headers can aim anywhere.
// Addresses with the top bit set get one byte too few, like a careless reader would return.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "discover/go_buildinfo.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t section_addr = 0;
  for (size_t i = 0; i < 8; ++i) section_addr |= static_cast<uint64_t>(data[i]) << (8 * i);
  const std::span<const uint8_t> section(data + 8, size - 8);

  const uscope::GoReadAt read_at =
      [section](uint64_t addr, uint64_t len) -> std::optional<std::span<const uint8_t>> {
    const uint64_t off = addr % (section.size() + 1);
    if (len > section.size() - off) return std::nullopt;
    auto slice = section.subspan(off, len);
    if ((addr >> 63) && !slice.empty()) slice = slice.first(slice.size() - 1);
    return slice;
  };

  auto info = uscope::parse_go_buildinfo(section, section_addr, read_at);
  if (!info) return 0;
  // Whatever is accepted must respect the documented bounds.
  if (info->version.empty() || info->version.size() > 64) __builtin_trap();
  if (info->mod_info.size() > 64 * 1024) __builtin_trap();
  if (info->main_path.size() > info->mod_info.size()) __builtin_trap();
  if (info->major < 0 || info->minor < 0) __builtin_trap();
  (void)info->register_abi();
  return 0;
}
