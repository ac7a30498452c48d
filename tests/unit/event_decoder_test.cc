#include "collect/event_decoder.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace uscope {
namespace {

using Kind = OutputField::Kind;

TracePlan plan_with(std::vector<Kind> kinds) {
  TracePlan plan;
  ProbePlan probe;
  for (Kind k : kinds) probe.fields.push_back({k, {}});
  plan.probes.push_back(probe);
  return plan;
}

// Builds a record payload the way trace.bpf.c writes it.
struct Record {
  uscope_event header{};
  std::vector<uint8_t> data;
  std::vector<uint64_t> stack;

  Record() { header.tgid = static_cast<uint32_t>(getpid()); }
  Record& value(uint64_t v) { return put(&v, 8); }
  Record& str(std::string_view s, uint32_t flags = 0) {
    uint32_t word = flags | static_cast<uint32_t>(s.size());
    put(&word, 4);
    return put(s.data(), s.size());
  }
  Record& deferred(const void* addr, uint32_t len, uint32_t flags = 0) {
    uint32_t word = TRACE_STR_DEFERRED | flags | len;
    auto a = reinterpret_cast<uint64_t>(addr);
    put(&word, 4);
    return put(&a, 8);
  }
  Record& put(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    data.insert(data.end(), b, b + n);
    return *this;
  }
  std::vector<uint8_t> payload() {
    header.data_len = static_cast<uint32_t>(data.size());
    header.stack_len = static_cast<uint32_t>(stack.size() * 8);
    std::vector<uint8_t> out = data;
    auto* b = reinterpret_cast<const uint8_t*>(stack.data());
    out.insert(out.end(), b, b + stack.size() * 8);
    return out;
  }
};

// An aggregated row's key is the same wire format, zero-padded to TRACE_AGG_KEY_BYTES: decoded
// into the same DecodedEvent, a string cut short says so, and a key that does not match its
// probe (an overlong string length, an unknown slot) is refused.
TEST(event_decoder, decodes_an_aggregated_key_as_an_event) {
  auto plan = plan_with({Kind::String, Kind::Value});
  EventDecoder d(plan);
  Record r;
  r.str("/items/1", TRACE_STR_TRUNCATED).value(404);
  AggregateRow row;
  ASSERT_LE(r.data.size(), row.key.size());
  std::memcpy(row.key.data(), r.data.data(), r.data.size());
  DecodedEvent ev;
  ASSERT_TRUE(d.decode_key(row, ev));
  ASSERT_EQ(ev.n_values, 2u);
  EXPECT_EQ(ev.values[0].text, "/items/1");
  EXPECT_TRUE(ev.values[0].truncated);
  EXPECT_EQ(ev.values[1].number, 404u);
  EXPECT_EQ(ev.header.probe_id, 0u);
  AggregateRow bad = row;
  const uint32_t overlong = TRACE_AGG_KEY_BYTES;
  std::memcpy(bad.key.data(), &overlong, 4);
  EXPECT_FALSE(d.decode_key(bad, ev));
  AggregateRow other = row;
  other.slot = 1;  // no such probe
  EXPECT_FALSE(d.decode_key(other, ev));
  EXPECT_EQ(d.malformed(), 0u);  // the caller counts the row's calls
}

TEST(event_decoder, decodes_values_and_strings_in_field_order) {
  auto plan = plan_with({Kind::Value, Kind::String, Kind::Value});
  EventDecoder d(plan);
  Record r;
  r.value(42).str("hello").value(UINT64_MAX);
  auto p = r.payload();
  DecodedEvent ev;
  ASSERT_TRUE(d.decode(r.header, p, ev));
  ASSERT_EQ(ev.n_values, 3u);
  EXPECT_FALSE(ev.values[0].is_string);
  EXPECT_EQ(ev.values[0].number, 42u);
  EXPECT_TRUE(ev.values[1].is_string);
  EXPECT_EQ(ev.values[1].text, "hello");
  EXPECT_FALSE(ev.values[1].truncated);
  EXPECT_EQ(ev.values[2].number, UINT64_MAX);
  EXPECT_TRUE(ev.user_stack.empty());
  EXPECT_EQ(d.malformed(), 0u);
}

TEST(event_decoder, marks_a_string_the_kernel_cut) {
  auto plan = plan_with({Kind::String});
  EventDecoder d(plan);
  Record r;
  r.str("xy", TRACE_STR_TRUNCATED);
  auto p = r.payload();
  DecodedEvent ev;
  ASSERT_TRUE(d.decode(r.header, p, ev));
  EXPECT_EQ(ev.values[0].text, "xy");
  EXPECT_TRUE(ev.values[0].truncated);
  EXPECT_TRUE(ev.truncated());
  EXPECT_EQ(d.late_truncated(), 0u);  // the kernel counted it
}

TEST(event_decoder, reads_a_deferred_string_from_the_live_process) {
  auto plan = plan_with({Kind::String, Kind::String, Kind::String});
  EventDecoder d(plan);
  static const char text[] = "deferred string";
  Record r;
  r.deferred(text, 64);                                        // NUL-terminated, fits
  r.deferred(text, 8);                                         // NUL-terminated, longer than 8
  r.deferred(text, 5, TRACE_STR_EXACT | TRACE_STR_TRUNCATED);  // pointer + length, capped
  auto p = r.payload();
  DecodedEvent ev;
  ASSERT_TRUE(d.decode(r.header, p, ev));
  EXPECT_EQ(ev.values[0].text, "deferred string");
  EXPECT_TRUE(ev.values[0].late);
  EXPECT_FALSE(ev.values[0].truncated);
  EXPECT_EQ(ev.values[1].text, "deferred");
  EXPECT_TRUE(ev.values[1].truncated);
  EXPECT_EQ(ev.values[2].text, "defer");
  EXPECT_TRUE(ev.values[2].truncated);
  EXPECT_EQ(d.late_strings(), 3u);
  EXPECT_EQ(d.unreadable_strings(), 0u);
  EXPECT_EQ(d.late_truncated(), 1u);  // one event, cut found late; the exact one was the kernel's
}

TEST(event_decoder, reads_a_string_ending_just_before_an_unmapped_page) {
  long page = sysconf(_SC_PAGESIZE);
  auto* mem = static_cast<char*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mem, MAP_FAILED);
  ASSERT_EQ(munmap(mem + page, page), 0);
  char* s = mem + page - 4;
  std::memcpy(s, "abc", 4);
  auto plan = plan_with({Kind::String, Kind::String});
  EventDecoder d(plan);
  Record r;
  r.deferred(s, 100);
  r.deferred(mem + page, 100);  // unmapped
  auto p = r.payload();
  DecodedEvent ev;
  ASSERT_TRUE(d.decode(r.header, p, ev));
  EXPECT_EQ(ev.values[0].text, "abc");
  EXPECT_FALSE(ev.values[0].truncated);
  EXPECT_TRUE(ev.values[1].unreadable);
  EXPECT_EQ(ev.values[1].text, "");
  EXPECT_EQ(d.unreadable_strings(), 1u);
  munmap(mem, page);
}

