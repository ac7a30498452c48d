// ld.so.cache comes from disk (and from containers' filesystems), so any bytes must parse to
// entries or an error, and resolving names over what parsed must not crash either.
#include <cstddef>
#include <cstdint>
#include <span>

#include "discover/library_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto entries = uscope::parse_ld_so_cache(std::span<const uint8_t>(data, size));
  if (!entries) return 0;
  for (const auto& e : *entries) (void)uscope::library_name_matches("c", e.soname);
  (void)uscope::resolve_library("c", *entries);
  (void)uscope::resolve_library("ssl", *entries);
  if (!entries->empty()) (void)uscope::resolve_library(entries->front().soname, *entries);
  return 0;
}
