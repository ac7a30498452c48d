#pragma once
// What `uscope list --info` says of one object: the ELF facts that decide what uscope can do
// with it (symbol tables, DWARF), and for a Go program its toolchain, its modules and build
// settings (.go.buildinfo) and its function table (.gopclntab).
#include <cstddef>
#include <optional>
#include <string>

#include "discover/elf_file.h"
#include "discover/go_buildinfo.h"
#include "discover/go_modinfo.h"
#include "util/result.h"

namespace uscope {

struct DwarfPresence {
  std::string section;  // ".debug_info" or ".zdebug_info"; "" when the object has no DWARF
  // "SHF_COMPRESSED" (the section flag, what Go 1.19 and gcc -gz write), ".zdebug" (the older
  // GNU convention), "" when stored plain.
  std::string compression;
};

struct GoFacts {
  std::optional<GoBuildInfo> build;  // nullopt: no .go.buildinfo, or see build_error
  std::string build_error;           // why a .go.buildinfo present could not be read
  GoModInfo modules;                 // parsed from build->mod_info
  std::string build_id;  // `go tool buildid`'s ID, from the .note.go.buildid note; "" when none
  std::optional<size_t> pclntab_functions;  // nullopt: no .gopclntab, or see pclntab_error
  std::string pclntab_error;
};

// The object's unwind table (discover/object_unwind_table.h): what `profile` and `trace -U` walk.
struct UnwindFacts {
  std::string source;  // ".eh_frame", ...; "" when the object has no CFI (frame pointers)
  size_t rows = 0, rules = 0, fdes = 0, unsupported = 0, signal_frames = 0;
  bool from_cache = false;
  double milliseconds = 0;  // reading it from the cache, or building it
  std::string cache_file;   // where it is cached, "" when not
  std::string error;        // why there is no table (malformed CFI)
};

struct ObjectInfo {
  std::string path;
  std::string machine;  // "x86-64", "aarch64", "i386", "machine 243"
  bool is_64bit = false;
  bool pie = false;
  bool shared_library = false;
  bool dynamic = false;  // has a PT_DYNAMIC segment (loads shared libraries)
  std::optional<std::string> build_id;
  std::optional<size_t> symtab_functions;  // defined functions in .symtab; nullopt: no .symtab
  std::optional<size_t> dynsym_functions;  // defined functions in .dynsym; nullopt: no .dynsym
  bool minidebuginfo = false;              // has .gnu_debugdata (symbols in an xz'd ELF)
  std::string debuglink;                   // .gnu_debuglink's file name, "" when none
  DwarfPresence dwarf;
  // nullopt: not a Go program (neither .go.buildinfo nor .gopclntab).
  std::optional<GoFacts> go;
  std::optional<UnwindFacts> unwind;  // nullopt: not asked for
};

// Fails only when the symbol tables cannot be read; a Go table that cannot be read is recorded
// in GoFacts, so the rest is still shown.
Result<ObjectInfo> describe_object(const ElfFile& elf);

}  // namespace uscope
