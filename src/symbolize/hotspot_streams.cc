#include "symbolize/hotspot_streams.h"

#include <cstring>

namespace uscope {
namespace {

constexpr uint32_t kUnsigned5Low = 192;  // L: bytes below it end an int (lg_H = 6, H = 64)
constexpr int kUnsigned5MaxBytes = 5;
constexpr size_t kMaxScopes = 256;  // an inlined chain deeper than C2's MaxInlineLevel allows
constexpr size_t kMaxLinePairs = 65536;

template <typename T>
T int_at(std::span<const uint8_t> b, uint64_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

}  // namespace

std::optional<uint8_t> Unsigned5Reader::byte() {
  if (pos_ >= b_.size()) return std::nullopt;
  return b_[pos_++];
}

bool Unsigned5Reader::seek(size_t pos) {
  if (pos > b_.size()) return false;
  pos_ = pos;
  return true;
}

std::optional<uint32_t> Unsigned5Reader::read_uint() {
  uint32_t sum = 0;
  for (int i = 0, shift = 0; i < kUnsigned5MaxBytes; ++i, shift += 6) {
    auto b = byte();
    if (!b || *b < x_) return std::nullopt;
    uint32_t v = *b - x_;
    sum += v << shift;
    if (v < kUnsigned5Low - x_ || i == kUnsigned5MaxBytes - 1) return sum;
  }
  return sum;
}

std::optional<int32_t> Unsigned5Reader::read_signed() {
  auto v = read_uint();
  if (!v) return std::nullopt;
  return static_cast<int32_t>(*v >> 1) ^ -static_cast<int32_t>(*v & 1);
}

std::vector<HotspotLineEntry> decode_hotspot_line_table(std::span<const uint8_t> table,
                                                        uint8_t excluded) {
  std::vector<HotspotLineEntry> out;
  Unsigned5Reader r(table, excluded);
  uint32_t bci = 0, line = 0;  // wrap as the JVM's ints do, never overflow as signed
  while (out.size() < kMaxLinePairs) {
    auto next = r.byte();
    if (!next || *next == 0) break;
    if (*next == 0xff) {  // escape: a pair of signed deltas
      auto db = r.read_signed();
      auto dl = r.read_signed();
      if (!db || !dl) break;
      bci += static_cast<uint32_t>(*db);
      line += static_cast<uint32_t>(*dl);
    } else {  // bci delta in the top 5 bits, line delta in the low 3
      bci += *next >> 3;
      line += *next & 7;
    }
    out.push_back({static_cast<int>(bci), static_cast<int>(line)});
  }
  return out;
}

int hotspot_line_of(std::span<const uint8_t> table, uint8_t excluded, int bci) {
  int best_bci = 0, best_line = -1;
  for (const HotspotLineEntry& e : decode_hotspot_line_table(table, excluded)) {
    if (e.bci == bci) return e.line;
    if (e.bci < bci && e.bci >= best_bci) {
      best_bci = e.bci;
      best_line = e.line;
    }
  }
  return best_line;
}

std::vector<HotspotPcDesc> parse_hotspot_pc_descs(std::span<const uint8_t> section, uint64_t stride,
                                                  uint64_t pc_offset_at, uint64_t scope_at) {
  std::vector<HotspotPcDesc> out;
  if (stride == 0 || pc_offset_at + 4 > stride || scope_at + 4 > stride) return out;
  for (uint64_t at = 0; at + stride <= section.size(); at += stride)
    out.push_back(
        {int_at<int32_t>(section, at + pc_offset_at), int_at<int32_t>(section, at + scope_at)});
  return out;
}

const HotspotPcDesc* find_hotspot_pc_desc(std::span<const HotspotPcDesc> descs, int32_t pc_offset,
                                          bool exact) {
  // PcDescs are in pc order (the first a sentinel at -1); a scan keeps a malformed order safe.
  const HotspotPcDesc* best = nullptr;
  for (const HotspotPcDesc& d : descs) {
    if (d.pc_offset == pc_offset) return &d;
    if (!exact && d.pc_offset > pc_offset && (!best || d.pc_offset < best->pc_offset)) best = &d;
  }
  return best;
}

Result<std::vector<HotspotScope>> decode_hotspot_scopes(std::span<const uint8_t> scopes,
                                                        std::span<const uint64_t> metadata,
                                                        int32_t decode_offset, uint8_t excluded) {
  std::vector<HotspotScope> chain;
  Unsigned5Reader r(scopes, excluded);
  int32_t at = decode_offset;
  while (at != 0) {                  // 0: serialized_null, no sender
    if (chain.size() >= kMaxScopes)  // also ends a chain that loops
      return fail("the scopes chain is deeper than {} (offset {})", kMaxScopes, at);
    if (at < 0 || !r.seek(static_cast<size_t>(at)))
      return fail("scope decode offset {} is outside the {} bytes of scopes data", at,
                  scopes.size());
    auto sender = r.read_uint();
    auto index = r.read_uint();
    auto bci = r.read_uint();
    if (!sender || !index || !bci) return fail("the scope at offset {} is truncated", at);
    if (*index == 0 || *index > metadata.size())
      return fail("the scope at offset {} names metadata {} of {}", at, *index, metadata.size());
    // The bci is stored + 1 so that InvocationEntryBci (-1) is 0; HotSpot's other special bcis
    // (-2 to -5) are below it, real ones below 65536.
    const int32_t b = static_cast<int32_t>(*bci - 1u);
    if (b < -5 || b > 65535) return fail("the scope at offset {} has bci {}", at, b);
    chain.push_back({metadata[*index - 1], b});
    at = static_cast<int32_t>(*sender);
  }
  return chain;
}

}  // namespace uscope
