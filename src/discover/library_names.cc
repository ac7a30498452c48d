#include "discover/library_names.h"

#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <set>
#include <tuple>

#include "discover/elf_file.h"
#include "util/names.h"
#include "util/unique_fd.h"

namespace uscope {

namespace {

// Layouts from glibc's sysdeps/generic/dl-cache.h.
constexpr std::string_view kOldMagic = "ld.so-1.7.0";
constexpr size_t kOldHeaderSize = 16;  // magic[11], padding, uint32 nlibs
constexpr size_t kOldEntrySize = 12;   // int32 flags; uint32 key, value
constexpr std::string_view kNewMagic = "glibc-ld.so.cache1.1";
constexpr size_t kNewHeaderSize = 48;
constexpr size_t kNewNlibsOffset = 20;
constexpr size_t kNewFlagsOffset = 28;
constexpr size_t kNewEntrySize = 24;  // flags, key, value, osversion, uint64 hwcap
constexpr size_t kNewAlign = 8;       // alignof(struct cache_file_new)

// cache_file_new.flags: which byte order ldconfig wrote.
constexpr uint8_t kEndianMask = 3;
constexpr uint8_t kEndianInvalid = 1;
constexpr uint8_t kEndianLittle = 2;
constexpr uint8_t kEndianBig = 3;

// The flags ldconfig gives libraries of this machine's native ABI (FLAG_ELF_LIBC6 | arch).
#if defined(__x86_64__)
constexpr uint32_t kNativeFlags = 0x0303;
constexpr std::string_view kNativeArch = "x86-64";
#elif defined(__aarch64__)
constexpr uint32_t kNativeFlags = 0x0a03;
constexpr std::string_view kNativeArch = "aarch64";
#elif defined(__i386__)
constexpr uint32_t kNativeFlags = 0x0003;
constexpr std::string_view kNativeArch = "i386";
#else
constexpr uint32_t kNativeFlags = 0;  // unknown: accept every entry
constexpr std::string_view kNativeArch = "native";
#endif

bool is_native(uint32_t flags) {
  return kNativeFlags == 0 || flags == kNativeFlags;
}

template <class T>
T load(std::span<const uint8_t> bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof v);
  return v;
}

bool has_prefix(std::span<const uint8_t> bytes, size_t at, std::string_view magic) {
  return at <= bytes.size() && bytes.size() - at >= magic.size() &&
         std::memcmp(bytes.data() + at, magic.data(), magic.size()) == 0;
}

// NUL-terminated string at `strings_base + off`, entirely inside `bytes`.
Result<std::string> cache_string(std::span<const uint8_t> bytes, size_t strings_base,
                                 uint32_t off) {
  if (strings_base > bytes.size() || off >= bytes.size() - strings_base)
    return fail("string offset {:#x} is outside the file", off);
  const uint8_t* begin = bytes.data() + strings_base + off;
  const uint8_t* end = bytes.data() + bytes.size();
  const uint8_t* nul = std::find(begin, end, uint8_t{0});
  if (nul == end) return fail("string at offset {:#x} runs past the end of the file", off);
  return std::string(reinterpret_cast<const char*>(begin), static_cast<size_t>(nul - begin));
}

// Entries are `count` records of `entry_size` at `entries`; strings are relative to `strings`.
Result<std::vector<LdCacheEntry>> parse_entries(std::span<const uint8_t> bytes, size_t entries,
                                                uint64_t count, size_t entry_size, size_t strings) {
  if (entries > bytes.size() || count > (bytes.size() - entries) / entry_size)
    return fail("ld.so.cache is truncated: it claims {} entries, room for {}", count,
                entries > bytes.size() ? 0 : (bytes.size() - entries) / entry_size);
  std::vector<LdCacheEntry> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    size_t at = entries + i * entry_size;
    LdCacheEntry e;
    e.flags = load<uint32_t>(bytes, at);
    auto key = cache_string(bytes, strings, load<uint32_t>(bytes, at + 4));
    if (!key) return fail("ld.so.cache entry {}: {}", i, key.error().message);
    auto value = cache_string(bytes, strings, load<uint32_t>(bytes, at + 8));
    if (!value) return fail("ld.so.cache entry {}: {}", i, value.error().message);
    e.soname = std::move(*key);
    e.path = std::move(*value);
    if (entry_size == kNewEntrySize) e.hwcap = load<uint64_t>(bytes, at + 16);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<LdCacheEntry>> parse_new_format(std::span<const uint8_t> bytes, size_t base) {
  if (bytes.size() - base < kNewHeaderSize) return fail("ld.so.cache header is truncated");
  uint8_t endian = bytes[base + kNewFlagsOffset] & kEndianMask;
  uint8_t native = std::endian::native == std::endian::little ? kEndianLittle : kEndianBig;
  if (endian == kEndianInvalid || (endian != 0 && endian != native))
    return fail("ld.so.cache was written for the other byte order");
  uint32_t count = load<uint32_t>(bytes, base + kNewNlibsOffset);
  // String offsets count from the start of the new-format header.
  return parse_entries(bytes, base + kNewHeaderSize, count, kNewEntrySize, base);
}

// Does `s` contain ".so" as a whole dot-separated component ("libc.so.6", "libc-2.31.so")?
bool has_so_component(std::string_view s) {
  for (size_t at = s.find(".so"); at != std::string_view::npos; at = s.find(".so", at + 1))
    if (at + 3 == s.size() || s[at + 3] == '.') return true;
  return false;
}

// "libssl.so.3" rather than the development symlink "libssl.so".
bool is_versioned(std::string_view soname) {
  return soname.find(".so.") != std::string_view::npos;
}

// "libssl.so.3" -> "ssl", "libc-2.31.so" -> "c": the part users type, for suggestions.
std::string short_form(std::string_view name) {
  name = file_name(name);
  if (name.starts_with("lib")) name.remove_prefix(3);
  for (size_t i = 0; i < name.size(); ++i) {
    bool so = name.substr(i, 3) == ".so" && (i + 3 == name.size() || name[i + 3] == '.');
    bool ver = name[i] == '-' && i + 1 < name.size() &&
               std::isdigit(static_cast<unsigned char>(name[i + 1]));
    if (so || ver) return std::string(name.substr(0, i));
  }
  return std::string(name);
}

// Suggestions for a misspelt name: compares short forms, shows the full names.
std::vector<std::string> suggest(std::string_view wanted, const std::vector<std::string>& names) {
  std::vector<std::string> forms;
  std::vector<std::string> shown;  // one full name per short form, versioned if there is one
  for (const auto& n : names) {
    std::string f = short_form(n);
    auto it = std::find(forms.begin(), forms.end(), f);
    if (it == forms.end()) {
      forms.push_back(std::move(f));
      shown.push_back(n);
    } else if (std::string& s = shown[static_cast<size_t>(it - forms.begin())];
               !is_versioned(s) && is_versioned(n)) {
      s = n;
    }
  }
  std::vector<std::string> out;
  for (const auto& f : closest_names(short_form(wanted), forms)) {
    size_t i = static_cast<size_t>(std::find(forms.begin(), forms.end(), f) - forms.begin());
    out.push_back(shown[i]);
  }
  return out;
}

bool is_exact(std::string_view short_name, std::string_view name) {
  std::string_view base = file_name(name);
  return base == short_name || (!short_name.starts_with("lib") && base.starts_with("lib") &&
                                base.substr(3) == short_name);
}

// The libraries `elf` names in DT_NEEDED ("libruby-3.1.so.3.1"), read with libelf's gelf.
std::vector<std::string> needed_libraries(const ElfFile& elf) {
  std::vector<std::string> out;
  Elf* e = elf.libelf();
  if (!e) return out;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(e, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(data, static_cast<int>(i), &dyn) || dyn.d_tag != DT_NEEDED) continue;
      if (const char* name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)) out.emplace_back(name);
    }
  }
  return out;
}

}  // namespace

