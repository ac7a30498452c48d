#pragma once
// USDT (SystemTap SDT) probes: .note.stapsdt records, the argument-spec grammar (x86_64 and
// aarch64), and the probes of one ELF with addresses turned into the file offsets uprobes need.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/elf_file.h"
#include "util/result.h"

namespace uscope {

enum class UsdtArch { X86_64, AArch64 };

// One argument as `N@OP` in the note: size N (negative = signed), and an operand.
struct UsdtArg {
  enum class Kind {
    Constant,  // $5 (x86) or 5 (aarch64)
    Register,  // %eax / x0 : value in a register
    Memory,    // -8(%rbp) / [sp, 16] / [x0] : *(base + offset)
    Indexed,   // 8(%rax,%rdx,8) : *(base + index*scale + offset)
    Absolute,  // foo(%rip) or a bare symbol address: *(rip + offset) resolved at plan time
  };
  Kind kind = Kind::Constant;
  int size = 8;            // bytes read: 1, 2, 4 or 8
  bool is_signed = false;  // from the sign of N
  bool is_float = false;   // `Nf@`: sys/sdt.h marks floating-point arguments (often in %xmm/dN)
  int64_t constant = 0;    // Kind::Constant (added to `symbol`'s address for `$sym+8`)
  std::string base_reg;    // canonical 64-bit name: "rax", "rbp", "rip", "x0", "sp"
                           // (float registers: "xmm0" on x86_64, "v0" for aarch64's d0/s0)
  std::string index_reg;   // Kind::Indexed
  int scale = 1;           // Kind::Indexed: 1, 2, 4 or 8
  int64_t offset = 0;      // displacement for Memory/Indexed/Absolute
  std::string symbol;      // symbolic displacement (e.g. "foo" in foo(%rip)), empty if numeric
                           // (Absolute with an empty base_reg: AT&T absolute address `foo+8`)
  std::string text;        // the spec as written, e.g. "-4@%eax"
};

// Parses the whole space-separated argument string of one probe. Errors name the column.
Result<std::vector<UsdtArg>> parse_usdt_args(std::string_view spec,
                                             UsdtArch arch = UsdtArch::X86_64);

// One NT_STAPSDT record as stored (link-time addresses, not yet adjusted).
struct UsdtNoteRecord {
  std::string provider;
  std::string name;
  uint64_t pc = 0;
  uint64_t base = 0;       // address of .stapsdt.base the note was written against
  uint64_t semaphore = 0;  // 0 = none
  std::string args;        // raw argument string
};

// Parses the descriptor of one NT_STAPSDT note (type 3, owner "stapsdt").
Result<UsdtNoteRecord> parse_stapsdt_note(std::span<const uint8_t> desc, bool is_64bit);

struct UsdtLocation {
  uint64_t addr = 0;              // adjusted link-time address of the probe instruction
  uint64_t offset = 0;            // file offset of addr
  uint64_t semaphore = 0;         // adjusted link-time address of the semaphore, 0 = none
  uint64_t semaphore_offset = 0;  // file offset of the semaphore (uprobe ref_ctr_offset)
  std::string args_text;
  std::vector<UsdtArg> args;
  std::optional<Error> args_error;  // the spec failed to parse: probe usable, args are not
};

struct UsdtProbe {
  std::string provider;
  std::string name;
  std::vector<UsdtLocation> locations;  // one per inlined copy of the probe
};

// Every probe of `elf`, grouped by provider:name in note order; addresses adjusted for prelink by
// (actual .stapsdt.base address - base recorded in the note). A malformed note, or a probe or
// semaphore outside every PT_LOAD's file image, fails the whole file (as in libbpf); a bad argument
// spec only sets that location's args_error.
Result<std::vector<UsdtProbe>> read_usdt_probes(const ElfFile& elf);

}  // namespace uscope
