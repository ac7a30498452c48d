// Feeds arbitrary bytes to the ELF model and everything built on it: section and segment tables,
// (compressed) section data, symbols, notes, build-id, debuglink, MiniDebugInfo and SymbolTable.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "discover/debug_info.h"
#include "discover/elf_file.h"
#include "discover/symbol_table.h"

namespace {

// Touches every byte so ASan sees any span that points outside its buffer.
size_t checksum(std::span<const uint8_t> bytes) {
  size_t sum = 0;
  for (uint8_t b : bytes) sum += b;
  return sum;
}

void exercise(const uscope::ElfFile& elf) {
  volatile size_t sink = 0;
  for (const auto& s : elf.sections()) {
    if (auto data = elf.section_data(s)) sink = sink + checksum(*data);
  }
  for (const auto& seg : elf.segments()) {
    if (auto off = elf.vaddr_to_offset(seg.vaddr)) sink = sink + *off;
    if (auto va = elf.offset_to_vaddr(seg.offset)) sink = sink + *va;
  }
  sink = sink + elf.base_vaddr() + elf.is_pie() + elf.is_shared_library() + elf.is_64bit();
  if (auto syms = elf.symbols()) {
    for (const auto& s : *syms) sink = sink + s.name.size() + s.addr;
  }
  if (auto notes = elf.notes()) {
    for (const auto& n : *notes) sink = sink + checksum(n.desc) + n.owner.size();
  }
  if (auto id = elf.build_id()) sink = sink + id->size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto elf = uscope::ElfFile::from_memory(std::vector<uint8_t>(data, data + size), "fuzz");
  if (!elf) return 0;
  exercise(*elf);
  // No debug roots: the fuzzer must not wander the file system for build-ids.
  uscope::DebugSearchPaths paths;
  paths.debug_roots = {};
  if (auto table = uscope::SymbolTable::load(*elf, paths)) {
    volatile size_t sink = 0;
    for (const auto& f : table->functions()) {
      sink = sink + f.demangled.size();
      if (table->containing(f.addr) == nullptr) __builtin_trap();
    }
    sink = sink + table->names().size() + table->find("main").size();
  }
  return 0;
}
