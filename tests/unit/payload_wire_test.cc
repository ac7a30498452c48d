// The one reader of bpf/trace.h's payload wire format behind both decoders.
#include "plan/payload_wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "bpf/trace.h"

namespace uscope {
namespace {

struct Bytes {
  std::vector<uint8_t> b;
  Bytes& put(const void* p, size_t n) {
    auto* c = static_cast<const uint8_t*>(p);
    b.insert(b.end(), c, c + n);
    return *this;
  }
  Bytes& u32(uint32_t v) { return put(&v, 4); }
  Bytes& u64(uint64_t v) { return put(&v, 8); }
  Bytes& text(std::string_view s) { return put(s.data(), s.size()); }
};

TEST(payload_wire, reads_a_value_a_string_and_a_deferred_string_in_order) {
  Bytes p;
  p.u64(42)
      .u32(5 | TRACE_STR_TRUNCATED)
      .text("hello")
      .u32(TRACE_STR_DEFERRED | TRACE_STR_EXACT | 16);
  p.u64(0x7ffd0000);
  PayloadReader r(p.b);
  uint64_t v = 0;
  WireString a, d;
  ASSERT_TRUE(r.value(v));
  ASSERT_TRUE(r.string(a));
  ASSERT_TRUE(r.string(d));
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(a.text, "hello");
  EXPECT_TRUE(a.truncated);
  EXPECT_FALSE(a.deferred);
  EXPECT_TRUE(d.deferred);
  EXPECT_TRUE(d.exact);
  EXPECT_EQ(d.length, 16u);
  EXPECT_EQ(d.address, 0x7ffd0000u);
}

TEST(payload_wire, says_which_rule_a_payload_broke) {
  Bytes shrt;
  shrt.u32(7);
  PayloadReader r1(shrt.b);
  uint64_t v = 0;
  EXPECT_FALSE(r1.value(v));
  EXPECT_STREQ(r1.error(), "a value needs 8 bytes, {} left");
  EXPECT_EQ(r1.error_number(), 4u);

  Bytes overlong;
  overlong.u32(10).text("abc");
  PayloadReader r2(overlong.b);
  WireString s;
  EXPECT_FALSE(r2.string(s));
  EXPECT_EQ(r2.error_number(), 10u);

  Bytes unknown;
  unknown.u32(0x4000);  // a bit past TRACE_STR_LEN_MASK, no flag
  PayloadReader r3(unknown.b);
  EXPECT_FALSE(r3.string(s));

  Bytes exact;
  exact.u32(TRACE_STR_EXACT | 1).text("x");
  PayloadReader r4(exact.b);
  EXPECT_FALSE(r4.string(s));
}

TEST(payload_wire, a_key_is_zero_padded_and_its_unreadable_string_has_no_address) {
  Bytes key;
  key.u32(TRACE_STR_DEFERRED).u64(7).u64(0);
  PayloadReader r(key.b, true);
  WireString s;
  uint64_t v = 0;
  ASSERT_TRUE(r.string(s));
  EXPECT_TRUE(s.deferred);
  EXPECT_EQ(s.address, 0u);
  ASSERT_TRUE(r.value(v));
  EXPECT_EQ(v, 7u);
  EXPECT_TRUE(r.at_end());  // the zeros after the last field
  Bytes padded_badly;
  padded_badly.u64(1).u64(2);
  PayloadReader k(padded_badly.b, true);
  ASSERT_TRUE(k.value(v));
  EXPECT_FALSE(k.at_end());
  PayloadReader event(padded_badly.b);
  ASSERT_TRUE(event.value(v));
  EXPECT_FALSE(event.at_end());
}

}  // namespace
}  // namespace uscope
