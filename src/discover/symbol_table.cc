#include "discover/symbol_table.h"

// glibc's <string.h> already declares basename() for C++; without this libiberty.h redeclares it.
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>

#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

#include "util/names.h"

namespace uscope {
namespace {

// Which copy of a symbol seen in several sources is kept: the object's own .symtab is the
// authority, then the fuller external tables, then .dynsym (which every other source repeats).
int source_rank(SymbolSource s) {
  switch (s) {
    case SymbolSource::Symtab:
      return 0;
    case SymbolSource::DebugFile:
      return 1;
    case SymbolSource::MiniDebugInfo:
      return 2;
    case SymbolSource::Dynsym:
      return 3;
  }
  return 4;
}

// How far back containing() looks for an enclosing function; symbol tables only nest a few
// labels (e.g. cold parts, local aliases) inside a function.
constexpr size_t kMaxContainingScan = 64;

void collect(const ElfFile& owner, const std::vector<ElfSymbol>& symbols,
             std::optional<SymbolSource> force_source, std::vector<FunctionSymbol>& out) {
  for (const auto& s : symbols) {
    bool function = s.kind == SymbolKind::Function || s.kind == SymbolKind::IndirectFunction;
    if (!s.defined || !function || s.addr == 0 || s.name.empty()) continue;
    // Addresses always map through the object being traced: a debug file's own segments may
    // describe NOBITS sections, and a symbol that maps nowhere cannot be probed.
    auto offset = owner.vaddr_to_offset(s.addr);
    if (!offset) continue;
    FunctionSymbol f;
    f.name = s.name;
    f.addr = s.addr;
    f.offset = *offset;
    f.size = s.size;
    f.binding = s.binding;
    f.source = force_source.value_or(s.source);
    f.ifunc = s.kind == SymbolKind::IndirectFunction;
    out.push_back(std::move(f));
  }
}

}  // namespace

std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z") && !name.starts_with("_R")) return name;
  // Legacy Rust names are valid Itanium names too, so Rust goes first (it drops the h<hash>);
  // DMGL_RUST alone selects only the Rust demangler, hence the second call for C++.
  char* out = cplus_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);
  if (out == nullptr) out = cplus_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_GNU_V3);
  if (out == nullptr) return name;
  std::string result(out);
  std::free(out);
  return result;
}

Result<SymbolTable> SymbolTable::load(const ElfFile& elf, const DebugSearchPaths& paths) {
  auto own = elf.symbols();
  if (!own) return tl::unexpected(own.error());
  std::vector<FunctionSymbol> all;
  collect(elf, *own, std::nullopt, all);

  const bool has_symtab = std::any_of(elf.sections().begin(), elf.sections().end(),
                                      [](const ElfSection& s) { return s.type == SHT_SYMTAB; });
  if (!has_symtab) {
    // Extra sources are best effort: a broken .gnu_debugdata or debug file must not hide the
    // symbols the object itself has.
    if (auto mini = open_minidebuginfo(elf); mini && *mini) {
      if (auto syms = (*mini)->symbols()) collect(elf, *syms, SymbolSource::MiniDebugInfo, all);
    }
    if (auto path = find_debug_file(elf, paths)) {
      if (auto dbg = ElfFile::open(*path)) {
        if (auto syms = dbg->symbols()) collect(elf, *syms, SymbolSource::DebugFile, all);
      }
    }
  }

  std::sort(all.begin(), all.end(), [](const FunctionSymbol& a, const FunctionSymbol& b) {
    return std::forward_as_tuple(a.addr, a.name, source_rank(a.source)) <
           std::forward_as_tuple(b.addr, b.name, source_rank(b.source));
  });
  SymbolTable t;
  t.functions_.reserve(all.size());
  for (auto& f : all) {
    if (!t.functions_.empty() && t.functions_.back().addr == f.addr &&
        t.functions_.back().name == f.name) {
      // Some tables record a size of 0 (assembly without .size); keep whichever knows it.
      auto& kept = t.functions_.back();
      kept.size = std::max(kept.size, f.size);
      continue;
    }
    t.functions_.push_back(std::move(f));
  }
  // "memcpy@@GLIBC_2.14" (a versioned name in a debug file's .symtab) is shown as memcpy.
  for (auto& f : t.functions_) f.demangled = demangle(f.name.substr(0, f.name.find('@')));
  // An IFUNC resolver stays one under every alias (glibc also names it as a plain local FUNC).
  for (size_t i = 0; i < t.functions_.size();) {
    size_t j = i;
    bool ifunc = false;
    for (; j < t.functions_.size() && t.functions_[j].addr == t.functions_[i].addr; ++j)
      ifunc |= t.functions_[j].ifunc;
    for (; i < j; ++i) t.functions_[i].ifunc = ifunc;
  }
  return t;
}

std::vector<const FunctionSymbol*> SymbolTable::find(std::string_view name) const {
  std::vector<const FunctionSymbol*> out;
  for (const auto& f : functions_) {
    if (f.name == name || f.demangled == name) out.push_back(&f);
  }
  return out;
}

std::vector<const FunctionSymbol*> SymbolTable::match(std::string_view glob) const {
  std::vector<const FunctionSymbol*> out;
  for (const auto& f : functions_) {
    if (glob_match(glob, f.name) || (f.demangled != f.name && glob_match(glob, f.demangled))) {
      out.push_back(&f);
    }
  }
  return out;
}

const FunctionSymbol* SymbolTable::containing(uint64_t addr) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), addr,
                             [](uint64_t a, const FunctionSymbol& f) { return a < f.addr; });
  const FunctionSymbol* zero_size_match = nullptr;
  for (size_t scanned = 0; it != functions_.begin() && scanned < kMaxContainingScan; ++scanned) {
    --it;
    const uint64_t delta = addr - it->addr;
    if (delta < it->size) return &*it;
    if (it->size == 0 && delta == 0 && zero_size_match == nullptr) zero_size_match = &*it;
  }
  return zero_size_match;
}

namespace {

int binding_rank(SymbolBinding b) {
  switch (b) {
    case SymbolBinding::Global:
      return 0;
    case SymbolBinding::Weak:
      return 1;
    case SymbolBinding::Unique:
      return 2;
    case SymbolBinding::Local:
      return 3;
  }
  return 4;
}

size_t leading_underscores(const std::string& s) {
  size_t n = s.find_first_not_of('_');
  return n == std::string::npos ? s.size() : n;
}

}  // namespace

const FunctionSymbol* SymbolTable::preferred_alias(const FunctionSymbol& f,
                                                   std::optional<uint64_t> addr) const {
  auto lo = std::lower_bound(functions_.begin(), functions_.end(), f.addr,
                             [](const FunctionSymbol& x, uint64_t a) { return x.addr < a; });
  auto rank = [](const FunctionSymbol& x) {
    return std::make_pair(leading_underscores(x.name), binding_rank(x.binding));
  };
  const FunctionSymbol* best = &f;
  for (auto it = lo; it != functions_.end() && it->addr == f.addr; ++it) {
    if (addr && it->size != 0 && *addr - it->addr >= it->size) continue;
    if (rank(*it) < rank(*best)) best = &*it;
  }
  return best;
}

std::vector<std::string> SymbolTable::names() const {
  std::vector<std::string> out;
  out.reserve(functions_.size());
  for (const auto& f : functions_) out.push_back(f.demangled);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace uscope