Result<std::vector<LdCacheEntry>> parse_ld_so_cache(std::span<const uint8_t> bytes) {
  if (has_prefix(bytes, 0, kNewMagic)) return parse_new_format(bytes, 0);
  if (!has_prefix(bytes, 0, kOldMagic)) return fail("not an ld.so.cache file (unknown magic)");
  if (bytes.size() < kOldHeaderSize) return fail("ld.so.cache header is truncated");
  uint64_t old_count = load<uint32_t>(bytes, kOldMagic.size() + 1);
  uint64_t old_end = kOldHeaderSize + old_count * kOldEntrySize;
  uint64_t new_base = (old_end + kNewAlign - 1) & ~uint64_t{kNewAlign - 1};
  if (new_base < bytes.size() && has_prefix(bytes, new_base, kNewMagic))
    return parse_new_format(bytes, new_base);
  // Old format alone (glibc before 2.32 could write it): strings follow the entries.
  if (old_end > bytes.size())
    return fail("ld.so.cache is truncated: it claims {} entries", old_count);
  return parse_entries(bytes, kOldHeaderSize, old_count, kOldEntrySize, old_end);
}

Result<std::vector<LdCacheEntry>> read_ld_so_cache(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return fail_errno(errno, "cannot open {}: {}", path, std::strerror(errno));
  std::vector<uint8_t> bytes;
  // Real caches are tens of KiB; the cap keeps a wrong path (a device, a pipe) from eating memory.
  constexpr size_t kMaxSize = 64 << 20;
  uint8_t buf[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno(errno, "cannot read {}: {}", path, std::strerror(errno));
    if (n == 0) break;
    if (bytes.size() + static_cast<size_t>(n) > kMaxSize)
      return fail("{} is larger than {} MiB; not an ld.so.cache", path, kMaxSize >> 20);
    bytes.insert(bytes.end(), buf, buf + n);
  }
  auto entries = parse_ld_so_cache(bytes);
  if (!entries) return with_context(path, entries.error());
  return entries;
}

bool is_library_short_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

