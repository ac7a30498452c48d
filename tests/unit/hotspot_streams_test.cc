// HotSpot's compressed streams, from byte images written as the JVM writes them.
#include "symbolize/hotspot_streams.h"

#include <gtest/gtest.h>

#include "hotspot_fake_image.h"

namespace uscope {
namespace {

using test::put_signed5;
using test::put_unsigned5;

TEST(hotspot_streams, unsigned5_reads_what_hotspot_writes_in_both_flavours) {
  const uint32_t values[] = {0,    1,     191,      192,        193,       255,
                             1000, 12345, 1u << 20, 0x7fffffff, 0xffffffff};
  for (uint8_t x : {0, 1}) {
    std::vector<uint8_t> b;
    for (uint32_t v : values) put_unsigned5(b, v, x);
    Unsigned5Reader r(b, x);
    for (uint32_t v : values) EXPECT_EQ(r.read_uint(), v) << "excluded " << int(x);
    EXPECT_EQ(r.position(), b.size());
    EXPECT_FALSE(r.read_uint());
  }
  // One byte below 192 is a whole int; 192 and above continue it (at most 5 bytes).
  std::vector<uint8_t> one = {191};
  EXPECT_EQ(Unsigned5Reader(one, 0).read_uint(), 191u);
  std::vector<uint8_t> two = {192, 1};
  EXPECT_EQ(Unsigned5Reader(two, 0).read_uint(), 192u + 64u);
}

TEST(hotspot_streams, unsigned5_fails_on_truncated_and_excluded_bytes) {
  std::vector<uint8_t> cut = {200, 250};  // continues past the end
  EXPECT_FALSE(Unsigned5Reader(cut, 0).read_uint());
  std::vector<uint8_t> zero = {0};  // excluded when the zero byte is
  EXPECT_FALSE(Unsigned5Reader(zero, 1).read_uint());
  EXPECT_EQ(Unsigned5Reader(zero, 0).read_uint(), 0u);
}

TEST(hotspot_streams, signed_ints_are_zigzag) {
  std::vector<uint8_t> b;
  for (int32_t v : {0, -1, 1, -64, 5000, -5000, INT32_MIN, INT32_MAX}) put_signed5(b, v);
  Unsigned5Reader r(b, 0);
  for (int32_t v : {0, -1, 1, -64, 5000, -5000, INT32_MIN, INT32_MAX})
    EXPECT_EQ(r.read_signed(), v);
}

// (bci 0, line 10) by escape, (5, 11) and (12, 13) in one byte each, the terminator.
std::vector<uint8_t> line_table() {
  std::vector<uint8_t> t = {0xff};
  put_signed5(t, 0);
  put_signed5(t, 10);
  t.push_back((5 << 3) | 1);
  t.push_back((7 << 3) | 2);
  t.push_back(0);
  return t;
}

TEST(hotspot_streams, line_table_decodes_short_and_escaped_pairs) {
  auto e = decode_hotspot_line_table(line_table(), 0);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].bci, 0);
  EXPECT_EQ(e[0].line, 10);
  EXPECT_EQ(e[1].bci, 5);
  EXPECT_EQ(e[1].line, 11);
  EXPECT_EQ(e[2].bci, 12);
  EXPECT_EQ(e[2].line, 13);
  // A negative delta by escape: back to bci 2, line 9.
  std::vector<uint8_t> back = line_table();
  back.pop_back();
  back.push_back(0xff);
  put_signed5(back, -10);
  put_signed5(back, -4);
  back.push_back(0);
  auto b = decode_hotspot_line_table(back, 0);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[3].bci, 2);
  EXPECT_EQ(b[3].line, 9);
}

TEST(hotspot_streams, line_of_a_bci_is_the_pair_at_or_the_nearest_before_it) {
  auto t = line_table();
  EXPECT_EQ(hotspot_line_of(t, 0, 0), 10);
  EXPECT_EQ(hotspot_line_of(t, 0, 4), 10);
  EXPECT_EQ(hotspot_line_of(t, 0, 5), 11);
  EXPECT_EQ(hotspot_line_of(t, 0, 11), 11);
  EXPECT_EQ(hotspot_line_of(t, 0, 12), 13);
  EXPECT_EQ(hotspot_line_of(t, 0, 1000), 13);
  // No pair at or before the bci, or no table: no line.
  std::vector<uint8_t> late = {(4 << 3) | 3, 0};
  EXPECT_EQ(hotspot_line_of(late, 0, 2), -1);
  EXPECT_EQ(hotspot_line_of({}, 0, 0), -1);
}

TEST(hotspot_streams, truncated_line_table_ends_where_it_stops) {
  auto t = line_table();
  t.resize(3);  // the escape's two ints, no short pairs, no terminator
  auto e = decode_hotspot_line_table(t, 0);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].line, 10);
  std::vector<uint8_t> cut_escape = {0xff, 200};
  EXPECT_TRUE(decode_hotspot_line_table(cut_escape, 0).empty());
}

