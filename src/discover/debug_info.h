#pragma once
// Finding more symbols for a stripped object: separate debug files (by build-id and by
// .gnu_debuglink, under /usr/lib/debug and beside the file) and MiniDebugInfo (.gnu_debugdata, an
// xz-compressed ELF holding .symtab, as Fedora/Debian ship).
#include <optional>
#include <string>
#include <vector>

#include "discover/elf_file.h"

namespace uscope {

struct DebugSearchPaths {
  // Roots to search; tests point this at a temporary directory. Defaults to {"/usr/lib/debug"}.
  std::vector<std::string> debug_roots = {"/usr/lib/debug"};
  // Prefix applied to every absolute path (e.g. "/proc/PID/root" for a container's files).
  std::string root_prefix;
};

// Path of a separate debug file for `elf`, tried in gdb's order: .build-id/xx/rest.debug under each
// root, then debuglink beside the file, in .debug/, and under each root + the file's directory.
// A debuglink candidate must match the CRC32 recorded in .gnu_debuglink.
std::optional<std::string> find_debug_file(const ElfFile& elf, const DebugSearchPaths& paths = {});

// The ELF embedded in .gnu_debugdata, decompressed with liblzma; nullopt when absent.
Result<std::optional<ElfFile>> open_minidebuginfo(const ElfFile& elf);

// xz (.xz container) decompression, bounded by `max_output` bytes.
Result<std::vector<uint8_t>> xz_decompress(std::span<const uint8_t> in,
                                           size_t max_output = 256u << 20);

}  // namespace uscope
