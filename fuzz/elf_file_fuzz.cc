// Feeds arbitrary bytes to the ELF model and everything built on it: section and segment tables,
// (compressed) section data, symbols, notes, build-id, debuglink, MiniDebugInfo and SymbolTable.
// libdwfl (MiniDebugInfo, debuglink, DWARF lines) opens its objects by path, so each input is
// also written to a file of its own, alone in a private directory: a debuglink is looked up
// beside it and finds nothing else, and no debug roots are searched.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
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

// A private directory holding only the current input, removed at exit.
const std::string& input_path() {
  static const std::string path = [] {
    std::string dir =
        std::string(getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp") + "/uscope-elf-fuzz-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) __builtin_trap();
    static std::string created;
    created = dir;
    atexit([] {
      ::unlink((created + "/input").c_str());
      ::rmdir(created.c_str());
    });
    return dir + "/input";
  }();
  return path;
}

void write_input(const uint8_t* data, size_t size) {
  int fd = ::open(input_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) __builtin_trap();
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_input(data, size);
  auto elf = uscope::ElfFile::from_memory(std::vector<uint8_t>(data, data + size), input_path());
  if (!elf) return 0;
  exercise(*elf);
  // No debug roots: the fuzzer must not wander the file system for build-ids.
  uscope::DebugSearchPaths paths;
  paths.debug_roots = {};
  if (auto info = uscope::DebugInfo::open(*elf, paths)) {
    volatile size_t sink = 0;
    auto symbols = (*info)->symbols();
    for (const auto& s : symbols) sink = sink + s.name.size() + s.addr;
    if (auto file = (*info)->debug_file()) sink = sink + file->size();
    // DWARF lines and inlined calls (libdw) at the first functions' addresses.
    for (size_t i = 0; i < symbols.size() && i < 8; ++i) {
      if (auto pos = (*info)->source_at(symbols[i].addr)) {
        sink = sink + pos->file.size() + static_cast<size_t>(pos->line);
        for (const auto& in : pos->inlined) sink = sink + in.function.size() + in.file.size();
      }
    }
  }
  if (auto table = uscope::SymbolTable::load(*elf, paths)) {
    volatile size_t sink = 0;
    for (const auto& f : table->functions()) {
      sink = sink + f.demangled().size();
      if (table->containing(f.addr) == nullptr) __builtin_trap();
    }
    sink = sink + table->names().size() + table->find("main").size();
  }
  return 0;
}
