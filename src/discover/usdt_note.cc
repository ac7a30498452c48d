// The descriptor of one NT_STAPSDT note, as sys/sdt.h's _SDT_ASM_BODY lays it out: three
// addresses (probe pc, _.stapsdt.base, semaphore) then provider, name and arguments as C strings.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "discover/usdt.h"

namespace uscope {
namespace {

// Little-endian regardless of the host: x86_64 and aarch64 (the only targets) write notes so, and
// reading by bytes keeps unaligned descriptors safe.
uint64_t read_le(std::span<const uint8_t> bytes) {
  uint64_t v = 0;
  for (size_t i = bytes.size(); i > 0; --i) v = (v << 8) | bytes[i - 1];
  return v;
}

// Takes the NUL-terminated string at the front of `rest` and advances past its NUL.
Result<std::string> take_string(std::span<const uint8_t>& rest, std::string_view what) {
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == 0) {
      std::string s(reinterpret_cast<const char*>(rest.data()), i);
      rest = rest.subspan(i + 1);
      return s;
    }
  }
  return fail("stapsdt note: {} is not NUL-terminated within the descriptor", what);
}

}  // namespace

Result<UsdtNoteRecord> parse_stapsdt_note(std::span<const uint8_t> desc, bool is_64bit) {
  const size_t addr_size = is_64bit ? 8 : 4;
  const size_t min_size = 3 * addr_size + 3;  // three addresses and three (possibly empty) strings
  if (desc.size() < min_size) {
    return fail("stapsdt note: descriptor is {} bytes, a {}-bit note needs at least {}",
                desc.size(), is_64bit ? 64 : 32, min_size);
  }
  UsdtNoteRecord rec;
  rec.pc = read_le(desc.subspan(0, addr_size));
  rec.base = read_le(desc.subspan(addr_size, addr_size));
  rec.semaphore = read_le(desc.subspan(2 * addr_size, addr_size));
  std::span<const uint8_t> rest = desc.subspan(3 * addr_size);

  auto provider = take_string(rest, "provider");
  if (!provider) return tl::unexpected(provider.error());
  auto name = take_string(rest, "probe name");
  if (!name) return tl::unexpected(name.error());
  auto args = take_string(rest, "argument string");
  if (!args) return tl::unexpected(args.error());
  // Without a provider or name nothing could ever select the probe; an empty argument string is
  // just a probe without arguments. Bytes after the arguments are alignment padding some
  // assemblers count into descsz, so they are ignored.
  if (provider->empty()) return fail("stapsdt note: empty provider name");
  if (name->empty()) return fail("stapsdt note: empty probe name");
  rec.provider = std::move(*provider);
  rec.name = std::move(*name);
  rec.args = std::move(*args);
  return rec;
}

}  // namespace uscope
