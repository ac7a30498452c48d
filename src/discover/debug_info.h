#pragma once
// What a stripped object lacks, found by elfutils' libdwfl: separate debug files (by build-id,
// then .gnu_debuglink, under the debug roots and beside the file), MiniDebugInfo (.gnu_debugdata,
// the xz-compressed .symtab Fedora and Debian ship), and DWARF source lines and inlined calls.
#include <cstdint>
#include <memory>
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

// A call inlined at an address: the function whose code it is, and where in it.
struct InlinedSource {
  std::string function;  // demangled
  std::string file;      // "" unless known
  int line = 0;          // 0 unless known
};

// The source position of an address and the calls inlined there.
struct SourcePosition {
  // In the function the symbol table names; with inlined calls, the call site of the outermost.
  std::string file;
  int line = 0;
  std::vector<InlinedSource> inlined;  // innermost first: inlined[0] is the code that ran
};

// One object as a libdwfl module. libdwfl opens separate debug files and MiniDebugInfo lazily,
// on the first call that needs them. Not thread-safe.
class DebugInfo {
 public:
  // Opens elf.path() again (a /proc/PID/map_files/... path works). .gnu_debuglink is looked up
  // beside where the file lives for its owner: its display path when opened through map_files,
  // its path inside paths.root_prefix, or its real path (merged-/usr symlinks).
  static Result<std::unique_ptr<DebugInfo>> open(const ElfFile& elf,
                                                 const DebugSearchPaths& paths = {});
  ~DebugInfo();
  DebugInfo(const DebugInfo&) = delete;
  DebugInfo& operator=(const DebugInfo&) = delete;

  // Every symbol of the table libdwfl chose (the object's .symtab, else a debug file's, else
  // .dynsym merged with MiniDebugInfo), each with the source it came from. Empty when none.
  // `functions_only`: only functions (STT_FUNC, STT_GNU_IFUNC), what a SymbolTable keeps; a
  // debug file's table is mostly objects and sections (python3.11's: 10,511 of 41,730).
  std::vector<ElfSymbol> symbols(bool functions_only = false);
  // The separate debug file libdwfl found (build-id or debuglink, validated), if any.
  std::optional<std::string> debug_file();
  // File, line and inlined calls at link-time address `addr`; nullopt without DWARF line info
  // for it (no debug file, or a debug file holding only symbols).
  std::optional<SourcePosition> source_at(uint64_t addr);

 private:
  struct Impl;
  explicit DebugInfo(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Path of a separate debug file for `elf`, as libdwfl finds it: .build-id/xx/rest.debug under
// each root, then the debuglink beside the file, in .debug/, and under each root + the file's
// directory. A candidate must carry the object's build-id (or, without one, the CRC32 recorded
// in .gnu_debuglink).
std::optional<std::string> find_debug_file(const ElfFile& elf, const DebugSearchPaths& paths = {});

}  // namespace uscope
