// The USDT probes of one ELF: its NT_STAPSDT notes, adjusted for prelinking, with the file offsets
// the kernel's uprobe interface takes for both the probe and its semaphore (ref_ctr_offset).
#include <elf.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "discover/usdt.h"

namespace uscope {
namespace {

constexpr uint32_t kNtStapsdt = 3;

std::optional<UsdtArch> arch_of(const ElfFile& elf) {
  switch (elf.machine()) {
    case EM_X86_64:
      return UsdtArch::X86_64;
    case EM_AARCH64:
      return UsdtArch::AArch64;
    default:
      return std::nullopt;
  }
}

// Provider and name come straight from the file; errors must stay one readable line.
std::string printable(const std::string& s) {
  std::string out = s.size() > 64 ? s.substr(0, 64) + "..." : s;
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  return out;
}

}  // namespace

Result<std::vector<UsdtProbe>> read_usdt_probes(const ElfFile& elf) {
  auto notes = elf.notes("stapsdt");
  if (!notes) return with_context(elf.display_path(), notes.error());

  // prelink moves a library after the notes were written; .stapsdt.base moves with it, so the
  // difference between where it is now and where each note says it was is the shift to apply.
  std::optional<uint64_t> actual_base;
  if (auto s = elf.section(".stapsdt.base")) actual_base = s->addr;
  const std::optional<UsdtArch> arch = arch_of(elf);

  std::vector<UsdtProbe> probes;
  // Keyed by provider NUL name: neither can contain a NUL, whereas ':' is legal in both.
  std::unordered_map<std::string, size_t> by_name;
  size_t ordinal = 0;
  for (const ElfNote& note : *notes) {
    if (note.type != kNtStapsdt) continue;
    ++ordinal;
    auto rec = parse_stapsdt_note(note.desc, elf.is_64bit());
    if (!rec) {
      return with_context(fmt::format("{}: stapsdt note {}", elf.display_path(), ordinal),
                          rec.error());
    }

    UsdtLocation loc;
    loc.addr = rec->pc;
    loc.semaphore = rec->semaphore;
    if (actual_base && rec->base != 0) {
      // Unsigned wrap-around makes a negative shift work too.
      const uint64_t shift = *actual_base - rec->base;
      loc.addr += shift;
      if (loc.semaphore != 0) loc.semaphore += shift;
    }
    auto off = elf.vaddr_to_offset(loc.addr);
    if (!off) {
      return fail("{}: USDT probe {}:{} at {:#x} is in no loadable segment", elf.display_path(),
                  printable(rec->provider), printable(rec->name), loc.addr);
    }
    loc.offset = *off;
    if (loc.semaphore != 0) {
      // Semaphores sit in .probes, writable PROGBITS, so in some PT_LOAD's file image: the kernel
      // bumps them through the file mapping, hence an offset (ref_ctr_offset) and not an address.
      auto sem_off = elf.vaddr_to_offset(loc.semaphore);
      if (!sem_off) {
        return fail(
            "{}: semaphore of USDT probe {}:{} at {:#x} is in no loadable segment's file "
            "image",
            elf.display_path(), printable(rec->provider), printable(rec->name), loc.semaphore);
      }
      loc.semaphore_offset = *sem_off;
    }

    loc.args_text = rec->args;
    if (!arch) {
      loc.args_error = Error{fmt::format("USDT arguments of ELF machine {} are not supported (only "
                                         "x86_64 and aarch64)",
                                         elf.machine()),
                             0};
    } else if (auto args = parse_usdt_args(rec->args, *arch)) {
      loc.args = std::move(*args);
    } else {
      loc.args_error = args.error();
    }

    std::string key = rec->provider;
    key.push_back('\0');
    key += rec->name;
    auto [it, inserted] = by_name.try_emplace(std::move(key), probes.size());
    if (inserted) {
      UsdtProbe probe;
      probe.provider = std::move(rec->provider);
      probe.name = std::move(rec->name);
      probes.push_back(std::move(probe));
    }
    probes[it->second].locations.push_back(std::move(loc));
  }
  return probes;
}

}  // namespace uscope
