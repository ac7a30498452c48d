// NT_STAPSDT descriptors: the layout sys/sdt.h writes for 64- and 32-bit targets, and every way a
// truncated or corrupt one is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "discover/usdt.h"

namespace uscope {
namespace {

// A descriptor as the assembler lays it out: three little-endian addresses, three C strings.
std::vector<uint8_t> descriptor(uint64_t pc, uint64_t base, uint64_t sem,
                                const std::string& provider, const std::string& name,
                                const std::string& args, bool is_64bit) {
  std::vector<uint8_t> d;
  for (uint64_t v : {pc, base, sem}) {
    for (size_t i = 0; i < (is_64bit ? 8u : 4u); ++i)
      d.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  for (const std::string* s : {&provider, &name, &args}) {
    d.insert(d.end(), s->begin(), s->end());
    d.push_back(0);
  }
  return d;
}

TEST(usdt_note, parses_64bit_record) {
  // python3.11's function__entry note, as readelf -n shows it.
  const auto d = descriptor(0x4c779b, 0x8c99c0, 0xa7ed40, "python", "function__entry",
                            "8@%rbp 8@%r12 -4@%eax", true);
  auto r = parse_stapsdt_note(d, true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->pc, 0x4c779bu);
  EXPECT_EQ(r->base, 0x8c99c0u);
  EXPECT_EQ(r->semaphore, 0xa7ed40u);
  EXPECT_EQ(r->provider, "python");
  EXPECT_EQ(r->name, "function__entry");
  EXPECT_EQ(r->args, "8@%rbp 8@%r12 -4@%eax");
}

TEST(usdt_note, parses_full_width_addresses) {
  const auto d = descriptor(0xffffffff80001234, 0x8000000000000000, 0, "p", "n", "", true);
  auto r = parse_stapsdt_note(d, true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->pc, 0xffffffff80001234u);
  EXPECT_EQ(r->base, 0x8000000000000000u);
  EXPECT_EQ(r->semaphore, 0u);
}

TEST(usdt_note, parses_32bit_record) {
  const auto d = descriptor(0x8048123, 0x8049000, 0x804a010, "prov", "probe", "4@%eax", false);
  ASSERT_EQ(d.size(), 12u + 5 + 6 + 7);
  auto r = parse_stapsdt_note(d, false);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->pc, 0x8048123u);
  EXPECT_EQ(r->base, 0x8049000u);
  EXPECT_EQ(r->semaphore, 0x804a010u);
  EXPECT_EQ(r->provider, "prov");
  EXPECT_EQ(r->name, "probe");
  EXPECT_EQ(r->args, "4@%eax");
}

TEST(usdt_note, parses_probe_without_arguments) {
  const auto d = descriptor(1, 2, 0, "usdt_demo", "start", "", true);
  auto r = parse_stapsdt_note(d, true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "start");
  EXPECT_TRUE(r->args.empty());
}

TEST(usdt_note, ignores_padding_after_arguments) {
  auto d = descriptor(1, 2, 0, "p", "n", "8@%rax", true);
  d.insert(d.end(), {0, 0, 0});
  auto r = parse_stapsdt_note(d, true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->args, "8@%rax");
}

TEST(usdt_note, rejects_short_descriptor) {
  for (bool is_64bit : {true, false}) {
    const size_t addr = is_64bit ? 8 : 4;
    for (size_t size = 0; size < 3 * addr + 3; ++size) {
      std::vector<uint8_t> d(size, 'a');
      auto r = parse_stapsdt_note(d, is_64bit);
      ASSERT_FALSE(r) << size;
      EXPECT_NE(r.error().message.find("descriptor is " + std::to_string(size) + " bytes"),
                std::string::npos)
          << r.error().message;
    }
  }
}

TEST(usdt_note, rejects_every_truncation_of_a_valid_record) {
  for (bool is_64bit : {true, false}) {
    const auto d =
        descriptor(0x401000, 0x402000, 0x404030, "usdt_demo", "guarded", "4@%edi 8@%rsi", is_64bit);
    ASSERT_TRUE(parse_stapsdt_note(d, is_64bit));
    for (size_t size = 0; size < d.size(); ++size) {
      // A copy of exactly `size` bytes, so a read past the end is a heap overflow under ASan.
      const std::vector<uint8_t> cut(d.begin(), d.begin() + static_cast<ptrdiff_t>(size));
      EXPECT_FALSE(parse_stapsdt_note(cut, is_64bit)) << "accepted " << size << " bytes";
    }
  }
}

TEST(usdt_note, rejects_unterminated_strings) {
  auto d = descriptor(1, 2, 0, "p", "n", "8@%rax", true);
  d.pop_back();  // the NUL ending the arguments
  auto r = parse_stapsdt_note(d, true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("argument string is not NUL-terminated"), std::string::npos)
      << r.error().message;

  std::vector<uint8_t> no_nul(24, 0);
  no_nul.insert(no_nul.end(), {'p', 'r', 'o', 'v'});
  r = parse_stapsdt_note(no_nul, true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("provider is not NUL-terminated"), std::string::npos)
      << r.error().message;

  std::vector<uint8_t> name_cut(24, 0);
  name_cut.insert(name_cut.end(), {'p', 0, 'n', 'a'});
  r = parse_stapsdt_note(name_cut, true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("probe name is not NUL-terminated"), std::string::npos)
      << r.error().message;
}

TEST(usdt_note, rejects_empty_provider_or_name) {
  auto r = parse_stapsdt_note(descriptor(1, 2, 0, "", "n", "", true), true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("empty provider"), std::string::npos);
  r = parse_stapsdt_note(descriptor(1, 2, 0, "p", "", "", true), true);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("empty probe name"), std::string::npos);
}

}  // namespace
}  // namespace uscope
