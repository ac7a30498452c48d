#include "discover/object_unwind_table.h"

#include <set>

namespace uscope {

Result<ObjectUnwindTable> unwind_table_of(StoredObject& object, UnwindCache* cache) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  ObjectUnwindTable out;
  if (cache != nullptr) {
    if (auto t = cache->load(object.key())) {
      out.table = std::make_shared<const UnwindTable>(std::move(*t));
      out.from_cache = true;
      out.elapsed = Clock::now() - start;
      return out;
    }
  }
  UnwindBuildOptions options;
  options.go = object.go_pclntab();
  // Only an object without .eh_frame needs its debug file (whose lookup costs a libdwfl module).
  if (!options.go && !object.elf().section(".eh_frame")) {
    if (DebugInfo* d = object.debug_info()) options.debug_file = d->debug_file().value_or("");
  }
  auto t = build_unwind_table(object.elf(), options);
  if (!t) return tl::unexpected(t.error());
  out.elapsed = Clock::now() - start;
  if (cache != nullptr) {
    if (auto stored = cache->store(object.key(), *t); !stored) out.cache_error = stored.error();
  }
  out.table = std::make_shared<const UnwindTable>(std::move(*t));
  return out;
}

UnwindFacts describe_unwind_table(StoredObject& object, UnwindCache* cache) {
  UnwindFacts f;
  auto got = unwind_table_of(object, cache);
  if (!got) {
    f.error = got.error().message;
    return f;
  }
  const UnwindTable& t = *got->table;
  f.source = t.source;
  f.rows = t.rows.size();
  std::set<UnwindRule> rules;
  for (const UnwindRow& r : t.rows) rules.insert(r.rule);
  f.rules = rules.size();
  f.fdes = t.fdes;
  f.unsupported = t.unsupported;
  f.signal_frames = t.signal_frames;
  f.from_cache = got->from_cache;
  f.milliseconds = std::chrono::duration<double, std::milli>(got->elapsed).count();
  if (cache && !got->cache_error) f.cache_file = cache->path_of(object.key());
  return f;
}

}  // namespace uscope
