#pragma once
// Kernel addresses -> function names from /proc/kallsyms, for -K stacks and %K (bcc's ksym).
// Hand-written: no packaged C/C++ library reads kallsyms (libbpf's reader is internal, elfutils
// has none, blazesym is Rust), and the format is one "ADDR TYPE NAME [MODULE]" line per symbol.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "symbolize/symbolizer.h"
#include "util/result.h"

namespace uscope {

struct KernelSymbol {
  std::string_view name;
  std::string_view module;  // "" for the kernel image itself
  uint64_t offset = 0;      // address - symbol start
};

class KernelSymbols {
 public:
  // The text of a kallsyms file. Symbols at address 0 (kptr_restrict hides them from readers
  // without CAP_SYSLOG) are left out, so a hidden table finds nothing rather than wrong names.
  static KernelSymbols parse(std::string text);
  static Result<KernelSymbols> load(const std::string& path = "/proc/kallsyms");

  // The symbol at or below `address`; nullopt below the first one or with no symbols at all.
  std::optional<KernelSymbol> find(uint64_t address) const;
  // As a stack frame: `object` is the module, or "kernel" for the image and for unknown
  // addresses (symbol_text() prints "[unknown: no symbols] [kernel]").
  Frame frame(uint64_t address) const;
  size_t size() const { return symbols_.size(); }

 private:
  // Read line by line into a pool of names: the table of a 6.x kernel is ~120k symbols, and
  // keeping the file's text (5 MB) plus string_views (40 bytes a symbol) tripled uscope's memory.
  void add_line(std::string_view line);
  void finish();

  struct Entry {
    uint64_t address;
    uint32_t name_offset;  // into names_
    uint16_t name_length;
    uint16_t module;  // index into modules_; 0 is the kernel image ("")
  };
  std::string names_;
  std::vector<std::string> modules_{""};
  std::vector<Entry> symbols_;  // sorted by address
};

}  // namespace uscope