bool library_name_matches(std::string_view short_name, std::string_view path) {
  if (!is_library_short_name(short_name)) return false;
  std::string_view base = file_name(path);
  std::string prefixed = short_name.starts_with("lib") ? "" : "lib" + std::string(short_name);
  for (std::string_view stem : {short_name, std::string_view(prefixed)}) {
    if (stem.empty() || !base.starts_with(stem)) continue;
    std::string_view rest = base.substr(stem.size());
    if (rest.empty()) return true;
    // "libssl.so" names every libssl.so.N; "ssl" names libssl.so.3 and libssl-1.1.so, not
    // libssl3.so, and "c" must not match libcap.so.2.
    if (has_so_component(stem)) {
      if (rest[0] == '.') return true;
      continue;
    }
    bool boundary = rest[0] == '.' || (rest[0] == '-' && rest.size() > 1 &&
                                       std::isdigit(static_cast<unsigned char>(rest[1])));
    if (boundary && has_so_component(rest)) return true;
  }
  return false;
}

Result<std::string> resolve_library(std::string_view short_name,
                                    std::span<const LdCacheEntry> cache) {
  if (!is_library_short_name(short_name))
    return fail("'{}' is a path, not a library name", short_name);
  const LdCacheEntry* best = nullptr;
  std::tuple<bool, bool, bool> best_rank;
  std::vector<std::string> foreign;
  for (const auto& e : cache) {
    if (!library_name_matches(short_name, e.soname)) continue;
    if (!is_native(e.flags)) {
      foreign.push_back(e.path);
      continue;
    }
    // ldconfig writes newer versions first, so on a tie the earlier entry wins. A versioned
    // soname is what programs load; the bare libfoo.so is a development symlink.
    auto rank =
        std::make_tuple(is_exact(short_name, e.soname), e.hwcap == 0, is_versioned(e.soname));
    if (!best || rank > best_rank) {
      best = &e;
      best_rank = rank;
    }
  }
  if (best) return best->path;
  if (!foreign.empty())
    return fail("no {} library '{}' in ld.so.cache; only for other architectures: {}", kNativeArch,
                short_name, join(foreign));
  std::vector<std::string> names;
  for (const auto& e : cache)
    if (is_native(e.flags)) names.push_back(e.soname);
  auto close = suggest(short_name, names);
  if (close.empty())
    return fail("no library '{}' in ld.so.cache; give its path instead", short_name);
  return fail("no library '{}' in ld.so.cache; closest: {}", short_name, join(close));
}

Result<const MappedObject*> resolve_library(std::string_view short_name, const Process& process) {
  if (!is_library_short_name(short_name))
    return fail("'{}' is a path, not a library name", short_name);
  const MappedObject* best = nullptr;
  for (const auto& o : process.objects()) {
    if (!library_name_matches(short_name, o.path)) continue;
    if (is_exact(short_name, o.path)) return &o;
    if (!best) best = &o;
  }
  if (best) return best;
  std::vector<std::string> names;
  for (const auto& o : process.objects()) {
    std::string n(file_name(o.path));
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(std::move(n));
  }
  auto close = suggest(short_name, names);
  if (close.empty()) {
    // Nothing is close: list what is there, which is short for most processes.
    constexpr size_t kMaxListed = 12;
    close.assign(names.begin(), names.begin() + std::min(names.size(), kMaxListed));
    if (names.size() > kMaxListed) close.push_back("...");
  }
  return fail("process {} maps no library '{}'; mapped: {}", process.pid(), short_name,
              join(close));
}

std::vector<std::string> linked_files(const std::string& program) {
  std::vector<std::string> files{program};
  auto elf = ElfFile::open(program);
  if (!elf) return files;
  auto cache = read_ld_so_cache();
  if (!cache) return files;
  for (const auto& lib : needed_libraries(*elf))
    if (auto path = resolve_library(lib, *cache)) files.push_back(*path);
  return files;
}

std::vector<std::string> startup_files(const std::string& program) {
  std::vector<std::string> files{program};
  auto elf = ElfFile::open(program);
  if (!elf) return files;
  if (auto interp = elf->section(".interp"))
    if (auto bytes = elf->section_data(*interp); bytes && !bytes->empty())
      files.emplace_back(reinterpret_cast<const char*>(bytes->data()),
                         strnlen(reinterpret_cast<const char*>(bytes->data()), bytes->size()));
  auto cache = read_ld_so_cache();
  if (!cache) return files;
  // By the file's real path: libc names ld.so by /lib/x86_64-linux-gnu/, PT_INTERP by /lib64/.
  auto real = [](const std::string& path) {
    std::error_code ec;
    auto p = std::filesystem::canonical(path, ec);
    return ec ? path : p.string();
  };
  std::set<std::string> seen;
  for (const auto& f : files) seen.insert(real(f));
  std::deque<std::string> next{program};
  while (!next.empty()) {
    auto object = ElfFile::open(next.front());
    next.pop_front();
    if (!object) continue;
    for (const auto& lib : needed_libraries(*object)) {
      auto path = resolve_library(lib, *cache);
      if (!path || !seen.insert(real(*path)).second) continue;
      files.push_back(*path);
      next.push_back(*path);
    }
  }
  return files;
}

}  // namespace uscope
