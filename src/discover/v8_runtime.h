#pragma once
// A process running V8 (node), as a stack walker and a symbolizer need it: the object that holds
// V8 (node itself, linked statically as nodesource's, or libnode.so as Debian's), and the layout
// of its frames and objects from V8's postmortem metadata: the v8dbg_* data symbols (ints) that
// llnode reads, one per field offset, type number and tag. No table of versions: every value
// comes from the object, checked for the few facts the walker assumes.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "bpf/v8.h"
#include "discover/elf_file.h"
#include "discover/process.h"
#include "util/result.h"

namespace uscope {

// The v8dbg_* constants of one object, by name without the prefix ("off_fp_function" -> -16).
using V8Constants = std::map<std::string, int64_t>;

// Every v8dbg_* data symbol of `elf` with its value (a zero-initialized one, in .bss, reads 0).
// Empty when the object holds none (not V8).
Result<V8Constants> read_v8_constants(const ElfFile& elf);

// What uscope reads of V8, as byte offsets, type numbers and tags.
struct V8Layout {
  v8_offsets bpf{};  // what the walker reads (bpf/v8.h)
  uint32_t sfi_name_or_scope_info = 0, sfi_script_or_debug_info = 0;
  uint32_t script_name = 0, script_source = 0, script_line_ends = 0;
  uint32_t fixed_array_length = 0, fixed_array_data = 0;
  uint32_t scope_info_first_vars = 0, scope_info_context_locals = 0;  // slot indexes
  uint16_t type_script = 0, type_scope_info = 0, type_fixed_array = 0, first_nonstring_type = 0;
  // Strings: String::length, the characters of sequential strings, the parts of the others.
  uint32_t string_length = 0, seq_one_byte_chars = 0, seq_two_byte_chars = 0;
  uint32_t cons_first = 0, cons_second = 0, thin_actual = 0, sliced_parent = 0, sliced_offset = 0;
  uint32_t representation_mask = 0, encoding_mask = 0, one_byte_tag = 0;
  uint32_t seq_tag = 0, cons_tag = 0, external_tag = 0, sliced_tag = 0, thin_tag = 0;
};

// The layout the constants describe. An error names the constant that is missing or out of
// what the walker supports ("v8dbg_SmiShiftSize is 0: a V8 with pointer compression (31-bit
// Smis), which uscope does not read").
Result<V8Layout> v8_layout(const V8Constants& constants);

struct V8Runtime {
  pid_t pid = 0;
  std::string object_path;  // the object holding V8, as the process maps it
  size_t constants = 0;     // v8dbg_* constants it holds
  V8Layout layout;
  v8_proc proc{};  // for v8_procs
  // "node (pid 123)": how messages name it.
  std::string name() const;
};

// Whether an object is named as one that may hold V8 (node, nodejs, libnode.so.108): only those
// are opened, so that a session over every process opens no other object for this.
bool v8_named(const MappedObject& object);

// Finds V8 in a process (objects opened through ObjectStore::shared()). nullopt: no object holds
// V8's constants, which is an answer, not an error. An error: V8 is there but uscope cannot read
// its frames (a constant missing, pointer compression).
Result<std::optional<V8Runtime>> find_v8_runtime(const Process& process);

}  // namespace uscope
