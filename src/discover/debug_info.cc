// Debug files, MiniDebugInfo, lines and inlines through elfutils' libdwfl: one Dwfl with one
// module per object. libdwfl's own address -> symbol lookup (dwfl_module_addrinfo) is not used:
// it scans the whole table per call (3 ms per lookup in libjvm.so's 48,000 functions, measured
// with build/bench/symbolize_bench), so SymbolTable sorts the symbols libdwfl found once instead.
#include "discover/debug_info.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "discover/symbol_table.h"
#include "util/unique_fd.h"

namespace uscope {
namespace {

// The object's own path as seen inside `root_prefix` (its container), so that .gnu_debuglink is
// looked up beside it. /proc/PID/map_files names say nothing about where the file lives; the
// display path does.
std::string logical_path(const ElfFile& elf, const std::string& root_prefix) {
  const std::string& p = elf.path();
  if (!root_prefix.empty() && p.size() > root_prefix.size() && p.starts_with(root_prefix) &&
      p[root_prefix.size()] == '/') {
    return p.substr(root_prefix.size());
  }
  if (p.starts_with("/proc/") && p.find("/map_files/") != std::string::npos &&
      elf.display_path().starts_with("/")) {
    return elf.display_path();
  }
  if (root_prefix.empty() && p.starts_with("/") && !p.starts_with("/proc/")) {
    // gdb looks beside the file's real location, which matters for merged-/usr symlinks.
    char resolved[PATH_MAX];
    if (::realpath(p.c_str(), resolved) != nullptr) return resolved;
  }
  return p;
}

// With DEBUGINFOD_URLS set (and libdebuginfod installed), dwfl_standard_find_debuginfo also
// downloads missing debug files: the user's choice, honoured as gdb and perf honour it.
//
// libdwfl's search path: "" (beside the file), ".debug", then each root, where it looks for
// .build-id/xx/rest.debug and for <root>/<file's directory>/<debuglink>. Under a root_prefix
// that last form joins the root with the prefixed directory and finds nothing; build-id and
// beside-the-file lookups (what distributions install) still work.
std::string debuginfo_path(const DebugSearchPaths& paths) {
  std::string out = ":.debug";
  for (const auto& root : paths.debug_roots) {
    out += ':';
    out += root.starts_with("/") ? paths.root_prefix + root : root;
  }
  return out;
}

bool has_section(Elf* elf, uint32_t type) {
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type == type) return true;
  }
  return false;
}

bool has_section_named(Elf* elf, const char* name) {
  size_t shstrndx;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    const char* n = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (n != nullptr && std::strcmp(n, name) == 0) return true;
  }
  return false;
}

// The name an inlined call's DIE gives its function: the linkage name demangled (as the symbol
// table would show it), else DW_AT_name; both followed through DW_AT_abstract_origin.
std::string function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dwarf_attr_integrate(die, at, &attr) != nullptr) {
      if (const char* s = dwarf_formstring(&attr)) return demangle(s);
    }
  }
  const char* name = dwarf_diename(die);
  return name ? name : "";
}

}  // namespace

struct DebugInfo::Impl {
  // libdwfl keeps pointers to the callbacks and the search path: they live as long as the Dwfl.
  std::string search_path;
  char* search_path_ptr = nullptr;
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  std::string file_name;  // where libdwfl believes the file lives (for .gnu_debuglink)
  std::optional<std::optional<std::string>> debug_file;

  ~Impl() {
    if (dwfl) dwfl_end(dwfl);
  }

  uint64_t bias() {
    Dwarf_Addr bias = 0;
    dwfl_module_getelf(module, &bias);
    return bias;
  }

