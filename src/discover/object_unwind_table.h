#pragma once
// An object's unwind table as uscope gets it: from the disk cache when it holds one, else built
// (with the object's debug file when it has no .eh_frame, with .gopclntab when it is Go) and
// stored for the next run.
#include <chrono>
#include <memory>
#include <optional>

#include "discover/object_info.h"
#include "discover/object_store.h"
#include "discover/unwind_cache.h"
#include "discover/unwind_table.h"

namespace uscope {

struct ObjectUnwindTable {
  std::shared_ptr<const UnwindTable> table;
  bool from_cache = false;
  std::chrono::nanoseconds elapsed{0};  // loading it from the cache, or building it
  // Why the table could not be stored (read-only cache directory, ...): for `-v`; the table
  // itself is fine.
  std::optional<Error> cache_error;
};

// `cache` may be null (no disk cache). Fails only when the object's CFI cannot be read.
Result<ObjectUnwindTable> unwind_table_of(StoredObject& object, UnwindCache* cache);

// The table's facts for `list --info` (a malformed CFI is recorded, not failed).
UnwindFacts describe_unwind_table(StoredObject& object, UnwindCache* cache);

}  // namespace uscope
