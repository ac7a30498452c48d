#include "discover/unwind_cache.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

namespace uscope {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'U', 'S', 'C', 'U', 'N', 'W', 'T', 'B'};
constexpr size_t kHeaderSize = 64;
constexpr size_t kRuleSize = 12;
constexpr size_t kRowSize = 12;
constexpr uint32_t kMaxKey = 4096, kMaxSource = 65536;
constexpr const char* kSuffix = ".unw";

uint64_t fnv1a(std::span<const uint8_t> b, uint64_t h = 0xcbf29ce484222325ull) {
  for (uint8_t c : b) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof v);
  }
  void put(std::string_view s) { out.insert(out.end(), s.begin(), s.end()); }
  std::vector<uint8_t> out;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  // Callers have checked the total size: reads past the end yield zeros rather than overrun.
  template <typename T>
  T get() {
    T v{};
    if (b_.size() - pos_ >= sizeof v) std::memcpy(&v, b_.data() + pos_, sizeof v);
    pos_ += std::min(sizeof v, b_.size() - pos_);
    return v;
  }
  std::string str(size_t n) {
    n = std::min(n, b_.size() - pos_);
    std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<uint8_t> serialize_unwind_table(const UnwindTable& table, const std::string& key) {
  std::map<UnwindRule, uint32_t> index;
  std::vector<UnwindRule> rules;
  for (const auto& r : table.rows)
    if (index.emplace(r.rule, static_cast<uint32_t>(rules.size())).second) rules.push_back(r.rule);
  Writer body;
  body.put(std::string_view(key));
  body.put(std::string_view(table.source));
  for (const auto& r : rules) {
    body.put<uint8_t>(static_cast<uint8_t>(r.cfa));
    body.put<uint8_t>(static_cast<uint8_t>(r.rbp));
    body.put<int16_t>(r.ra_offset);
    body.put<int32_t>(r.cfa_offset);
    body.put<int32_t>(r.rbp_offset);
  }
  for (const auto& r : table.rows) {
    body.put<uint64_t>(r.vaddr);
    body.put<uint32_t>(index[r.rule]);
  }
  Writer w;
  w.out.reserve(kHeaderSize + body.out.size());
  w.put(std::string_view(kMagic, sizeof kMagic));
  w.put<uint32_t>(kUnwindCacheVersion);
  w.put<uint32_t>(static_cast<uint32_t>(rules.size()));
  w.put<uint32_t>(static_cast<uint32_t>(table.rows.size()));
  w.put<uint32_t>(static_cast<uint32_t>(key.size()));
  w.put<uint32_t>(static_cast<uint32_t>(table.source.size()));
  w.put<uint32_t>(0);
  w.put<uint64_t>(table.fdes);
  w.put<uint64_t>(table.unsupported);
  w.put<uint64_t>(table.signal_frames);
  w.put<uint64_t>(fnv1a(body.out, fnv1a(w.out)));  // all that precedes and follows it
  w.out.insert(w.out.end(), body.out.begin(), body.out.end());
  return std::move(w.out);
}

Result<UnwindTable> parse_unwind_table(std::span<const uint8_t> bytes, const std::string& key) {
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return fail("not an unwind table file (no USCUNWTB header)");
  Reader h(bytes.subspan(sizeof kMagic));
  const auto version = h.get<uint32_t>(), nrules = h.get<uint32_t>(), nrows = h.get<uint32_t>(),
             key_len = h.get<uint32_t>(), source_len = h.get<uint32_t>();
  const auto reserved = h.get<uint32_t>();
  UnwindTable t;
  t.fdes = h.get<uint64_t>();
  t.unsupported = h.get<uint64_t>();
  t.signal_frames = h.get<uint64_t>();
  const auto checksum = h.get<uint64_t>();
  if (version != kUnwindCacheVersion)
    return fail("unwind table file of version {}, not {}", version, kUnwindCacheVersion);
  if (reserved != 0) return fail("unwind table file with unknown flags {:#x}", reserved);
  if (key_len > kMaxKey || source_len > kMaxSource)
    return fail("unwind table file with a {}-byte key and a {}-byte source", key_len, source_len);
  const uint64_t want = kHeaderSize + uint64_t{key_len} + source_len +
                        uint64_t{nrules} * kRuleSize + uint64_t{nrows} * kRowSize;
  if (want != bytes.size())
    return fail("unwind table file of {} bytes, its header says {}", bytes.size(), want);
  auto body = bytes.subspan(kHeaderSize);
  if (fnv1a(body, fnv1a(bytes.first(kHeaderSize - 8))) != checksum)
    return fail("unwind table file whose checksum does not match");
  Reader r(body);
  std::string stored_key = r.str(key_len);
  if (!key.empty() && stored_key != key)
    return fail("unwind table file for {}, not {}", stored_key, key);
  t.source = r.str(source_len);
  std::vector<UnwindRule> rules(nrules);
  for (auto& rule : rules) {
    auto cfa = r.get<uint8_t>(), rbp = r.get<uint8_t>();
    if (cfa > UNWIND_CFA_UNSUPPORTED || rbp > UNWIND_RBP_UNDEFINED)
      return fail("unwind table file with a rule of kinds {}/{}", cfa, rbp);
    rule.cfa = static_cast<unwind_cfa_kind>(cfa);
    rule.rbp = static_cast<unwind_rbp_kind>(rbp);
    rule.ra_offset = r.get<int16_t>();
    rule.cfa_offset = r.get<int32_t>();
    rule.rbp_offset = r.get<int32_t>();
  }
  t.rows.resize(nrows);
  for (size_t i = 0; i < nrows; ++i) {
    auto& row = t.rows[i];
    row.vaddr = r.get<uint64_t>();
    auto ix = r.get<uint32_t>();
    if (ix >= nrules)
      return fail("unwind table file whose row {} names rule {} of {}", i, ix, nrules);
    row.rule = rules[ix];
    if (i > 0 && (row.vaddr <= t.rows[i - 1].vaddr || row.rule == t.rows[i - 1].rule))
      return fail("unwind table file whose rows are not sorted and distinct at row {}", i);
  }
  if (!t.rows.empty() && t.rows.back().rule.cfa != UNWIND_CFA_NONE)
    return fail("unwind table file whose last row is not an end of coverage");
  return t;
}

std::string UnwindCache::default_dir() {
  if (const char* d = std::getenv("USCOPE_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (geteuid() == 0) return "/var/cache/uscope/unwind";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && x[0] == '/')
    return std::string(x) + "/uscope/unwind";
  std::string home;
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    home = h;
  } else if (const passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_dir != nullptr) {
    home = pw->pw_dir;
  }
  return home + "/.cache/uscope/unwind";
}

UnwindCache UnwindCache::open_default() {
  return UnwindCache(default_dir());
}

UnwindCache::UnwindCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

std::string UnwindCache::path_of(const std::string& key) const {
  // Keys are "build-id:<hex>" or "file:<dev>:<ino>:<mtime>": only ':' needs replacing. Two keys
  // that map to one name cannot mix up: the file names its key.
  std::string name;
  for (char c : key.substr(0, 200))
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return dir_ + "/" + name + kSuffix;
}

std::optional<UnwindTable> UnwindCache::load(const std::string& key) {
  const std::string path = path_of(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::vector<uint8_t> bytes;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1ll << 32);
  if (ok) {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ok = got == bytes.size();
  }
  ::close(fd);
  if (!ok) return std::nullopt;
  auto t = parse_unwind_table(bytes, key);
  if (!t) return std::nullopt;                    // rebuilt and overwritten by the caller's store
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // most recently used; fails harmlessly read-only
  return std::move(*t);
}

Result<void> UnwindCache::store(const std::string& key, const UnwindTable& table) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return fail_errno(ec.value(), "cannot create unwind cache {}: {}", dir_, ec.message());
  static std::atomic<unsigned> counter{0};
  const std::string path = path_of(key);
  const std::string tmp = dir_ + "/.tmp." + std::to_string(getpid()) + "." +
                          std::to_string(counter++) + kSuffix + ".part";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail_errno(errno, "cannot write to unwind cache {}: {}", dir_, strerror(errno));
  const auto bytes = serialize_unwind_table(table, key);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  if (done != bytes.size() || !closed) {
    ::unlink(tmp.c_str());
    return fail_errno(write_errno, "cannot write {}: {}", tmp, strerror(write_errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return fail_errno(e, "cannot rename {} to {}: {}", tmp, path, strerror(e));
  }
  evict();
  return {};
}

void UnwindCache::evict() {
  struct Entry {
    fs::file_time_type mtime;
    uint64_t size;
    fs::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (auto it = fs::directory_iterator(dir_, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    std::error_code e2;
    auto mtime = it->last_write_time(e2);
    if (e2 || !it->is_regular_file(e2)) continue;
    // A writer that died before its rename leaves its temporary file: gone after an hour.
    if (name.starts_with(".tmp.")) {
      if (now - mtime > std::chrono::hours(1)) fs::remove(it->path(), e2);
      continue;
    }
    if (!name.ends_with(kSuffix)) continue;
    uint64_t size = it->file_size(e2);
    if (e2) continue;
    entries.push_back({mtime, size, it->path()});
    total += size;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
  for (const auto& e : entries) {
    if (total <= max_bytes_) break;
    if (fs::remove(e.path, ec)) total -= e.size;
  }
}

}  // namespace uscope
