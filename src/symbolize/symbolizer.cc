#include "symbolize/symbolizer.h"

#include <elf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "discover/elf_file.h"
#include "discover/symbol_table.h"

namespace uscope {

struct Symbolizer::LoadedObject {
  std::optional<ElfFile> elf;          // nullopt when the file could not be opened
  std::optional<SymbolTable> symbols;  // nullopt when it had none we could read
  std::string build_id;
};

namespace {

// True if `start` and `addr` lie in the same allocated section. Files without section headers
// (some stripped ones) give no bound, and the nearest symbol is the best guess there.
bool same_section(const ElfFile& elf, uint64_t start, uint64_t addr) {
  const auto& sections = elf.sections();
  bool any = false;
  for (const ElfSection& s : sections) {
    if (!(s.flags & SHF_ALLOC) || s.size == 0) continue;
    any = true;
    if (start >= s.addr && start - s.addr < s.size) return addr >= s.addr && addr - s.addr < s.size;
  }
  return !any;
}

// SymbolTable::containing() honours sizes, and matches a size-0 symbol only at its own address.
// Hand-written assembly often lacks .size, so a size-0 symbol is taken to extend to the next
// symbol within its section; a gap after a sized symbol (padding) stays unknown.
const FunctionSymbol* find_function(const ElfFile& elf, const SymbolTable& table, uint64_t addr) {
  const auto& fns = table.functions();
  const FunctionSymbol* found = table.containing(addr);
  if (found == nullptr) {
    auto next = std::upper_bound(fns.begin(), fns.end(), addr,
                                 [](uint64_t a, const FunctionSymbol& f) { return a < f.addr; });
    if (next == fns.begin()) return nullptr;
    const uint64_t start = std::prev(next)->addr;
    for (auto it = std::prev(next);; --it) {
      if (it->size != 0) return nullptr;
      found = &*it;
      if (it == fns.begin() || std::prev(it)->addr != start) break;
    }
    if (!same_section(elf, start, addr)) return nullptr;
  }
  return table.preferred_alias(*found, addr);
}

// When a process has exited, /proc/PID/map_files and /proc/PID/root are gone with it, but the
// file may still be reachable at its mapped path (same mount namespace). Only a file with the
// same device and inode is the one that was mapped.
std::optional<ElfFile> open_by_mapped_path(const MappedObject& o) {
  if (o.deleted || o.path.empty() || o.path == o.open_path) return std::nullopt;
  struct stat st;
  if (::stat(o.path.c_str(), &st) != 0) return std::nullopt;
  if (st.st_ino != o.inode || major(st.st_dev) != o.dev_major || minor(st.st_dev) != o.dev_minor)
    return std::nullopt;
  auto elf = ElfFile::open(o.path);
  if (!elf) return std::nullopt;
  return std::move(*elf);
}

std::vector<Frame> fill(std::span<const uint64_t> addresses, FrameMiss miss) {
  std::vector<Frame> frames(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    frames[i].address = addresses[i];
    frames[i].miss = miss;
  }
  return frames;
}

// Return addresses are looked up one byte earlier: inside the call instruction, hence inside the
// calling function even when the call was its last instruction (a call to a noreturn function).
uint64_t lookup_address(std::span<const uint64_t> addresses, size_t i, bool first_is_ip) {
  const bool is_return = i > 0 || !first_is_ip;
  return is_return && addresses[i] > 0 ? addresses[i] - 1 : addresses[i];
}

}  // namespace

const char* to_string(FrameMiss miss) {
  switch (miss) {
    case FrameMiss::None:
      return "resolved";
    case FrameMiss::Unmapped:
      return "unmapped";
    case FrameMiss::NoSymbols:
      return "no symbols";
    case FrameMiss::UnknownAddress:
      return "unknown address";
    case FrameMiss::ProcessGone:
      return "process gone";
    case FrameMiss::NoAccess:
      return "maps unreadable";
  }
  return "?";
}

std::string Frame::describe() const {
  if (miss == FrameMiss::None) {
    std::string where =
        function_offset ? fmt::format("{}+{:#x}", function, function_offset) : function;
    return fmt::format("{} ({})", where, object);
  }
  if (!object.empty()) return fmt::format("{:#x} ([unknown] in {})", address, object);
  return fmt::format("{:#x} [{}]", address, to_string(miss));
}

Symbolizer::Symbolizer(SymbolizerOptions options) : options_(std::move(options)) {}
Symbolizer::Symbolizer(Symbolizer&&) noexcept = default;
Symbolizer& Symbolizer::operator=(Symbolizer&&) noexcept = default;
Symbolizer::~Symbolizer() = default;

const Symbolizer::LoadedObject& Symbolizer::load(const MappedObject& object) {
  ObjectKey key{object.dev_major, object.dev_minor, object.inode};
  auto it = objects_.find(key);
  if (it != objects_.end()) return *it->second;

  // Failures are cached too: an object that cannot be opened now (permissions, deleted and
  // unreachable) will not become openable on the next frame, and retrying would cost a syscall
  // per frame of every stack through it.
  auto loaded = std::make_unique<LoadedObject>();
  if (auto elf = ElfFile::open(object.open_path, object.path)) {
    loaded->elf = std::move(*elf);
  } else {
    loaded->elf = open_by_mapped_path(object);
  }
  if (loaded->elf) {
    loaded->build_id = loaded->elf->build_id().value_or("");
    if (auto table = SymbolTable::load(*loaded->elf, options_.debug);
        table && !table->functions().empty())
      loaded->symbols = std::move(*table);
  }
  return *objects_.emplace(key, std::move(loaded)).first->second;
}

Frame Symbolizer::resolve(const NormalizedAddress& n, uint64_t address, uint64_t lookup) {
  Frame f;
  f.address = address;
  f.object = n.name;
  f.miss = n.miss;
  if (n.object == nullptr) return f;
  // Report the offset of the address as given; the lookup address is at most one byte before.
  f.file_offset = n.file_offset + (address - lookup);

  const LoadedObject& o = load(*n.object);
  f.build_id = o.build_id;
  if (!o.elf || !o.symbols) {
    f.miss = FrameMiss::NoSymbols;
    return f;
  }
  std::optional<uint64_t> link = o.elf->offset_to_vaddr(n.file_offset);
  const FunctionSymbol* fn = link ? find_function(*o.elf, *o.symbols, *link) : nullptr;
  if (fn == nullptr) {
    f.miss = FrameMiss::UnknownAddress;
    return f;
  }
  f.function = fn->demangled;
  f.function_offset = (*link - fn->addr) + (address - lookup);
  f.miss = FrameMiss::None;
  return f;
}

std::vector<Frame> Symbolizer::symbolize(pid_t pid, std::span<const uint64_t> addresses,
                                         bool first_is_ip) {
  auto cached = processes_.find(pid);
  bool refreshed = false;  // maps read during this call: re-reading again would change nothing
  if (cached == processes_.end()) {
    auto p = Process::open(pid);
    if (!p) {
      const bool gone =
          !process_alive(pid) || p.error().errnum == ESRCH || p.error().errnum == ENOENT;
      return fill(addresses, gone ? FrameMiss::ProcessGone : FrameMiss::NoAccess);
    }
    cached = processes_.emplace(pid, std::move(*p)).first;
    refreshed = true;
  }

  bool gone = false;  // a refresh found the process exited; its later misses say so too
  std::vector<Frame> frames;
  frames.reserve(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    const uint64_t lookup = lookup_address(addresses, i, first_is_ip);
    NormalizedAddress n = normalize(cached->second, lookup);
    if (n.miss == FrameMiss::Unmapped && !refreshed) {
      // Most likely a library dlopen()ed after the maps were cached. Earlier frames are already
      // copied out, so replacing the snapshot under them is safe.
      refreshed = true;
      if (auto p = Process::open(pid)) {
        cached->second = std::move(*p);
        n = normalize(cached->second, lookup);
      } else {
        gone = !process_alive(pid);
      }
    }
    if (n.miss == FrameMiss::Unmapped && gone) n.miss = FrameMiss::ProcessGone;
    frames.push_back(resolve(n, addresses[i], lookup));
  }
  return frames;
}

Frame Symbolizer::symbolize(pid_t pid, uint64_t address) {
  return symbolize(pid, std::span<const uint64_t>(&address, 1), true).front();
}

std::vector<Frame> Symbolizer::symbolize(const Process& process,
                                         std::span<const uint64_t> addresses, bool first_is_ip) {
  std::vector<Frame> frames;
  frames.reserve(addresses.size());
  for (size_t i = 0; i < addresses.size(); ++i) {
    const uint64_t lookup = lookup_address(addresses, i, first_is_ip);
    frames.push_back(resolve(normalize(process, lookup), addresses[i], lookup));
  }
  return frames;
}

void Symbolizer::remember(pid_t pid) {
  if (processes_.contains(pid)) return;
  if (auto p = Process::open(pid)) processes_.emplace(pid, std::move(*p));
}

void Symbolizer::forget(pid_t pid) {
  processes_.erase(pid);
}

}  // namespace uscope