TEST(hotspot_streams, pc_descs_are_found_exactly_for_returns_and_at_or_after_for_a_pc) {
  std::vector<uint8_t> section(16 * 4, 0);
  const int32_t pcs[][2] = {{-1, 0}, {0x10, 7}, {0x20, 9}, {0x30, 0}};
  for (int i = 0; i < 4; ++i) {
    std::memcpy(section.data() + 16 * i, &pcs[i][0], 4);
    std::memcpy(section.data() + 16 * i + 4, &pcs[i][1], 4);
  }
  auto descs = parse_hotspot_pc_descs(section, 16, 0, 4);
  ASSERT_EQ(descs.size(), 4u);
  EXPECT_EQ(descs[1].scope_decode_offset, 7);
  EXPECT_EQ(find_hotspot_pc_desc(descs, 0x20, true)->scope_decode_offset, 9);
  EXPECT_EQ(find_hotspot_pc_desc(descs, 0x18, true), nullptr);
  EXPECT_EQ(find_hotspot_pc_desc(descs, 0x18, false)->pc_offset, 0x20);
  EXPECT_EQ(find_hotspot_pc_desc(descs, 0x10, false)->pc_offset, 0x10);
  EXPECT_EQ(find_hotspot_pc_desc(descs, 0x31, false), nullptr);
  // A stride the fields do not fit in gives nothing; a partial last entry is left out.
  EXPECT_TRUE(parse_hotspot_pc_descs(section, 4, 0, 4).empty());
  EXPECT_EQ(parse_hotspot_pc_descs(std::span(section).first(40), 16, 0, 4).size(), 2u);
}

// Scopes data as the recorder writes it: a dummy byte at offset 0, then each scope's sender
// offset, method index (from 1), bci + 1 and three more offsets.
struct Scopes {
  std::vector<uint8_t> data = {0xff};
  uint32_t add(uint32_t sender, uint32_t method_index, int bci) {
    uint32_t at = static_cast<uint32_t>(data.size());
    put_unsigned5(data, sender);
    put_unsigned5(data, method_index);
    put_unsigned5(data, static_cast<uint32_t>(bci + 1));
    for (int i = 0; i < 3; ++i) put_unsigned5(data, 300);  // two-byte ints: locals, ...
    return at;
  }
};

TEST(hotspot_streams, scopes_decode_the_inlined_chain_innermost_first) {
  Scopes s;
  const std::vector<uint64_t> metadata = {0x1000, 0x2000, 0x3000};
  uint32_t outer = s.add(0, 1, 300);  // a bci of two bytes
  uint32_t middle = s.add(outer, 3, 7);
  uint32_t inner = s.add(middle, 2, -1);  // InvocationEntryBci
  auto chain = decode_hotspot_scopes(s.data, metadata, static_cast<int32_t>(inner), 0);
  ASSERT_TRUE(chain) << chain.error().message;
  ASSERT_EQ(chain->size(), 3u);
  EXPECT_EQ((*chain)[0].method, 0x2000u);
  EXPECT_EQ((*chain)[0].bci, -1);
  EXPECT_EQ((*chain)[1].method, 0x3000u);
  EXPECT_EQ((*chain)[1].bci, 7);
  EXPECT_EQ((*chain)[2].method, 0x1000u);
  EXPECT_EQ((*chain)[2].bci, 300);
  auto none = decode_hotspot_scopes(s.data, metadata, 0, 0);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(hotspot_streams, scopes_that_make_no_sense_fail_naming_the_offset) {
  Scopes s;
  const std::vector<uint64_t> metadata = {0x1000};
  uint32_t bad_index = s.add(0, 2, 0);
  auto e = decode_hotspot_scopes(s.data, metadata, static_cast<int32_t>(bad_index), 0);
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message.find("metadata 2 of 1"), std::string::npos) << e.error().message;
  EXPECT_FALSE(decode_hotspot_scopes(s.data, metadata, 5000, 0));
  EXPECT_FALSE(decode_hotspot_scopes(s.data, metadata, -3, 0));
  // A scope that is its own sender ends at the depth bound, not in a loop.
  Scopes loop;
  uint32_t self = static_cast<uint32_t>(loop.data.size());
  loop.add(self, 1, 0);
  auto l = decode_hotspot_scopes(loop.data, metadata, static_cast<int32_t>(self), 0);
  ASSERT_FALSE(l);
  EXPECT_NE(l.error().message.find("deeper than"), std::string::npos) << l.error().message;
  // Cut in the middle of a scope.
  Scopes cut;
  uint32_t c = cut.add(0, 1, 0);
  cut.data.resize(c + 1);
  EXPECT_FALSE(decode_hotspot_scopes(cut.data, metadata, static_cast<int32_t>(c), 0));
}

}  // namespace
}  // namespace uscope
