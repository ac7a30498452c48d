#include "symbolize/normalize.h"

namespace uscope {

NormalizedAddress normalize(const Process& process, uint64_t address) {
  NormalizedAddress n;
  if (const MappedObject* o = process.object_containing(address)) {
    // object_containing() found a mapping holding the address, so this cannot miss; stay
    // defensive anyway rather than report offset 0 of the wrong place.
    if (auto offset = o->offset_of_address(address)) {
      n.object = o;
      n.name = o->path;
      for (const Mapping& m : o->mappings)
        if (address >= m.start && address < m.end) n.executable = m.executable();
      n.file_offset = *offset;
      return n;
    }
  }
  // Memory no file backs is still mapped: naming the region ([vdso], [heap], JIT code in
  // [anon]) tells the reader more than "[unmapped]" would.
  for (const Mapping& m : process.mappings()) {
    if (address >= m.start && address < m.end) {
      n.name = m.path.empty() ? "[anon]" : m.path;
      n.miss = FrameMiss::NoSymbols;
      n.executable = m.executable();
      n.file_offset = address - m.start;
      n.mapping_size = m.end - m.start;
      return n;
    }
  }
  n.miss = FrameMiss::Unmapped;
  return n;
}

}  // namespace uscope
