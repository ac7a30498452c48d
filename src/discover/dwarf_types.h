#pragma once
// Functions' formal parameters and C types from an object's DWARF (elfutils libdw), also when the
// DWARF is in a separate debug file (a -dbg package under /usr/lib/debug/.build-id): what lets a
// probe name `req->path` instead of `*(u64*)(arg1 + 40)`. Types are walked one level at a time
// (a pointer's target, a member's type) so a hostile or cyclic type graph costs bounded work.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/debug_info.h"
#include "discover/elf_file.h"
#include "util/result.h"

namespace uscope {

// A type DIE in the reader that returned it.
struct DwarfTypeRef {
  uint64_t offset = 0;
  bool in_types_section = false;  // DWARF 4 .debug_types
  bool operator==(const DwarfTypeRef&) const = default;
};

// One type with typedefs and qualifiers peeled off.
struct DwarfType {
  enum class Kind { Void, Integer, Float, Pointer, Struct, Union, Enum, Array, Function, Other };
  Kind kind = Kind::Other;
  std::string name;       // C spelling: "int", "struct request", "char *", "char [32]"
  std::string base_name;  // without pointers: "char" for "char *", "struct request" for itself
  uint64_t size = 0;      // bytes; 0 when unknown (incomplete struct, flexible array)
  bool is_signed = false;
  DwarfTypeRef ref;                    // this type (not set for Void)
  std::optional<DwarfTypeRef> target;  // Pointer: the pointee (nullopt = void *); Array: element
  uint64_t count = 0;                  // Array: elements of the outermost dimension (0: unknown)
  bool declaration_only = false;       // struct/union without members here (forward declared)
  bool pass_by_reference = false;      // C++ class passed by invisible reference (DW_CC)
};

// How a parameter arrives at function entry under the SysV x86-64 ABI.
struct ArgLocation {
  enum class Class { IntegerRegister, SseRegister, Stack, Unknown };
  Class cls = Class::Unknown;
  int position = 0;    // IntegerRegister: 1..6 (arg1 = rdi ... arg6 = r9); two for a 16-byte pair
  std::string reason;  // why not in an integer register, for errors
};

// One piece of a value's location at a pc, from its DWARF location expression (Go describes its
// register-passed parameters so, a string as two registers).
struct DwarfPiece {
  int reg = -1;            // DWARF register number (x86-64: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi,
                           // 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15); -1: in memory
  int64_t cfa_offset = 0;  // reg == -1: the value is at CFA + cfa_offset
  uint64_t size = 0;       // DW_OP_piece size; 0: the whole value
};

struct DwarfParam {
  std::string name;  // "" for an unnamed parameter
  DwarfType type;
  bool artificial = false;  // C++ `this`
  ArgLocation location;
  // Where the value is at the function's entry by its own location expression or list (what Go
  // emits); empty when DWARF gives none that uscope reads.
  std::vector<DwarfPiece> entry_pieces;
  bool is_result = false;  // DW_AT_variable_parameter: a Go result, not a parameter
};

struct DwarfFunction {
  std::string name;  // DW_AT_name
  uint64_t low_pc = 0;
  std::vector<DwarfParam> params;
  bool varargs = false;
};

struct DwarfMember {
  std::string name;  // "" for an anonymous struct/union member (its members are reachable)
  uint64_t offset = 0;
  DwarfType type;
  int bit_size = 0;  // nonzero for a bitfield
};

class DwarfTypes {
 public:
  // The DWARF of `elf`: its own .debug_info, else the separate debug file debug_info.h finds.
  // An object without either gives a reader whose has_dwarf() is false (not an error).
  static Result<std::unique_ptr<DwarfTypes>> open(const ElfFile& elf,
                                                  const DebugSearchPaths& paths = {});
  // A file with DWARF (an object, a debug file, a compiled header's object).
  static Result<std::unique_ptr<DwarfTypes>> open_file(const std::string& path);
  ~DwarfTypes();

  bool has_dwarf() const;
  const std::string& source() const;  // the file the DWARF came from, for messages
  // Without DWARF: why, in a sentence naming the object ("x has no DWARF (no .debug_info, ...)").
  const std::string& why_no_dwarf() const;

  // The function whose code starts at link-time `addr` (the symbol's value); nullopt when the
  // DWARF does not describe it.
  Result<std::optional<DwarfFunction>> function_at(uint64_t addr);
  // A defined function by DW_AT_name or linkage name.
  Result<std::optional<DwarfFunction>> function_named(std::string_view name);
  // The copy of function `name` inlined at link-time `pc` (a DW_TAG_inlined_subroutine whose
  // ranges hold pc, its abstract origin so named), its parameters where they are at `pc` (their
  // location lists: Go emits them for inlined copies); nullopt when the DWARF has no such copy.
  Result<std::optional<DwarfFunction>> inlined_at(uint64_t pc, std::string_view name);

  // A complete type by its C name in any CU: "struct timespec", "union sigval", "size_t".
  Result<std::optional<DwarfType>> find_type(std::string_view name);
  Result<DwarfType> type(DwarfTypeRef ref);
  // The members of a struct or union, in order; anonymous members are listed as such.
  Result<std::vector<DwarfMember>> members(DwarfTypeRef ref);
  // A member by name, looking through anonymous struct/union members (offsets added up).
  Result<std::optional<DwarfMember>> member(DwarfTypeRef ref, std::string_view name);

  struct Impl;

 private:
  explicit DwarfTypes(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace uscope
