#include "discover/symbol_table.h"

// glibc's <string.h> already declares basename() for C++; without this libiberty.h redeclares it.
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>

#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>
#include <tuple>

#include <vector>
#include "discover/gopclntab.h"

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
    case SymbolSource::Gopclntab:
      return 4;
  }
  return 4;
}

// How far back containing() looks for an enclosing function; symbol tables only nest a few
// labels (e.g. cold parts, local aliases) inside a function.
constexpr size_t kMaxContainingScan = 64;

// Takes the names out of `symbols` (a table read for this load alone).
void collect(const ElfFile& owner, std::vector<ElfSymbol>&& symbols,
             std::optional<SymbolSource> force_source, std::vector<FunctionSymbol>& out) {
  for (auto& s : symbols) {
    bool function = s.kind == SymbolKind::Function || s.kind == SymbolKind::IndirectFunction;
    if (!s.defined || !function || s.addr == 0 || s.name.empty()) continue;
    // Addresses always map through the object being traced: a debug file's own segments may
    // describe NOBITS sections, and a symbol that maps nowhere cannot be probed.
    auto offset = owner.vaddr_to_offset(s.addr);
    if (!offset) continue;
    FunctionSymbol f;
    f.name = std::move(s.name);
    f.addr = s.addr;
    f.offset = *offset;
    f.size = s.size;
    f.binding = s.binding;
    f.source = force_source.value_or(s.source);
    f.ifunc = s.kind == SymbolKind::IndirectFunction;
    out.push_back(std::move(f));
  }
}

void collect_go(const ElfFile& owner, const GoPclntab& table, std::vector<FunctionSymbol>& out) {
  for (const auto& g : table.functions()) {
    auto offset = owner.vaddr_to_offset(g.entry);
    if (!offset) continue;
    FunctionSymbol f;
    f.name = g.name;
    f.addr = g.entry;
    f.offset = *offset;
    f.size = g.end - g.entry;
    f.binding = SymbolBinding::Global;
    f.source = SymbolSource::Gopclntab;
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

namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Where "operator" starts an operator's name at i ("operator<<", "operator()"), the index after
// its symbol, so that its '<', '(' and ' ' are not read as brackets or separators.
size_t skip_operator(std::string_view d, size_t i) {
  constexpr std::string_view kOperator = "operator";
  if (d.substr(i, kOperator.size()) != kOperator || (i > 0 && is_name_char(d[i - 1]))) return i;
  size_t j = i + kOperator.size();
  if (j < d.size() && is_name_char(d[j])) return i;  // "operators", a plain name
  // "operator new(...)", "operator char const*()": a word follows; it ends at the parameters.
  if (j < d.size() && d[j] == ' ')
    return d.find('(', j) == std::string_view::npos ? d.size() : d.find('(', j);
  if (d.substr(j, 2) == "()") return j + 2;
  if (d.substr(j, 2) == "[]") return j + 2;
  while (j < d.size() && std::string_view("<>=!+-*/%&|^~,").find(d[j]) != std::string_view::npos)
    ++j;
  return j;
}

// [begin, params) is the qualified name; [params, end) the parameter list and qualifiers.
struct DemangledParts {
  size_t begin = 0;
  size_t params = 0;
  size_t end = 0;
};

DemangledParts split_demangled(std::string_view d) {
  DemangledParts p{0, d.size(), d.size()};
  // GCC's clones ("f(int) [clone .cold]", several may stack) are the function's own code.
  for (size_t clone; (clone = d.substr(0, p.end).rfind(" [clone ")) != std::string_view::npos &&
                     d[p.end - 1] == ']';)
    p.end = clone;
  // The parameter list is the last top-level "(...)"; what follows it are qualifiers.
  int depth = 0;
  size_t last_open = std::string_view::npos;
  size_t last_space = std::string_view::npos;
  for (size_t i = 0; i < p.end;) {
    size_t after = skip_operator(d, i);
    if (after != i) {
      i = after;
      continue;
    }
    char c = d[i];
    if (c == '(' || c == '<' || c == '[') {
      if (depth == 0 && c == '(') last_open = i;
      ++depth;
    } else if ((c == ')' || c == '>' || c == ']') && depth > 0) {
      --depth;
    } else if (c == ' ' && depth == 0 && last_open == std::string_view::npos) {
      last_space = i;  // "int ns::max<int>(...)": a template function's return type
    }
    ++i;
  }
  if (last_open != std::string_view::npos && last_open > 0) p.params = last_open;
  if (last_space != std::string_view::npos && last_space + 1 < p.params && p.params != p.end)
    p.begin = last_space + 1;
  return p;
}

// Legacy Rust names end in a hash segment ("::h0123456789abcdef") when the demangler kept it.
std::string_view without_rust_hash(std::string_view q) {
  constexpr size_t kHash = 3 + 16;
  if (q.size() <= kHash || q.substr(q.size() - kHash, 3) != "::h") return q;
  for (char c : q.substr(q.size() - 16))
    if (!std::isxdigit(static_cast<unsigned char>(c))) return q;
  return q.substr(0, q.size() - kHash);
}

// Tokens of a signature with `const` moved after the type it qualifies and spaces dropped, so
// "f(const char *)" and "f(char const*)" compare equal.
std::string signature_key(std::string_view s) {
  static constexpr std::string_view kIntegerWords[] = {"signed", "unsigned", "char",
                                                       "short",  "int",      "long"};
  auto is_integer_word = [](std::string_view w) {
    return std::find(std::begin(kIntegerWords), std::end(kIntegerWords), w) !=
           std::end(kIntegerWords);
  };
  std::vector<std::string> tokens;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == ' ') {
      ++i;
    } else if (is_name_char(s[i]) || (s[i] == ':' && s.substr(i, 2) == "::")) {
      size_t j = i;
      while (j < s.size() && (is_name_char(s[j]) || s.substr(j, 2) == "::"))
        j += s[j] == ':' ? 2 : 1;
      tokens.emplace_back(s.substr(i, j - i));
      i = j;
    } else {
      tokens.emplace_back(1, s[i++]);
    }
  }
  std::string key;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] == "const" && i + 1 < tokens.size() && is_name_char(tokens[i + 1][0]) &&
        tokens[i + 1] != "const") {
      size_t j = i + 1;
      if (is_integer_word(tokens[j]))
        while (j + 1 < tokens.size() && is_integer_word(tokens[j + 1])) ++j;
      for (size_t k = i + 1; k <= j; ++k) key += tokens[k] + " ";
      key += "const ";
      i = j;
      continue;
    }
    key += tokens[i] + " ";
  }
  // Spaces between words matter ("unsigned int"), around punctuation they do not.
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    if (key[i] == ' ' && (out.empty() || !is_name_char(out.back()) || i + 1 >= key.size() ||
                          !is_name_char(key[i + 1])))
      continue;
    out += key[i];
  }
  return out;
}

