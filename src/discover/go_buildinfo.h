#pragma once
// The Go toolchain version and module info a Go linker stores in `.go.buildinfo`. The tracer needs
// the version to know how arguments are passed: Go 1.17+ on amd64 uses the register ABI, older
// releases pass every argument on the stack.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "discover/elf_file.h"
#include "util/result.h"

namespace uscope {

struct GoBuildInfo {
  std::string version;       // "go1.19.8", "devel go1.22-abc123 ..."
  int major = 0, minor = 0;  // 1, 19 (patch ignored); 0,0 when unparseable
  std::string main_path;     // module path of the main package when present ("" otherwise)
  std::string mod_info;      // the raw module info text, sentinels stripped (may be empty)
  // Go 1.17+ amd64 passes args in registers.
  bool register_abi() const { return major > 1 || (major == 1 && minor >= 17); }
};

// Reads memory of the program at link-time address `addr`: exactly `len` bytes, or nullopt when
// they are not all available.
using GoReadAt =
    std::function<std::optional<std::span<const uint8_t>>(uint64_t addr, uint64_t len)>;

// Parses the contents of the `.go.buildinfo` section (its bytes and its link-time address).
// Both layouts: Go 1.18+ inline strings (flags & 2: varint-length-prefixed version then modinfo
// right after the 32-byte header), and the older pointer layout (ptrsize 4/8, endianness from
// flags & 1, pointers to Go string headers {ptr, len} that are read through `read_at`, or from
// the section itself when they point into it). Fails on anything malformed or truncated.
Result<GoBuildInfo> parse_go_buildinfo(std::span<const uint8_t> section, uint64_t section_addr,
                                       const GoReadAt& read_at);

// Best-effort "go1.21rc2" / "devel go1.22-abc" -> {1, 21} / {1, 22}; {0, 0} when no "go<N>" is
// found.
void parse_go_version(std::string_view version, int& major, int& minor);

// Convenience on an ElfFile: reads `.go.buildinfo` and serves the pointer layout's reads from the
// file-backed bytes of its allocated sections. nullopt when the file has no .go.buildinfo (not a
// Go program).
Result<std::optional<GoBuildInfo>> read_go_buildinfo(const ElfFile& elf);

}  // namespace uscope
