#pragma once
// ELF model on elfutils' libelf: sections, segments, symbols, notes, build-id and the
// virtual address <-> file offset mapping used to attach uprobes (the kernel wants file offsets).
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace uscope {

struct ElfSection {
  std::string name;
  uint32_t type = 0;   // SHT_*
  uint64_t flags = 0;  // SHF_*
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;  // sh_size as stored (the compressed size for SHF_COMPRESSED)
  size_t index = 0;
};

struct ElfSegment {
  uint32_t type = 0;   // PT_*
  uint32_t flags = 0;  // PF_*
  uint64_t vaddr = 0;
  uint64_t offset = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
};

enum class SymbolBinding { Local, Global, Weak, Unique };
// IndirectFunction: an STT_GNU_IFUNC symbol, whose address is the resolver that picks the real
// implementation at load time (glibc's strlen, memcpy, ...).
enum class SymbolKind { Function, IndirectFunction, Object, Other };
// Where a symbol came from: the file's own tables, its MiniDebugInfo, or a separate debug file.
enum class SymbolSource { Symtab, Dynsym, MiniDebugInfo, DebugFile, Gopclntab };

// A symbol's st_info as its binding and kind (libelf and libdwfl give the same Elf64_Sym).
SymbolBinding symbol_binding(unsigned char st_info);
SymbolKind symbol_kind(unsigned char st_info);

struct ElfSymbol {
  std::string name;  // as in the table (mangled)
  uint64_t addr = 0;
  uint64_t size = 0;
  SymbolBinding binding = SymbolBinding::Global;
  SymbolKind kind = SymbolKind::Other;
  SymbolSource source = SymbolSource::Symtab;
  bool defined = true;  // false for undefined (imported) dynsym entries
};

struct ElfNote {
  uint32_t type = 0;
  std::string owner;
  std::span<const uint8_t> desc;  // points into the ElfFile's data; valid while it lives
  uint64_t section_addr = 0;      // sh_addr of the section holding the note (0 if from a segment)
};

class ElfFile {
 public:
  // Opens and parses `path` (may be a /proc/PID/root/... or /proc/PID/map_files/... path).
  // `display_path` is what users see (defaults to `path`).
  static Result<ElfFile> open(const std::string& path, std::string display_path = {});
  // Parses an in-memory image (MiniDebugInfo, fuzzing). The bytes are owned by the ElfFile.
  static Result<ElfFile> from_memory(std::vector<uint8_t> bytes, std::string display_path);

  ElfFile(ElfFile&&) noexcept;
  ElfFile& operator=(ElfFile&&) noexcept;
  ~ElfFile();

  const std::string& path() const;          // path used to open the file
  const std::string& display_path() const;  // path shown to users
  bool is_64bit() const;
  uint16_t machine() const;  // EM_*
  uint16_t type() const;     // ET_EXEC, ET_DYN, ...
  // ET_DYN with DF_1_PIE, or with a PT_INTERP and no DT_SONAME (libc.so.6 has a PT_INTERP).
  bool is_pie() const;
  bool is_shared_library() const;

  const std::vector<ElfSection>& sections() const;
  std::optional<ElfSection> section(std::string_view name) const;
  // Bytes of a section (decompressed if SHF_COMPRESSED). Empty span for SHT_NOBITS.
  Result<std::span<const uint8_t>> section_data(const ElfSection& s) const;
  const std::vector<ElfSegment>& segments() const;
  // Up to `len` bytes of code at link-time address `addr`, from the executable section holding
  // it; empty when no executable section does.
  std::span<const uint8_t> code_bytes(uint64_t addr, uint64_t len) const;
  // The same bytes copied into `out` and not kept: for one pass over a whole section (a scan for
  // branches into one function), which code_bytes() would keep resident. False when unreadable.
  bool read_code(uint64_t addr, uint64_t len, std::vector<uint8_t>& out) const;

  // Exactly `len` bytes at link-time address `addr` from the file-backed contents of one
  // allocated section (data, read-only data, code); nullopt when no section holds them all.
  std::optional<std::span<const uint8_t>> allocated_bytes(uint64_t addr, uint64_t len) const;

  // PT_LOAD based translation; nullopt when the address/offset is in no loaded segment.
  std::optional<uint64_t> vaddr_to_offset(uint64_t vaddr) const;
  std::optional<uint64_t> offset_to_vaddr(uint64_t offset) const;
  // Lowest PT_LOAD vaddr aligned down to its p_align (what ld.so subtracts for the load bias).
  uint64_t base_vaddr() const;

  std::optional<std::string> build_id() const;  // lowercase hex of NT_GNU_BUILD_ID

  // Every entry of .symtab and .dynsym (except the null entry 0), in table order; no filtering,
  // no demangling.
  Result<std::vector<ElfSymbol>> symbols() const;
  // Notes of all SHT_NOTE sections (or of PT_NOTE segments when there is no SHT_NOTE section,
  // e.g. no section headers) whose owner matches `owner` (empty matches all).
  Result<std::vector<ElfNote>> notes(std::string_view owner = {}) const;

  // The libelf handle, for libdw readers that take an Elf* (dwarf_getcfi_elf, dwarf_begin_elf).
  // Valid while this ElfFile lives; like the rest of it, not to be used from two threads.
  Elf* libelf() const;

 private:
  struct Impl;
  explicit ElfFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace uscope