// Rust v0 demangles a method of an inherent impl as "<myapp::Counter>::bump"; users write
// "myapp::Counter::bump". A trait impl ("<T as Trait>::f") keeps its brackets.
std::string without_inherent_brackets(std::string_view q) {
  if (!q.starts_with('<')) return std::string(q);
  int depth = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    if (q[i] == '<') ++depth;
    if (q[i] == '>' && --depth == 0) {
      std::string_view inner = q.substr(1, i - 1);
      if (!q.substr(i + 1).starts_with("::") || inner.find(" as ") != std::string_view::npos)
        return std::string(q);
      return std::string(inner) + std::string(q.substr(i + 1));
    }
  }
  return std::string(q);
}

}  // namespace

std::string qualified_name(std::string_view demangled) {
  DemangledParts p = split_demangled(demangled);
  return without_inherent_brackets(
      without_rust_hash(demangled.substr(p.begin, p.params - p.begin)));
}

bool signature_matches(std::string_view wanted, std::string_view demangled) {
  DemangledParts p = split_demangled(demangled);
  if (p.params == p.end) return false;  // no parameter list to pick an overload by
  std::string key = signature_key(wanted);
  std::string_view full = demangled.substr(p.begin, p.end - p.begin);
  if (key == signature_key(full)) return true;
  // Without the method's trailing qualifiers: "C::get()" names "C::get() const".
  size_t close = demangled.rfind(')', p.end);
  return close != std::string_view::npos && close >= p.params &&
         key == signature_key(demangled.substr(p.begin, close + 1 - p.begin));
}

namespace {

bool has_own_symtab(const ElfFile& elf) {
  return std::any_of(elf.sections().begin(), elf.sections().end(),
                     [](const ElfSection& s) { return s.type == SHT_SYMTAB; });
}

}  // namespace

