// Separate debug files and MiniDebugInfo. The lookup order follows gdb's (and therefore what
// distributions install): build-id first, since it cannot pick a stale file, then .gnu_debuglink.
#include "discover/debug_info.h"

#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>

#include "util/unique_fd.h"

namespace uscope {
namespace {

// xz -9 needs 64 MiB of dictionary to decode; anything beyond that is not MiniDebugInfo.
constexpr uint64_t kLzmaMemLimit = 128u << 20;

bool is_regular_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string join_path(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/' || (!b.empty() && b.front() == '/')) return a + b;
  return a + "/" + b;
}

// CRC32 of a whole file as .gnu_debuglink records it (zlib's crc32, the same polynomial).
std::optional<uint32_t> file_crc32(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<Bytef> buf(1 << 16);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (n == 0) break;
    crc = crc32(crc, buf.data(), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

// The object's own path as seen inside `root_prefix` (its container), so that debug roots and
// directories can be re-rooted the same way. /proc/PID/map_files names say nothing about where
// the file lives; the display path does.
std::string logical_path(const ElfFile& elf, const std::string& root_prefix) {
  const std::string& p = elf.path();
  if (!root_prefix.empty() && p.size() > root_prefix.size() && p.starts_with(root_prefix) &&
      p[root_prefix.size()] == '/') {
    return p.substr(root_prefix.size());
  }
  if (p.starts_with("/proc/") && p.find("/map_files/") != std::string::npos &&
      elf.display_path().starts_with("/")) {
    return elf.display_path();
  }
  if (root_prefix.empty() && p.starts_with("/") && !p.starts_with("/proc/")) {
    // gdb looks beside the file's real location, which matters for merged-/usr symlinks.
    char resolved[PATH_MAX];
    if (::realpath(p.c_str(), resolved) != nullptr) return resolved;
  }
  return p;
}

const char* lzma_message(lzma_ret r) {
  switch (r) {
    case LZMA_MEM_ERROR:
      return "out of memory";
    case LZMA_MEMLIMIT_ERROR:
      return "needs more memory than the decoder allows";
    case LZMA_FORMAT_ERROR:
      return "not xz data";
    case LZMA_OPTIONS_ERROR:
      return "unsupported xz options";
    case LZMA_DATA_ERROR:
      return "corrupted xz data";
    case LZMA_BUF_ERROR:
      return "truncated xz data";
    default:
      return "xz decoder error";
  }
}

struct LzmaStream {
  lzma_stream s = LZMA_STREAM_INIT;
  LzmaStream() = default;
  LzmaStream(const LzmaStream&) = delete;
  LzmaStream& operator=(const LzmaStream&) = delete;
  ~LzmaStream() { lzma_end(&s); }
};

}  // namespace

std::optional<std::string> find_debug_file(const ElfFile& elf, const DebugSearchPaths& paths) {
  const std::string& prefix = paths.root_prefix;
  auto rooted = [&](const std::string& p) { return p.starts_with("/") ? prefix + p : p; };

  if (auto id = elf.build_id(); id && id->size() > 2) {
    const std::string rel = ".build-id/" + id->substr(0, 2) + "/" + id->substr(2) + ".debug";
    for (const auto& root : paths.debug_roots) {
      const std::string candidate = rooted(join_path(root, rel));
      if (!is_regular_file(candidate)) continue;
      // A stale or mispackaged link would give wrong symbols; gdb checks the same way.
      auto dbg = ElfFile::open(candidate);
      if (dbg && dbg->build_id() == id) return candidate;
    }
  }

  auto link = elf.debuglink();
  if (!link || link->filename.empty()) return std::nullopt;
  const std::string dir = dir_of(logical_path(elf, prefix));
  std::vector<std::string> candidates = {
      rooted(join_path(dir, link->filename)),
      rooted(join_path(join_path(dir, ".debug"), link->filename)),
  };
  for (const auto& root : paths.debug_roots) {
    candidates.push_back(rooted(join_path(join_path(root, dir), link->filename)));
  }
  for (const auto& c : candidates) {
    if (!is_regular_file(c)) continue;
    if (file_crc32(c) == link->crc) return c;
  }
  return std::nullopt;
}

Result<std::vector<uint8_t>> xz_decompress(std::span<const uint8_t> in, size_t max_output) {
  LzmaStream strm;
  lzma_ret r = lzma_stream_decoder(&strm.s, kLzmaMemLimit, 0);
  if (r != LZMA_OK) return fail("xz: cannot start decoder: {}", lzma_message(r));
  std::vector<uint8_t> out;
  // Most MiniDebugInfo expands 3-5x; start there and double, never past the bound.
  out.resize(std::min(max_output, std::max<size_t>(in.size() * 4, 4096)));
  strm.s.next_in = in.data();
  strm.s.avail_in = in.size();
  strm.s.next_out = out.data();
  strm.s.avail_out = out.size();
  for (;;) {
    r = lzma_code(&strm.s, LZMA_FINISH);
    if (r == LZMA_STREAM_END) break;
    if (r != LZMA_OK) return fail("xz: {}", lzma_message(r));
    if (strm.s.avail_out == 0) {
      if (out.size() >= max_output) {
        return fail("xz: decompressed data exceeds the limit of {} bytes", max_output);
      }
      const size_t used = out.size();
      out.resize(std::min(max_output, used * 2));
      strm.s.next_out = out.data() + used;
      strm.s.avail_out = out.size() - used;
    }
  }
  out.resize(strm.s.total_out);
  return out;
}

Result<std::optional<ElfFile>> open_minidebuginfo(const ElfFile& elf) {
  auto sec = elf.section(".gnu_debugdata");
  if (!sec) return std::optional<ElfFile>{};
  auto data = elf.section_data(*sec);
  if (!data) return tl::unexpected(data.error());
  auto bytes = xz_decompress(*data);
  if (!bytes) return with_context(elf.display_path() + ": .gnu_debugdata", bytes.error());
  auto inner = ElfFile::from_memory(std::move(*bytes), elf.display_path() + " (.gnu_debugdata)");
  if (!inner) return tl::unexpected(inner.error());
  return std::optional<ElfFile>(std::move(*inner));
}

}  // namespace uscope
