// Go type descriptors come from whatever binary is traced: GoTypes must survive any ELF bytes
// (a .gopclntab and a moduledata pointing anywhere, cyclic or truncated descriptors).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "discover/elf_file.h"
#include "discover/go_types.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto elf = uscope::ElfFile::from_memory(std::vector<uint8_t>(data, data + size), "fuzz");
  if (!elf) return 0;
  uscope::GoBuildInfo info;
  info.version = "go1.19.8";
  info.major = 1;
  info.minor = 19;
  auto types = uscope::GoTypes::open(*elf, nullptr, &info);
  if (!types) return 0;
  for (const char* name : {"net/http.Request", "*net/http.Request", "string", "runtime.g"}) {
    (void)(*types)->type(name);
    if (auto fields = (*types)->fields(name))
      for (const auto& f : *fields)
        if (f.name.size() > 4096) __builtin_trap();
  }
  (void)(*types)->field("net/http.response", "status");
  for (uint64_t a : {uint64_t{0}, uint64_t{0x400000}, uint64_t{0x600000}})
    (void)(*types)->type_name_at(a);
  return 0;
}
