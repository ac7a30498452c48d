// Feeds arbitrary bytes as an object file to the DWARF reader (libdw parses; uscope walks what it
// returns): functions by address and name, their parameters and SysV locations, named types and
// their members, followed through pointers and arrays as the name resolver follows them.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "discover/dwarf_types.h"

namespace {

// Follows a type the way `a->b.c` does, a few levels deep, touching every member.
void walk(uscope::DwarfTypes& types, const uscope::DwarfType& t, int depth) {
  volatile size_t sink = t.name.size() + t.size + t.count;
  if (depth > 4) return;
  if (t.target)
    if (auto next = types.type(*t.target)) walk(types, *next, depth + 1);
  if (t.kind != uscope::DwarfType::Kind::Struct && t.kind != uscope::DwarfType::Kind::Union) return;
  if (auto ms = types.members(t.ref))
    for (const auto& m : *ms) {
      sink = sink + m.offset + m.bit_size;
      if (auto found = types.member(t.ref, m.name)) sink = sink + (*found ? 1 : 0);
      walk(types, m.type, depth + 1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("dwarf_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (auto types = uscope::DwarfTypes::open_file(path)) {
    auto& t = **types;
    for (const char* name : {"main", "handle", "f"}) {
      if (auto fn = t.function_named(name); fn && *fn) {
        for (const auto& p : (*fn)->params) walk(t, p.type, 0);
        (void)t.function_at((*fn)->low_pc);
      }
    }
    for (const char* name : {"struct request", "struct s", "int", "T"})
      if (auto found = t.find_type(name); found && *found) walk(t, **found, 0);
  }
  close(fd);
  return 0;
}
