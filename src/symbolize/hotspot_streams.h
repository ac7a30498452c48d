#pragma once
// HotSpot's compressed streams, as untrusted bytes read from a JVM: a method's line number table
// (CompressedLineNumberReadStream) and an nmethod's debug info (its PcDescs and the scopes data
// they point into, DebugInfoReadStream). Pure decoders: no target memory, no layout (fuzzed in
// fuzz/hotspot_streams_fuzz.cc); symbolize/hotspot_code.h reads the bytes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "util/result.h"

namespace uscope {

// HotSpot's compressed streams (CompressedReadStream, UNSIGNED5): 1-5 bytes per int, bytes below
// 192 + excluded ending one. Never reads past its bytes; nullopt at a truncated or excluded byte.
class Unsigned5Reader {
 public:
  Unsigned5Reader(std::span<const uint8_t> bytes, uint8_t excluded) : b_(bytes), x_(excluded) {}
  std::optional<uint8_t> byte();
  std::optional<uint32_t> read_uint();
  std::optional<int32_t> read_signed();  // zigzag: (v >> 1) ^ -(v & 1)
  size_t position() const { return pos_; }
  bool seek(size_t pos);

 private:
  std::span<const uint8_t> b_;
  uint8_t x_;
  size_t pos_ = 0;
};

// One (bci, line) pair of a method's compressed line number table.
struct HotspotLineEntry {
  int bci = 0;
  int line = 0;
};
// Every pair until the table's 0 terminator (CompressedLineNumberReadStream), at most 65536; a
// truncated table ends where it stops.
std::vector<HotspotLineEntry> decode_hotspot_line_table(std::span<const uint8_t> table,
                                                        uint8_t excluded);
// The line of `bci` as Method::line_number_from_bci answers: the pair at bci, else the line of
// the greatest bci below it; -1 when none.
int hotspot_line_of(std::span<const uint8_t> table, uint8_t excluded, int bci);

// A PcDesc: a pc (offset from the nmethod's code begin) and where its scopes are decoded.
struct HotspotPcDesc {
  int32_t pc_offset = 0;
  int32_t scope_decode_offset = 0;  // 0: no debug info (DebugInformationRecorder::serialized_null)
};
// The PcDescs of an nmethod's scopes pcs section (`stride` bytes each).
std::vector<HotspotPcDesc> parse_hotspot_pc_descs(std::span<const uint8_t> section, uint64_t stride,
                                                  uint64_t pc_offset_at, uint64_t scope_at);
// The PcDesc of a return address (the one at exactly `pc_offset`), or of a thread's pc (`exact`
// false: the first at or after it, where the code it runs next is described); null when none.
const HotspotPcDesc* find_hotspot_pc_desc(std::span<const HotspotPcDesc> descs, int32_t pc_offset,
                                          bool exact);

// One scope of an inlined chain: a method and the bytecode index in it (-1: InvocationEntryBci,
// the method's entry).
struct HotspotScope {
  uint64_t method = 0;  // Method*
  int bci = 0;
};
// The chain at `decode_offset` of an nmethod's scopes data, innermost first (ScopeDesc and its
// senders: DebugInfoReadStream's sender offset, method index, bci). `metadata` is the nmethod's
// metadata section (method indexes count from 1). At most 256 scopes; fails naming the offset
// that made no sense.
Result<std::vector<HotspotScope>> decode_hotspot_scopes(std::span<const uint8_t> scopes,
                                                        std::span<const uint64_t> metadata,
                                                        int32_t decode_offset, uint8_t excluded);

}  // namespace uscope
