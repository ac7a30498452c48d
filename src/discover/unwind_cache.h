#pragma once
// Unwind tables kept on disk, so that a second run on the same binaries does not read their CFI
// again: one file per object key (build-id, or file identity for objects without one) in a cache
// directory bounded in size (the least recently used files go first, by mtime, which a load
// refreshes). A file is written to a temporary name and renamed, so readers never see half of
// one; and whatever a file holds is checked before use (a versioned header, counts against the
// file size, a checksum, sorted rows, kinds in range): a corrupt, truncated or foreign file is
// ignored and rebuilt, never trusted.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "discover/unwind_table.h"
#include "util/result.h"

namespace uscope {

// The file format (little-endian): a header {magic "USCUNWTB", u32 version, u32 rules, u32 rows,
// u32 key length, u32 source length, u32 0, u64 fdes, u64 unsupported, u64 signal frames, u64
// FNV-1a of every other byte of the file}, the key, the source, the distinct rules (12 bytes each,
// bpf/unwind.h's unwind_rule) and the rows ({u64 vaddr, u32 rule index}). kUnwindCacheVersion
// changes whenever the format or the builder's output does, which retires every older file.
constexpr uint32_t kUnwindCacheVersion = 1;

std::vector<uint8_t> serialize_unwind_table(const UnwindTable& table, const std::string& key = {});
// Fails, saying what was wrong, on anything but a file serialize_unwind_table wrote; with
// `key` given, also on a file written for another key.
Result<UnwindTable> parse_unwind_table(std::span<const uint8_t> bytes, const std::string& key = {});

class UnwindCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = 256ull << 20;

  // $USCOPE_CACHE_DIR, else /var/cache/uscope/unwind for root, else
  // ${XDG_CACHE_HOME:-~/.cache}/uscope/unwind; 256 MiB.
  static UnwindCache open_default();
  static std::string default_dir();

  // The directory is created on the first store.
  UnwindCache(std::string dir, uint64_t max_bytes = kDefaultMaxBytes);

  const std::string& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }

  // The table stored under `key`, if there is one and it reads back whole (a bad file is ignored:
  // the store after the rebuild replaces it).
  std::optional<UnwindTable> load(const std::string& key);
  // Writes the table, then evicts the least recently used files beyond the size limit. A failure
  // (read-only or full directory) is for the caller to report; the table is still good to use.
  Result<void> store(const std::string& key, const UnwindTable& table);

  // The file that holds `key`'s table.
  std::string path_of(const std::string& key) const;

 private:
  void evict();

  std::string dir_;
  uint64_t max_bytes_;
};

}  // namespace uscope
