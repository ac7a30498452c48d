#include "discover/object_info.h"

#include <elf.h>
#include <fmt/core.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "discover/gopclntab.h"

namespace uscope {
namespace {

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_AARCH64:
      return "aarch64";
    case EM_386:
      return "i386";
    case EM_ARM:
      return "arm";
    case EM_RISCV:
      return "riscv";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390";
    default:
      return fmt::format("machine {}", machine);
  }
}

bool is_printable_text(std::string_view s) {
  for (char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

DwarfPresence dwarf_presence(const ElfFile& elf) {
  DwarfPresence d;
  if (auto s = elf.section(".debug_info"); s && s->type != SHT_NOBITS) {
    d.section = s->name;
    if (s->flags & SHF_COMPRESSED) d.compression = "SHF_COMPRESSED";
  } else if (auto z = elf.section(".zdebug_info"); z && z->type != SHT_NOBITS) {
    d.section = z->name;
    d.compression = ".zdebug";
  }
  return d;
}

// The file name at the start of .gnu_debuglink (then padding and a CRC), printable or nothing.
std::string debuglink_name(const ElfFile& elf) {
  auto s = elf.section(".gnu_debuglink");
  if (!s) return {};
  auto data = elf.section_data(*s);
  if (!data) return {};
  const auto* chars = reinterpret_cast<const char*>(data->data());
  const size_t len = strnlen(chars, data->size());
  if (len == data->size()) return {};  // not terminated: not a debug link
  std::string name(chars, len);
  return is_printable_text(name) ? name : std::string();
}

// cmd/link's note of owner "Go", type 4 (ELF_NOTE_GOBUILDID_TAG): the ID the go command uses to
// decide whether a binary is up to date ("actionID/contentID" hashes).
std::string go_build_id(const ElfFile& elf) {
  constexpr uint32_t kGoBuildIdTag = 4;
  auto notes = elf.notes("Go");
  if (!notes) return {};
  for (const auto& n : *notes) {
    if (n.type != kGoBuildIdTag) continue;
    std::string id(reinterpret_cast<const char*>(n.desc.data()), n.desc.size());
    return is_printable_text(id) ? id : std::string();
  }
  return {};
}

GoFacts go_facts(const ElfFile& elf) {
  GoFacts go;
  go.build_id = go_build_id(elf);
  if (auto bi = read_go_buildinfo(elf); !bi) {
    go.build_error = bi.error().message;
  } else if (*bi) {
    go.build = std::move(**bi);
    go.modules = parse_go_modinfo(go.build->mod_info);
  }
  if (auto table = GoPclntab::read(elf); !table) {
    go.pclntab_error = table.error().message;
  } else if (*table) {
    go.pclntab_functions = (*table)->functions().size();
  }
  return go;
}

}  // namespace

Result<ObjectInfo> describe_object(const ElfFile& elf) {
  ObjectInfo info;
  info.path = elf.display_path();
  info.machine = machine_name(elf.machine());
  info.is_64bit = elf.is_64bit();
  info.pie = elf.is_pie();
  info.shared_library = elf.is_shared_library();
  for (const auto& seg : elf.segments()) info.dynamic |= seg.type == PT_DYNAMIC;
  info.build_id = elf.build_id();

  for (const auto& s : elf.sections()) {
    if (s.type == SHT_SYMTAB) info.symtab_functions = 0;
    if (s.type == SHT_DYNSYM) info.dynsym_functions = 0;
  }
  auto syms = elf.symbols();
  if (!syms) return with_context(elf.display_path(), syms.error());
  for (const auto& sym : *syms) {
    const bool function =
        sym.kind == SymbolKind::Function || sym.kind == SymbolKind::IndirectFunction;
    if (!function || !sym.defined) continue;
    auto& count =
        sym.source == SymbolSource::Symtab ? info.symtab_functions : info.dynsym_functions;
    if (count) ++*count;
  }
  info.minidebuginfo = elf.section(".gnu_debugdata").has_value();
  info.debuglink = debuglink_name(elf);
  info.dwarf = dwarf_presence(elf);

  if (elf.section(".go.buildinfo") || elf.section(".gopclntab")) info.go = go_facts(elf);
  return info;
}

}  // namespace uscope
