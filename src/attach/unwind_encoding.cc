#include "attach/unwind_encoding.h"

#include <arpa/inet.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace uscope {

namespace {

constexpr uint64_t kPage = uint64_t{1} << UNWIND_PAGE_BITS;

template <class T>
uint64_t entry_of(const T& value) {
  static_assert(sizeof(T) == sizeof(uint64_t));
  uint64_t e;
  std::memcpy(&e, &value, sizeof e);
  return e;
}

template <class T>
T value_of(uint64_t entry) {
  T v;
  std::memcpy(&v, &entry, sizeof v);
  return v;
}

}  // namespace

size_t EncodedUnwindTable::rows() const {
  return entries.empty() ? 0 : value_of<unwind_table_header>(entries[0]).rows;
}

size_t EncodedUnwindTable::pages() const {
  return entries.empty() ? 0 : value_of<unwind_table_header>(entries[0]).pages;
}

Result<EncodedUnwindTable> encode_unwind_table(const UnwindTable& table, const RuleIndexer& index) {
  EncodedUnwindTable out;
  if (table.rows.empty()) return out;
  out.base = table.rows.front().vaddr & ~(kPage - 1);
  uint64_t span = table.rows.back().vaddr - out.base;
  if (span >= (uint64_t{1} << 32))
    return fail("its code spans {} bytes: unwind tables cover objects under 4 GiB", span);
  uint64_t pages = (span + kPage - 1) / kPage;
  // A row at the base holds below the first real one: nothing is known there.
  std::vector<unwind_row> rows;
  rows.reserve(table.rows.size() + 1);
  if (table.rows.front().vaddr != out.base) {
    auto none = index(UnwindRule{});
    if (!none) return fail("the unwinder's rule array is full ({} rules)", UNWIND_MAX_RULES);
    rows.push_back({0, *none});
  }
  for (const UnwindRow& r : table.rows) {
    auto i = index(r.rule);
    if (!i) return fail("the unwinder's rule array is full ({} rules)", UNWIND_MAX_RULES);
    rows.push_back({static_cast<uint32_t>(r.vaddr - out.base), *i});
  }
  uint64_t first_row = 1 + pages;
  out.entries.reserve(first_row + rows.size());
  out.entries.push_back(entry_of(
      unwind_table_header{static_cast<uint32_t>(pages), static_cast<uint32_t>(rows.size())}));
  // Page p searches from the last row at or before its start to the last row before its end.
  size_t r = 0;
  for (uint64_t p = 0; p < pages; ++p) {
    uint64_t start = p * kPage, end = start + kPage;
    while (r + 1 < rows.size() && rows[r + 1].pc <= start) ++r;
    size_t last = r;
    while (last + 1 < rows.size() && rows[last + 1].pc < end) ++last;
    out.entries.push_back(entry_of(
        unwind_page{static_cast<uint32_t>(first_row + r), static_cast<uint32_t>(last - r + 1)}));
  }
  for (const unwind_row& row : rows) out.entries.push_back(entry_of(row));
  return out;
}

std::optional<uint32_t> encoded_rule_at(const EncodedUnwindTable& table, uint64_t vaddr) {
  if (table.entries.empty() || vaddr < table.base) return std::nullopt;
  auto header = value_of<unwind_table_header>(table.entries[0]);
  uint64_t offset = vaddr - table.base, page = offset >> UNWIND_PAGE_BITS;
  if (page >= header.pages) return std::nullopt;
  auto p = value_of<unwind_page>(table.entries[1 + page]);
  // The walker's search (unwind.bpf.h), step for step.
  uint32_t lo = p.first, n = p.count;
  for (int step = 0; step < UNWIND_MAX_SEARCH && n > 1; ++step) {
    uint32_t half = n / 2, mid = lo + half;
    if (value_of<unwind_row>(table.entries.at(mid)).pc <= offset) {
      lo = mid;
      n -= half;
    } else {
      n = half;
    }
  }
  if (n > 1) return std::nullopt;  // the walker would have stopped short: a layout bug
  return value_of<unwind_row>(table.entries.at(lo)).rule;
}

std::vector<unwind_mapping_key> lpm_keys(uint32_t tgid, uint64_t start, uint64_t end) {
  std::vector<unwind_mapping_key> keys;
  while (start < end) {
    // The largest aligned power-of-two block at `start` that fits.
    int bits = start == 0 ? 64 : std::countr_zero(start);
    while (bits > 0 && (bits >= 64 || (uint64_t{1} << bits) > end - start)) --bits;
    unwind_mapping_key k{};
    k.prefixlen = 32 + (64 - bits);
    k.tgid = htonl(tgid);
    k.address = __builtin_bswap64(start);
    keys.push_back(k);
    start += uint64_t{1} << bits;
  }
  return keys;
}

}  // namespace uscope
