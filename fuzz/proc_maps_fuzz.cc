// /proc/PID/maps text is parsed from processes uscope does not trust (a process can map files
// with any name), so the parser and the object grouping must survive any bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "discover/process.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto maps = uscope::parse_proc_maps(text);
  if (!maps) return 0;
  // A proc root that does not exist keeps the fuzzer off the real /proc.
  auto p = uscope::Process::from_maps(1, text, "/nonexistent-uscope-fuzz-proc");
  if (!p) __builtin_trap();  // parse succeeded, so building the model must too
  for (const auto& m : p->mappings()) {
    (void)p->object_containing(m.start);
    (void)p->object_containing(m.end);
  }
  for (const auto& o : p->objects()) {
    for (const auto& m : o.mappings) {
      auto off = o.offset_of_address(m.start);
      if (off) (void)o.address_of_offset(*off);
      (void)o.address_of_offset(m.offset);
      (void)o.address_of_offset(m.offset + (m.end - m.start));
      (void)o.offset_of_address(m.end - 1);
    }
  }
  (void)p->main_object();
  return 0;
}