Result<SymbolTable> SymbolTable::load(const ElfFile& elf, const DebugSearchPaths& paths) {
  if (has_own_symtab(elf)) return load(elf, nullptr);
  // Best effort: an object libdwfl cannot open still has the symbols ElfFile read.
  auto info = DebugInfo::open(elf, paths);
  return load(elf, info ? info->get() : nullptr);
}

Result<SymbolTable> SymbolTable::load(const ElfFile& elf, DebugInfo* debug) {
  if (has_own_symtab(elf)) return load(elf, debug, nullptr);
  auto go = GoPclntab::read(elf);
  return load(elf, debug, go && *go ? &**go : nullptr);
}

Result<SymbolTable> SymbolTable::load(const ElfFile& elf, DebugInfo* debug, const GoPclntab* go) {
  auto own = elf.symbols();
  if (!own) return tl::unexpected(own.error());
  const bool own_symtab = has_own_symtab(elf);
  // Without a .symtab, libdwfl's table is a debug file's, or .dynsym merged with MiniDebugInfo;
  // each symbol says which. A broken debug file or .gnu_debugdata yields none, never an error:
  // it must not hide the symbols the object itself has.
  std::vector<ElfSymbol> external;
  if (debug != nullptr && !own_symtab) external = debug->symbols(true);
  std::vector<FunctionSymbol> all;
  all.reserve(own->size() + external.size());
  collect(elf, std::move(*own), std::nullopt, all);
  collect(elf, std::move(external), std::nullopt, all);
  // A stripped Go program (-ldflags='-s -w') still has its own function table.
  if (go && !own_symtab) {
    all.reserve(all.size() + go->functions().size());  // not twice its 8.6 MB while it grows
    collect_go(elf, *go, all);
  }

  // Sorted in place: a FunctionSymbol is one string and a pointer now (its demangled forms are
  // kept only when they differ), cheap to move; sorting by index would need a second table.
  std::sort(all.begin(), all.end(), [](const FunctionSymbol& a, const FunctionSymbol& b) {
    return std::forward_as_tuple(a.addr, a.name, source_rank(a.source)) <
           std::forward_as_tuple(b.addr, b.name, source_rank(b.source));
  });
  // Duplicates dropped in place: a second vector of them was 8.6 MB more at the peak for a big Go
  // program.
  size_t kept_count = 0;
  for (auto& f : all) {
    if (kept_count > 0 && all[kept_count - 1].addr == f.addr &&
        all[kept_count - 1].name == f.name) {
      // Some tables record a size of 0 (assembly without .size); keep whichever knows it.
      auto& kept = all[kept_count - 1];
      kept.size = std::max(kept.size, f.size);
      continue;
    }
    if (&all[kept_count] != &f) all[kept_count] = std::move(f);
    ++kept_count;
  }
  all.erase(all.begin() + static_cast<std::ptrdiff_t>(kept_count), all.end());
  SymbolTable t;
  t.functions_ = std::move(all);
  // "memcpy@@GLIBC_2.14" (a versioned name in a debug file's .symtab) is shown as memcpy.
  for (auto& f : t.functions_) {
    std::string demangled = demangle(f.name.substr(0, f.name.find('@')));
    if (demangled == f.name) continue;  // then qualified is the name too
    std::string qualified = qualified_name(demangled);
    if (qualified == demangled) qualified.clear();
    f.decoded_ = std::make_shared<const FunctionSymbol::Decoded>(
        FunctionSymbol::Decoded{std::move(demangled), std::move(qualified)});
  }
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
    if (f.name == name || f.demangled() == name) out.push_back(&f);
  }
  if (!out.empty()) return out;
  bool signature = name.find('(') != std::string_view::npos;
  for (const auto& f : functions_) {
    if (f.demangled() == f.name) continue;  // C names matched above
    if (signature ? signature_matches(name, f.demangled()) : f.qualified() == name)
      out.push_back(&f);
  }
  return out;
}

std::vector<const FunctionSymbol*> SymbolTable::match(std::string_view glob) const {
  std::vector<const FunctionSymbol*> out;
  for (const auto& f : functions_) {
    if (glob_match(glob, f.name) ||
        (f.demangled() != f.name &&
         (glob_match(glob, f.demangled()) || glob_match(glob, f.qualified())))) {
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
  for (const auto& f : functions_) out.push_back(f.demangled());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace uscope