  // The origin of a symbol that came from an ELF other than the object itself. libdwfl reads
  // MiniDebugInfo only when the table it found is .dynsym, i.e. when no debug file had a
  // .symtab, and does not say which of its files an Elf is; the debug file's Elf is only
  // reachable through its DWARF, which is opened only when both sources exist.
  SymbolSource external_origin(Elf* from, Elf* main) {
    const char* debug_name = nullptr;
    dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, &debug_name);
    const bool mini = has_section_named(main, ".gnu_debugdata");
    if (debug_name == nullptr) return mini ? SymbolSource::MiniDebugInfo : SymbolSource::DebugFile;
    if (!mini) return SymbolSource::DebugFile;
    Dwarf_Addr b;
    Dwarf* dw = dwfl_module_getdwarf(module, &b);
    return dw != nullptr && dwarf_getelf(dw) == from ? SymbolSource::DebugFile
                                                     : SymbolSource::MiniDebugInfo;
  }
};

DebugInfo::DebugInfo(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DebugInfo::~DebugInfo() = default;

Result<std::unique_ptr<DebugInfo>> DebugInfo::open(const ElfFile& elf,
                                                   const DebugSearchPaths& paths) {
  auto impl = std::make_unique<Impl>();
  impl->search_path = debuginfo_path(paths);
  impl->search_path_ptr = impl->search_path.data();
  impl->callbacks.find_elf = dwfl_build_id_find_elf;
  impl->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  impl->callbacks.debuginfo_path = &impl->search_path_ptr;
  impl->dwfl = dwfl_begin(&impl->callbacks);
  if (impl->dwfl == nullptr) return fail("libdwfl: {}", dwfl_errmsg(-1));

  UniqueFd fd(::open(elf.path().c_str(), O_RDONLY | O_CLOEXEC));
  // A /proc/PID/map_files path dies with its process; the file may still be at its mapped path,
  // and is the one that was mapped if it has the same build-id (checked below).
  const bool by_display_path = !fd.valid() && elf.build_id() &&
                               elf.display_path().starts_with("/") &&
                               elf.display_path() != elf.path();
  if (by_display_path) fd = UniqueFd(::open(elf.display_path().c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail_errno(errno, "{}: {}", elf.display_path(), std::strerror(errno));
  const std::string logical = logical_path(elf, paths.root_prefix);
  impl->file_name = logical.starts_with("/") && !logical.starts_with(paths.root_prefix + "/")
                        ? paths.root_prefix + logical
                        : logical;
  // Reported at bias 0, so that libdwfl's addresses are the object's link-time addresses.
  dwfl_report_begin(impl->dwfl);
  impl->module = dwfl_report_elf(impl->dwfl, elf.display_path().c_str(), impl->file_name.c_str(),
                                 fd.get(), 0, false);
  if (impl->module == nullptr) return fail("{}: libdwfl: {}", elf.display_path(), dwfl_errmsg(-1));
  (void)fd.release();  // the module owns it now
  dwfl_report_end(impl->dwfl, nullptr, nullptr);
  if (by_display_path) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr;
    const int len = dwfl_module_build_id(impl->module, &bits, &vaddr);
    std::string hex;
    for (int i = 0; i < len; ++i) hex += fmt::format("{:02x}", bits[i]);
    if (hex != *elf.build_id())
      return fail("{}: the file at this path is not the one that was mapped", elf.display_path());
  }
  return std::unique_ptr<DebugInfo>(new DebugInfo(std::move(impl)));
}

std::vector<ElfSymbol> DebugInfo::symbols(bool functions_only) {
  std::vector<ElfSymbol> out;
  const int n = dwfl_module_getsymtab(impl_->module);
  if (n <= 0) return out;
  Dwarf_Addr main_bias = 0;
  Elf* main = dwfl_module_getelf(impl_->module, &main_bias);
  const SymbolSource own =
      has_section(main, SHT_SYMTAB) ? SymbolSource::Symtab : SymbolSource::Dynsym;
  std::optional<SymbolSource> external;
  if (!functions_only) out.reserve(static_cast<size_t>(n));
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr addr;
    GElf_Word shndx;
    Elf* from = nullptr;
    Dwarf_Addr bias;
    const char* name = dwfl_module_getsym_info(impl_->module, i, &sym, &addr, &shndx, &from, &bias);
    if (name == nullptr || *name == '\0') continue;
    const SymbolKind kind = symbol_kind(sym.st_info);
    if (functions_only && kind != SymbolKind::Function && kind != SymbolKind::IndirectFunction)
      continue;
    ElfSymbol s;
    s.name = name;
    s.addr = addr - main_bias;
    s.size = sym.st_size;
    s.binding = symbol_binding(sym.st_info);
    s.kind = kind;
    s.defined = shndx != SHN_UNDEF;
    if (from == main) {
      s.source = own;
    } else {
      if (!external) external = impl_->external_origin(from, main);
      s.source = *external;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<std::string> DebugInfo::debug_file() {
  if (impl_->debug_file) return *impl_->debug_file;
  const char* found = nullptr;
  void** userdata = nullptr;
  const char* name = nullptr;
  Dwarf_Addr start = 0;
  dwfl_module_info(impl_->module, &userdata, &start, nullptr, nullptr, nullptr, nullptr, &found);
  if (found != nullptr) return *(impl_->debug_file = std::string(found));
  // Not needed by anything libdwfl read so far: ask its standard lookup directly, as the
  // find_debuginfo callback would be asked.
  Dwarf_Addr bias;
  Elf* main = dwfl_module_getelf(impl_->module, &bias);
  GElf_Word crc = 0;
  const char* link = main ? dwelf_elf_gnu_debuglink(main, &crc) : nullptr;
  name = dwfl_module_info(impl_->module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                          nullptr);
  char* path = nullptr;
  const int fd = dwfl_standard_find_debuginfo(impl_->module, userdata, name, start,
                                              impl_->file_name.c_str(), link, crc, &path);
  std::optional<std::string> result;
  if (fd >= 0) {
    ::close(fd);
    if (path != nullptr) result = std::string(path);
  }
  std::free(path);
  impl_->debug_file = result;
  return result;
}

std::optional<SourcePosition> DebugInfo::source_at(uint64_t addr) {
  const Dwarf_Addr at = addr + impl_->bias();
  Dwarf_Addr cu_bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(impl_->module, at, &cu_bias);
  if (cu == nullptr) return std::nullopt;

  SourcePosition pos;
  if (Dwfl_Line* line = dwfl_module_getsrc(impl_->module, at)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
      pos.file = file;
      pos.line = lineno;
    }
  }
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  const bool have_files = dwarf_getsrcfiles(cu, &files, &nfiles) == 0;

  // Scopes come innermost first. Each inlined call's position is where the code inside it is;
  // the next one out is at the call site the inner one records.
  Dwarf_Die* scopes = nullptr;
  const int n = dwarf_getscopes(cu, at - cu_bias, &scopes);
  for (int i = 0; i < n; ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag == DW_TAG_subprogram) break;
    if (tag != DW_TAG_inlined_subroutine) continue;
    pos.inlined.push_back({function_name(&scopes[i]), pos.file, pos.line});
    Dwarf_Attribute attr;
    Dwarf_Word file_index = 0, call_line = 0;
    pos.file.clear();
    pos.line = 0;
    if (have_files && dwarf_attr(&scopes[i], DW_AT_call_file, &attr) != nullptr &&
        dwarf_formudata(&attr, &file_index) == 0 && file_index < nfiles) {
      if (const char* f = dwarf_filesrc(files, file_index, nullptr, nullptr)) pos.file = f;
    }
    if (dwarf_attr(&scopes[i], DW_AT_call_line, &attr) != nullptr &&
        dwarf_formudata(&attr, &call_line) == 0)
      pos.line = static_cast<int>(call_line);
  }
  std::free(scopes);
  if (pos.file.empty() && pos.inlined.empty()) return std::nullopt;
  return pos;
}

std::optional<std::string> find_debug_file(const ElfFile& elf, const DebugSearchPaths& paths) {
  auto info = DebugInfo::open(elf, paths);
  if (!info) return std::nullopt;
  return (*info)->debug_file();
}

}  // namespace uscope
