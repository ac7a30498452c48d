#pragma once
// An unwind table (discover/unwind_table.h) as the BPF walker reads it (bpf/unwind.h): one array
// of 8-byte entries (a header, a page entry per 2^UNWIND_PAGE_BITS bytes, the rows with rule
// indices), and a process's executable ranges as LPM-trie prefixes. Pure functions, so that
// the layout is tested without BPF.
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "bpf/unwind.h"
#include "discover/unwind_table.h"
#include "util/result.h"

namespace uscope {

struct EncodedUnwindTable {
  uint64_t base = 0;              // the link-time address row offsets count from
  std::vector<uint64_t> entries;  // entries[0] header, then pages, then rows
  size_t rows() const;
  size_t pages() const;
};

// The index of a rule in the shared rule array, or nullopt when that array is full.
using RuleIndexer = std::function<std::optional<uint32_t>(const UnwindRule&)>;

// Fails when the table spans 4 GiB or more (row offsets are 32-bit) or the rule array is full.
Result<EncodedUnwindTable> encode_unwind_table(const UnwindTable& table, const RuleIndexer& index);

// The rule at link-time address `vaddr` as the walker would find it (nullopt: no row), read back
// from the encoding: what the tests check the layout by.
std::optional<uint32_t> encoded_rule_at(const EncodedUnwindTable& table, uint64_t vaddr);

// [start, end) of process `tgid` as the fewest LPM-trie keys (prefix length, address).
std::vector<unwind_mapping_key> lpm_keys(uint32_t tgid, uint64_t start, uint64_t end);

}  // namespace uscope