TEST(event_decoder, copies_the_stack_and_inserts_the_caller_a_prologue_site_skips) {
  auto plan = plan_with({Kind::Value});
  EventDecoder d(plan);
  Record r;
  r.value(1);
  r.stack = {0x1000, 0x3000};
  r.header.return_address = 0x2000;
  auto p = r.payload();
  DecodedEvent ev;
  ASSERT_TRUE(d.decode(r.header, p, ev));
  EXPECT_EQ(ev.user_stack, (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));

  // Past the prologue the walk already has the caller: nothing inserted.
  r.stack = {0x1000, 0x2000, 0x3000};
  p = r.payload();
  ASSERT_TRUE(d.decode(r.header, p, ev));
  EXPECT_EQ(ev.user_stack, (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));
}

TEST(event_decoder, reuses_the_event_without_leftovers) {
  auto plan = plan_with({Kind::String});
  EventDecoder d(plan);
  DecodedEvent ev;
  Record a;
  a.str("a long first string", TRACE_STR_TRUNCATED);
  a.stack = {1, 2, 3};
  auto pa = a.payload();
  ASSERT_TRUE(d.decode(a.header, pa, ev));
  Record b;
  b.str("b");
  auto pb = b.payload();
  ASSERT_TRUE(d.decode(b.header, pb, ev));
  EXPECT_EQ(ev.values[0].text, "b");
  EXPECT_FALSE(ev.values[0].truncated);
  EXPECT_TRUE(ev.user_stack.empty());
}

TEST(event_decoder, refuses_short_and_malformed_records) {
  auto plan = plan_with({Kind::Value, Kind::String});
  EventDecoder d(plan);
  DecodedEvent ev;
  {  // payload ends inside the string
    Record r;
    r.value(7);
    uint32_t word = 10;
    r.put(&word, 4).put("abc", 3);
    auto p = r.payload();
    EXPECT_FALSE(d.decode(r.header, p, ev));
    EXPECT_EQ(ev.n_values, 1u);
    EXPECT_EQ(ev.values[0].number, 7u);
  }
  {  // a missing field
    Record r;
    r.value(7);
    auto p = r.payload();
    EXPECT_FALSE(d.decode(r.header, p, ev));
  }
  {  // bytes past the last field
    Record r;
    r.value(7).str("x").value(9);
    auto p = r.payload();
    EXPECT_FALSE(d.decode(r.header, p, ev));
  }
  {  // unknown bits in a length word
    Record r;
    r.value(7).str("x", 0x08000000u);
    auto p = r.payload();
    EXPECT_FALSE(d.decode(r.header, p, ev));
  }
  {  // unknown probe
    Record r;
    r.value(7).str("x");
    auto p = r.payload();
    r.header.probe_id = 5;
    EXPECT_FALSE(d.decode(r.header, p, ev));
  }
  {  // header lengths that disagree with the record
    Record r;
    r.value(7).str("x");
    auto p = r.payload();
    p.pop_back();
    EXPECT_FALSE(d.decode(r.header, p, ev));
  }
  {  // a stack that is not whole frames
    Record r;
    r.value(7).str("x");
    auto p = r.payload();
    p.push_back(0);
    r.header.stack_len = 1;
    EXPECT_FALSE(d.decode(r.header, p, ev));
  }
  EXPECT_EQ(d.malformed(), 7u);
}

}  // namespace
}  // namespace uscope
