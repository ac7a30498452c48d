// The `.go.buildinfo` blob Go linkers write (cmd/link's buildinfo, read by Go's debug/buildinfo):
// a 32-byte header at a 16-byte aligned offset,
//   [0, 14)  magic "\xff Go buildinf:"
//   [14]     pointer size (4 or 8)
//   [15]     flags: bit 0 big-endian pointers, bit 1 strings inline (Go 1.18+)
//   [16, 32) Go <= 1.17: addresses of the runtime.buildVersion and runtime.modinfo string headers
// and, with the inline flag, two uvarint-length-prefixed strings right after the header.
#include "discover/go_buildinfo.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "discover/go_modinfo.h"

namespace uscope {
namespace {

constexpr char kMagic[] = "\xff Go buildinf:";
constexpr size_t kMagicSize = sizeof(kMagic) - 1;  // 14, without the literal's NUL
constexpr size_t kHeaderSize = 32;
constexpr size_t kAlign = 16;
constexpr uint8_t kFlagBigEndian = 1;
constexpr uint8_t kFlagInline = 2;
// Real versions are ~10 bytes ("devel" ones ~60): anything longer is garbage. Module lists of large
// programs run to tens of KiB; a longer one is dropped (the version is what the tracer needs) and
// never read, so a corrupt length cannot make anyone allocate gigabytes.
constexpr uint64_t kMaxVersion = 64;
constexpr uint64_t kMaxModInfo = 64 * 1024;
// cmd/go frames the module info with 16 bytes of binary sentinel on each side.
constexpr size_t kSentinelSize = 16;

// The header sits at offset 0 of the section in practice; Go's reader still scans 16-byte aligned
// offsets, so a linker that pads in front keeps working here too.
std::optional<size_t> find_header(std::span<const uint8_t> section) {
  for (size_t off = 0; section.size() >= kHeaderSize && off <= section.size() - kHeaderSize;
       off += kAlign) {
    if (std::memcmp(section.data() + off, kMagic, kMagicSize) == 0) return off;
  }
  return std::nullopt;
}

// Unsigned LEB128 as Go's binary.Uvarint writes it; nullopt when truncated or over 64 bits.
std::optional<uint64_t> take_uvarint(std::span<const uint8_t>& rest) {
  uint64_t v = 0;
  for (size_t i = 0; i < rest.size() && i < 10; ++i) {
    const uint8_t b = rest[i];
    // The 10th byte may only contribute the single top bit.
    if (i == 9 && b > 1) return std::nullopt;
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      rest = rest.subspan(i + 1);
      return v;
    }
  }
  return std::nullopt;
}

uint64_t read_uint(std::span<const uint8_t> bytes, bool big_endian) {
  uint64_t v = 0;
  if (big_endian) {
    for (uint8_t b : bytes) v = (v << 8) | b;
  } else {
    for (size_t i = bytes.size(); i > 0; --i) v = (v << 8) | bytes[i - 1];
  }
  return v;
}

std::string to_string(std::span<const uint8_t> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// The pointer layout's memory: the section itself first (its own bytes are certainly at hand),
// then the caller's reader. Whatever comes back is checked to be exactly `len` bytes, so a sloppy
// reader cannot make the parser read past a short span.
class Memory {
 public:
  Memory(std::span<const uint8_t> section, uint64_t section_addr, const GoReadAt& read_at)
      : section_(section), section_addr_(section_addr), read_at_(read_at) {}

  std::optional<std::span<const uint8_t>> read(uint64_t addr, uint64_t len) const {
    if (len == 0) return std::span<const uint8_t>{};
    if (addr > UINT64_MAX - len) return std::nullopt;
    if (addr >= section_addr_ && addr - section_addr_ < section_.size()) {
      const uint64_t off = addr - section_addr_;
      if (len <= section_.size() - off) return section_.subspan(off, len);
    }
    if (!read_at_) return std::nullopt;
    auto got = read_at_(addr, len);
    if (!got || got->size() != len) return std::nullopt;
    return got;
  }

 private:
  std::span<const uint8_t> section_;
  uint64_t section_addr_;
  const GoReadAt& read_at_;
};

// A Go string header {data pointer, length} at `addr`, and the bytes it points to.
// Longer than `max_len`: an error, or an empty string when `drop_long`.
Result<std::string> read_go_string(const Memory& mem, uint64_t addr, size_t ptr_size,
                                   bool big_endian, uint64_t max_len, bool drop_long,
                                   std::string_view what) {
  auto hdr = mem.read(addr, 2 * ptr_size);
  if (!hdr) return fail("go buildinfo: {} string header at {:#x} is not readable", what, addr);
  const uint64_t data_addr = read_uint(hdr->subspan(0, ptr_size), big_endian);
  const uint64_t len = read_uint(hdr->subspan(ptr_size, ptr_size), big_endian);
  if (len > max_len) {
    if (drop_long) return std::string();
    return fail("go buildinfo: {} is {} bytes long, more than the {} allowed", what, len, max_len);
  }
  auto bytes = mem.read(data_addr, len);
  if (!bytes) {
    return fail("go buildinfo: {} bytes at {:#x} (+{}) are not readable", what, data_addr, len);
  }
  return to_string(*bytes);
}

// Go 1.18+: uvarint length then the bytes, all inside the section.
Result<std::string> take_inline_string(std::span<const uint8_t>& rest, uint64_t max_len,
                                       bool drop_long, std::string_view what) {
  auto len = take_uvarint(rest);
  if (!len) return fail("go buildinfo: truncated or invalid length of the {}", what);
  if (*len > rest.size()) {
    return fail("go buildinfo: {} claims {} bytes, only {} left in the section", what, *len,
                rest.size());
  }
  if (*len > max_len) {
    if (!drop_long) {
      return fail("go buildinfo: {} is {} bytes long, more than the {} allowed", what, *len,
                  max_len);
    }
    rest = rest.subspan(*len);
    return std::string();
  }
  std::string s = to_string(rest.subspan(0, *len));
  rest = rest.subspan(*len);
  return s;
}

bool is_printable(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Up to 9 decimal digits at `pos` (enough for any real version, too few to overflow an int).
std::optional<int> take_number(std::string_view s, size_t& pos) {
  int v = 0;
  size_t digits = 0;
  while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && digits < 9) {
    v = v * 10 + (s[pos] - '0');
    ++pos;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  return v;
}

}  // namespace

void parse_go_version(std::string_view version, int& major, int& minor) {
  major = 0;
  minor = 0;
  // "go1.19.8", "go1.21rc2", "devel go1.22-abc123 ...": the first "go" followed by a digit. Old
  // devel builds ("devel +abc123 ...") carry no release number and stay 0.0.
  for (size_t at = version.find("go"); at != std::string_view::npos;
       at = version.find("go", at + 1)) {
    size_t pos = at + 2;
    auto maj = take_number(version, pos);
    if (!maj) continue;
    major = *maj;
    if (pos < version.size() && version[pos] == '.') {
      ++pos;
      if (auto min = take_number(version, pos)) minor = *min;
    }
    return;
  }
}

Result<GoBuildInfo> parse_go_buildinfo(std::span<const uint8_t> section, uint64_t section_addr,
                                       const GoReadAt& read_at) {
  auto off = find_header(section);
  if (!off) {
    return fail("go buildinfo: no \"\\xff Go buildinf:\" header in {} bytes", section.size());
  }
  const std::span<const uint8_t> header = section.subspan(*off, kHeaderSize);
  const uint8_t ptr_size = header[kMagicSize];
  const uint8_t flags = header[kMagicSize + 1];

  GoBuildInfo info;
  if (flags & kFlagInline) {
    std::span<const uint8_t> rest = section.subspan(*off + kHeaderSize);
    auto version = take_inline_string(rest, kMaxVersion, false, "version");
    if (!version) return tl::unexpected(version.error());
    auto mod = take_inline_string(rest, kMaxModInfo, true, "module info");
    if (!mod) return tl::unexpected(mod.error());
    info.version = std::move(*version);
    info.mod_info = std::move(*mod);
  } else {
    if (ptr_size != 4 && ptr_size != 8) {
      return fail("go buildinfo: pointer size {} (only 4 and 8 exist)", ptr_size);
    }
    const bool big_endian = flags & kFlagBigEndian;
    const Memory mem(section, section_addr, read_at);
    const uint64_t version_addr = read_uint(header.subspan(16, ptr_size), big_endian);
    const uint64_t mod_addr = read_uint(header.subspan(16 + ptr_size, ptr_size), big_endian);
    auto version =
        read_go_string(mem, version_addr, ptr_size, big_endian, kMaxVersion, false, "version");
    if (!version) return tl::unexpected(version.error());
    auto mod =
        read_go_string(mem, mod_addr, ptr_size, big_endian, kMaxModInfo, true, "module info");
    if (!mod) return tl::unexpected(mod.error());
    info.version = std::move(*version);
    info.mod_info = std::move(*mod);
  }

  // An empty or binary "version" means the bytes only looked like a header.
  if (info.version.empty()) return fail("go buildinfo: empty Go version");
  if (!is_printable(info.version)) return fail("go buildinfo: Go version is not printable text");
  parse_go_version(info.version, info.major, info.minor);

  // Framed text ends in "\n" + 16 sentinel bytes; unframed text (none seen in practice) is kept.
  const std::string& mod = info.mod_info;
  if (mod.size() >= 2 * kSentinelSize + 1 && mod[mod.size() - kSentinelSize - 1] == '\n') {
    info.mod_info = mod.substr(kSentinelSize, mod.size() - 2 * kSentinelSize);
  }
  if (auto modules = parse_go_modinfo(info.mod_info); modules.main) {
    info.main_path = std::move(modules.main->path);
  }
  return info;
}

Result<std::optional<GoBuildInfo>> read_go_buildinfo(const ElfFile& elf) {
  auto sec = elf.section(".go.buildinfo");
  if (!sec) return std::optional<GoBuildInfo>{};
  if (sec->type == SHT_NOBITS) {
    return fail("{}: .go.buildinfo has no file contents (SHT_NOBITS)", elf.display_path());
  }
  auto data = elf.section_data(*sec);
  if (!data) return with_context(elf.display_path() + ": .go.buildinfo", data.error());

  // Go <= 1.17 points at string headers in .data and string bytes in .rodata: serve them from the
  // file-backed bytes of the allocated section holding the whole range.
  const GoReadAt read_at = [&elf](uint64_t addr, uint64_t len) {
    return elf.allocated_bytes(addr, len);
  };
  auto info = parse_go_buildinfo(*data, sec->addr, read_at);
  if (!info) return with_context(elf.display_path(), info.error());
  return std::optional<GoBuildInfo>(std::move(*info));
}

}  // namespace uscope
