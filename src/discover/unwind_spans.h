#pragma once
// An unwind table before it becomes rows: ranges of code with one rule each, as the CFI reader
// (unwind_cfi.cc) and Go's SP deltas (unwind_go.cc) find them. Internal to the table builder.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "discover/elf_file.h"
#include "discover/unwind_table.h"
#include "util/result.h"

namespace uscope {

struct UnwindSpan {
  uint64_t start = 0, end = 0;  // [start, end), link-time addresses
  UnwindRule rule;
};

struct CfiSpans {
  std::vector<UnwindSpan> spans;  // in FDE order, as read
  size_t fdes = 0;
  std::string source;  // ".eh_frame", ".debug_frame in PATH", "" when the object has no CFI
};

// The rows of every FDE of the object's .eh_frame; when it has none, of the .debug_frame of
// `debug_file` (or of the object itself when `debug_file` is ""), unless `eh_frame_only`.
Result<CfiSpans> cfi_spans(const ElfFile& elf, const std::string& debug_file, bool eh_frame_only);

// Rows of Go functions from .gopclntab's SP deltas (pcsp).
std::vector<UnwindSpan> go_spans(const GoPclntab& go, const ElfFile& elf);

// Sorted rows, no two adjacent alike, NONE in the gaps and at the end. Where spans overlap the
// lower-addressed one wins; `fallback` spans only fill what no `primary` span covers.
std::vector<UnwindRow> rows_of_spans(std::vector<UnwindSpan> primary,
                                     std::vector<UnwindSpan> fallback);

// An FDE's initial location and range, decoded as its CIE's 'R' augmentation says.
struct FdeRange {
  uint64_t start = 0, end = 0;
};
// `fde` is the FDE's bytes after its CIE pointer (Dwarf_FDE::start .. end), `field_vaddr` the
// link-time address of its first byte (for pcrel), `encoding` the DW_EH_PE_* of the CIE ('R', or
// DW_EH_PE_absptr for .debug_frame); nullopt when the bytes are short or the encoding unknown.
std::optional<FdeRange> decode_fde_range(std::span<const uint8_t> fde, uint64_t field_vaddr,
                                         uint8_t encoding, bool is_64bit);
// The 'R' encoding of a CIE from its augmentation string and data; absptr when none is given,
// nullopt when the augmentation cannot be read.
std::optional<uint8_t> cie_fde_encoding(const char* augmentation,
                                        std::span<const uint8_t> augmentation_data, bool is_64bit);

}  // namespace uscope
