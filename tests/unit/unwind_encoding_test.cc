// The unwind table as the BPF walker reads it (attach/unwind_encoding.h): every address finds the
// rule the table gives it through the page index and the bounded search, and a process's ranges
// become LPM keys that cover them exactly.
#include "attach/unwind_encoding.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

namespace uscope {
namespace {

UnwindRule rsp(int32_t offset) {
  UnwindRule r;
  r.cfa = UNWIND_CFA_RSP;
  r.cfa_offset = offset;
  return r;
}

// Rule indices handed out in order of first use, as UnwindMaps does.
struct Indexer {
  std::map<UnwindRule, uint32_t> rules;
  size_t limit = 1000;
  RuleIndexer fn() {
    return [this](const UnwindRule& r) -> std::optional<uint32_t> {
      if (auto it = rules.find(r); it != rules.end()) return it->second;
      if (rules.size() >= limit) return std::nullopt;
      auto i = static_cast<uint32_t>(rules.size());
      rules.emplace(r, i);
      return i;
    };
  }
};

// The rule the table gives `vaddr` (the last row at or before it), nullopt past the last row.
std::optional<UnwindRule> expected_at(const UnwindTable& t, uint64_t vaddr) {
  std::optional<UnwindRule> out;
  for (const UnwindRow& r : t.rows)
    if (r.vaddr <= vaddr) out = r.rule;
  if (t.rows.empty() || vaddr >= t.rows.back().vaddr) return std::nullopt;
  return out;
}

void expect_every_address(const UnwindTable& t, const EncodedUnwindTable& e, Indexer& ix) {
  uint64_t lo = t.rows.front().vaddr - 300, hi = t.rows.back().vaddr + 300;
  for (uint64_t a = lo; a < hi; ++a) {
    auto want = expected_at(t, a);
    auto got = encoded_rule_at(e, a);
    if (!want) {
      // Below the first row the walker finds the filler (no CFI) or nothing; past the end nothing.
      if (got) {
        EXPECT_EQ(ix.rules.at(UnwindRule{}), *got) << std::hex << a;
      }
      continue;
    }
    ASSERT_TRUE(got) << std::hex << a;
    EXPECT_EQ(ix.rules.at(*want), *got) << std::hex << a;
  }
}

TEST(UnwindEncoding, EveryAddressFindsItsRow) {
  UnwindTable t;
  t.rows = {{0x1010, rsp(8)},  {0x1011, rsp(16)}, {0x1040, rsp(8)},
            {0x1200, rsp(24)}, {0x1201, rsp(32)}, {0x1500, UnwindRule{}}};
  Indexer ix;
  auto e = encode_unwind_table(t, ix.fn());
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(0x1000u, e->base);
  EXPECT_EQ(t.rows.size() + 1, e->rows());  // a filler row at the base
  expect_every_address(t, *e, ix);
}

TEST(UnwindEncoding, DenseAndSparseRandomTables) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 20; ++round) {
    UnwindTable t;
    uint64_t a = 0x400000 + (rng() % 4096);
    int n = 1 + static_cast<int>(rng() % 600);
    for (int i = 0; i < n; ++i) {
      t.rows.push_back({a, rsp(8 * static_cast<int32_t>(1 + rng() % 6))});
      // Mostly one-byte steps (a page full of rows), sometimes gaps over several pages.
      a += rng() % 8 == 0 ? 1 + rng() % 2000 : 1;
    }
    t.rows.push_back({a, UnwindRule{}});
    Indexer ix;
    auto e = encode_unwind_table(t, ix.fn());
    ASSERT_TRUE(e) << e.error().message;
    expect_every_address(t, *e, ix);
  }
}

TEST(UnwindEncoding, RefusesWhatTheLayoutCannotHold) {
  UnwindTable huge;
  huge.rows = {{0x1000, rsp(8)}, {0x1000 + (uint64_t{1} << 32), UnwindRule{}}};
  Indexer ix;
  auto e = encode_unwind_table(huge, ix.fn());
  ASSERT_FALSE(e);
  EXPECT_NE(std::string::npos, e.error().message.find("4 GiB"));

  UnwindTable many;
  for (int i = 0; i < 10; ++i) many.rows.push_back({0x1000u + i, rsp(8 * (i + 1))});
  Indexer small;
  small.limit = 4;
  auto f = encode_unwind_table(many, small.fn());
  ASSERT_FALSE(f);
  EXPECT_NE(std::string::npos, f.error().message.find("rule array is full"));
}

TEST(UnwindEncoding, EmptyTableEncodesToNothing) {
  Indexer ix;
  auto e = encode_unwind_table(UnwindTable{}, ix.fn());
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->entries.empty());
  EXPECT_FALSE(encoded_rule_at(*e, 0x1000));
}

// The keys' blocks, in order, tile [start, end) with aligned powers of two.
void expect_tiles(uint32_t tgid, uint64_t start, uint64_t end) {
  auto keys = lpm_keys(tgid, start, end);
  uint64_t at = start;
  for (const auto& k : keys) {
    EXPECT_EQ(htonl(tgid), k.tgid);
    int bits = 64 - static_cast<int>(k.prefixlen - 32);
    uint64_t block = __builtin_bswap64(k.address);
    EXPECT_EQ(at, block) << std::hex << start << "-" << end;
    uint64_t size = uint64_t{1} << bits;
    EXPECT_EQ(0u, block & (size - 1));
    at = block + size;
  }
  EXPECT_EQ(end, at);
  EXPECT_LE(keys.size(), 2u * 64);
}

TEST(UnwindEncoding, LpmKeysTileTheRange) {
  expect_tiles(42, 0x559946fd8000, 0x559946fd9000);         // one page
  expect_tiles(42, 0x7fb7f5bbf000, 0x7fb7f5d15000);         // libc's text
  expect_tiles(7, 0x1000, 0x7ffffffff000);                  // almost everything
  expect_tiles(7, 0xffffffffff600000, 0xffffffffff601000);  // up to the top
  EXPECT_EQ(1u, lpm_keys(1, 0x10000, 0x20000).size());
}

}  // namespace
}  // namespace uscope
