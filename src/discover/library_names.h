#pragma once
// Library short names as users type them ("c", "ssl", "libssl", "libssl.so.3") resolved to
// paths: against a process's mapped objects when a PID is given, else against /etc/ld.so.cache.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/process.h"
#include "util/result.h"

namespace uscope {

struct LdCacheEntry {
  std::string soname;  // "libssl.so.3"
  std::string path;    // "/lib/x86_64-linux-gnu/libssl.so.3"
  uint32_t flags = 0;  // FLAG_* from glibc's cache (x86-64 libs are 0x0303)
  uint64_t hwcap = 0;  // nonzero for glibc-hwcaps/ variants; resolve_library prefers 0
};

// Parses ld.so.cache bytes (glibc's "glibc-ld.so.cache1.1" format, also when it follows the old
// "ld.so-1.7.0" header). Hand-written: no packaged library reads this file, and spawning
// `ldconfig -p` per lookup is slow and unavailable inside some containers.
Result<std::vector<LdCacheEntry>> parse_ld_so_cache(std::span<const uint8_t> bytes);
Result<std::vector<LdCacheEntry>> read_ld_so_cache(const std::string& path = "/etc/ld.so.cache");

// Does `name` look like a short library name rather than a path? ("c", "libssl", "libssl.so.3")
bool is_library_short_name(std::string_view name);

// Does the file name of `path` (or a soname) match the short name? "c" matches "libc.so.6" and
// "libc-2.31.so" but not "libcap.so.2"; "ssl" and "libssl" match "libssl.so.3".
bool library_name_matches(std::string_view short_name, std::string_view path);

// Resolves a short name. With a process: among its mapped objects (open_path usable). Without:
// in the ld.so.cache entries for this machine's architecture. Error lists close candidates.
Result<std::string> resolve_library(std::string_view short_name,
                                    std::span<const LdCacheEntry> cache);
Result<const MappedObject*> resolve_library(std::string_view short_name, const Process& process);

// The files a program about to start (-c) maps at its start: the program, then the libraries its
// DT_NEEDED entries name, resolved through ld.so.cache (not their own DT_NEEDED: those a program
// links directly are the ones it calls by name).
std::vector<std::string> linked_files(const std::string& program);

// Every file ld.so maps to start `program`: the program, its interpreter (PT_INTERP), then the
// libraries of DT_NEEDED with their own DT_NEEDED, breadth first, each once, resolved through
// ld.so.cache. What a command's process will hold right after its start.
std::vector<std::string> startup_files(const std::string& program);

}  // namespace uscope
