#pragma once
// Function symbols of one object, merged from every source that has them (.symtab, .dynsym,
// MiniDebugInfo, separate debug file), deduplicated, demangled and sorted by address. The lookup
// by address is uscope's own: libdwfl's dwfl_module_addrinfo scans every symbol per call.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/debug_info.h"
#include "discover/elf_file.h"
#include "discover/gopclntab.h"

namespace uscope {

struct FunctionSymbol {
  std::string name;  // mangled, as in the symbol table
  // C++ (Itanium) or Rust (legacy and v0) demangled; `name` otherwise.
  const std::string& demangled() const { return decoded_ ? decoded_->demangled : name; }
  // demangled() without return type, parameters and Rust hash, the name users type:
  // "orchard::Pear::ripen", "myapp::server::handle".
  const std::string& qualified() const {
    return decoded_ && !decoded_->qualified.empty() ? decoded_->qualified : demangled();
  }
  uint64_t addr = 0;    // link-time virtual address
  uint64_t offset = 0;  // file offset of addr (what a uprobe attaches to)
  uint64_t size = 0;
  SymbolBinding binding = SymbolBinding::Global;
  SymbolSource source = SymbolSource::Symtab;
  bool ifunc = false;  // an IFUNC resolver, not the function it resolves to

 private:
  friend class SymbolTable;
  // Kept only where they differ (from name, from demangled()): in a C or Go program all three are
  // the same string, which was two copies of every name (8 MB for 63,000 Go functions) and 64
  // bytes of every symbol (4 MB).
  struct Decoded {
    std::string demangled;
    std::string qualified;  // empty: the same as demangled
  };
  std::shared_ptr<const Decoded> decoded_;  // null: demangled() is name
};

// Demangles Itanium C++ (_Z...) and Rust (_R... v0, and legacy _ZN...17h<hash>E with the hash
// dropped) names; returns the input unchanged when it is not mangled.
std::string demangle(const std::string& name);

// A demangled name without what users leave out when they name a function: the return type of a
// template function, the parameter list, trailing qualifiers, GCC's " [clone .cold]" and a legacy
// Rust hash. "int ns::max<int>(int, int)" -> "ns::max<int>".
std::string qualified_name(std::string_view demangled);

// Does `wanted`, a signature as a user writes it ("ns::C::f(const char *)"), name the function
// demangled as `demangled` ("ns::C::f(char const*) const")? Spacing, the place of `const` in a
// parameter type and a trailing const/clone suffix do not matter.
bool signature_matches(std::string_view wanted, std::string_view demangled);

class SymbolTable {
 public:
  // Collects defined function symbols (STT_FUNC / STT_GNU_IFUNC with a nonzero address) from the
  // ELF and, when its own tables lack a .symtab, from what libdwfl finds for it (MiniDebugInfo,
  // a separate debug file; debug_info.h).
  static Result<SymbolTable> load(const ElfFile& elf, const DebugSearchPaths& paths = {});
  // The same with `debug` (may be null: the object's own tables only) already opened for `elf`.
  static Result<SymbolTable> load(const ElfFile& elf, DebugInfo* debug);
  // The same with `go`, the object's Go function table already read (null: not Go), which a
  // stripped Go program's functions come from.
  static Result<SymbolTable> load(const ElfFile& elf, DebugInfo* debug, const GoPclntab* go);

  // Sorted by address; one entry per (address, name); aliases at one address are all kept.
  const std::vector<FunctionSymbol>& functions() const { return functions_; }

  // Exact match on mangled or demangled name; else a C++/Rust name without parameters names every
  // overload ("ns::f"), and one with parameters picks one ("ns::f(int)", see signature_matches).
  std::vector<const FunctionSymbol*> find(std::string_view name) const;
  // Glob over mangled, demangled and qualified names.
  std::vector<const FunctionSymbol*> match(std::string_view glob) const;
  // Function containing addr (link-time address), for symbolization.
  const FunctionSymbol* containing(uint64_t addr) const;
  // Among the aliases at f's address (that cover `addr`, when given), the name users know: the
  // least decorated (malloc, not __libc_malloc), then the most public binding.
  const FunctionSymbol* preferred_alias(const FunctionSymbol& f,
                                        std::optional<uint64_t> addr = std::nullopt) const;
  // Every distinct name (demangled where it differs), for "closest names" suggestions.
  std::vector<std::string> names() const;

 private:
  std::vector<FunctionSymbol> functions_;
};

}  // namespace uscope
