#include "symbolize/perf_map.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "util/unique_fd.h"

namespace uscope {
namespace {

constexpr std::string_view kBlank = " \t\r\v\f";

// One hex number at the front of `s` (an optional 0x, at most 16 digits), consumed.
std::optional<uint64_t> take_hex(std::string_view& s) {
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  uint64_t value = 0;
  size_t digits = 0;
  for (; digits < s.size(); ++digits) {
    char c = s[digits];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) break;
    if (digits == 16) return std::nullopt;  // does not fit in 64 bits
    value = value << 4 | static_cast<uint64_t>(d);
  }
  if (digits == 0) return std::nullopt;
  s.remove_prefix(digits);
  return value;
}

// Whitespace between fields: at least one blank, all of them consumed.
bool take_blanks(std::string_view& s) {
  size_t n = s.find_first_not_of(kBlank);
  if (n == 0) return false;
  s.remove_prefix(n == std::string_view::npos ? s.size() : n);
  return true;
}

struct ParsedLine {
  uint64_t start, end;
  std::string_view name;
};

std::optional<ParsedLine> parse_line(std::string_view line) {
  line.remove_prefix(std::min(line.find_first_not_of(kBlank), line.size()));
  auto start = take_hex(line);
  if (!start || !take_blanks(line)) return std::nullopt;
  auto size = take_hex(line);
  if (!size || !take_blanks(line)) return std::nullopt;
  line.remove_suffix(line.size() - (line.find_last_not_of(kBlank) + 1));
  if (line.empty() || *size > UINT64_MAX - *start) return std::nullopt;
  return ParsedLine{*start, *start + *size, line};
}

// The fields of a /proc/PID/status line such as "NSpid:\t4242\t1" or "Uid:\t1000\t1000\t...".
std::vector<std::string_view> status_fields(std::string_view status, std::string_view key) {
  std::vector<std::string_view> fields;
  size_t at = 0;
  while (at < status.size()) {
    size_t eol = std::min(status.find('\n', at), status.size());
    std::string_view line = status.substr(at, eol - at);
    at = eol + 1;
    if (!line.starts_with(key) || line.size() <= key.size() || line[key.size()] != ':') continue;
    std::string_view rest = line.substr(key.size() + 1);
    while (true) {
      rest.remove_prefix(std::min(rest.find_first_not_of(kBlank), rest.size()));
      if (rest.empty()) break;
      size_t end = std::min(rest.find_first_of(kBlank), rest.size());
      fields.push_back(rest.substr(0, end));
      rest.remove_prefix(end);
    }
    break;
  }
  return fields;
}

Result<std::string> read_text(int fd, const std::string& what) {
  std::string text;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail_errno(errno, "cannot read {}: {}", what, std::strerror(errno));
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
  }
}

// Opens `path` below `root` as the process that owns `root` would: openat2's RESOLVE_IN_ROOT makes
// absolute symlinks (/tmp -> /private/tmp) resolve inside the process's root, not ours. Kernels
// before 5.6 have no openat2: then symlinks in the last component are refused instead.
int open_in_root(const std::string& root, const std::string& path) {
  UniqueFd dir(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return -1;
  // O_NONBLOCK: a FIFO put where the map should be must not hang the profiler.
  open_how how{};
  how.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, dir.get(), path.c_str(), &how, sizeof how);
  if (fd < 0 && errno == ENOSYS)
    fd = ::openat(dir.get(), path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  return static_cast<int>(fd);
}

}  // namespace

PerfMap PerfMap::parse(std::string_view text) {
  PerfMap map;
  std::vector<std::string_view> names;
  // Code ranges so far, disjoint: start -> (end, index into names). A new line cuts what it
  // overlaps, keeping the parts of older ranges before and after it, as perf does.
  struct Range {
    uint64_t end;
    size_t name;
  };
  std::map<uint64_t, Range> ranges;
  size_t at = 0;
  while (at < text.size()) {
    size_t eol = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, eol - at);
    at = eol + 1;
    if (line.find_first_not_of(kBlank) == std::string_view::npos) continue;
    auto parsed = parse_line(line);
    if (!parsed) {
      ++map.malformed_;
      continue;
    }
    if (parsed->start == parsed->end) continue;  // holds no address: nothing to name
    names.push_back(parsed->name);
    uint64_t start = parsed->start, end = parsed->end;
    auto it = ranges.lower_bound(start);
    if (it != ranges.begin()) {
      auto before = std::prev(it);
      if (before->second.end > start) {
        Range old = before->second;
        before->second.end = start;
        if (old.end > end) ranges.emplace(end, old);
      }
    }
    while (it != ranges.end() && it->first < end) {
      Range old = it->second;
      it = ranges.erase(it);
      if (old.end > end) {
        ranges.emplace(end, old);
        break;
      }
    }
    ranges.emplace(start, Range{end, names.size() - 1});
  }
  map.symbols_.reserve(ranges.size());
  for (const auto& [start, r] : ranges)
    map.symbols_.push_back({start, r.end - start, std::string(names[r.name])});
  return map;
}

Result<std::optional<PerfMap>> PerfMap::read(pid_t pid) {
  std::string proc = fmt::format("/proc/{}", pid);
  UniqueFd status_fd(::open((proc + "/status").c_str(), O_RDONLY | O_CLOEXEC));
  if (!status_fd.valid())
    return fail_errno(errno, "cannot read {}/status: {}", proc,
                      errno == ENOENT ? "no such process" : std::strerror(errno));
  auto status = read_text(status_fd.get(), proc + "/status");
  if (!status) return tl::unexpected(status.error());
  // Kernels before 4.1 have no NSpid line; their processes all name files by the global PID.
  auto nspid = status_fields(*status, "NSpid");
  std::string own_pid = nspid.empty() ? std::to_string(pid) : std::string(nspid.back());

  std::string path = fmt::format("tmp/perf-{}.map", own_pid);
  std::string shown = fmt::format("{}/root/{}", proc, path);
  UniqueFd fd(open_in_root(proc + "/root", path));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::optional<PerfMap>();
    return fail_errno(errno, "cannot open {}: {}", shown, std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return fail_errno(errno, "cannot stat {}: {}", shown, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail("{} is not a regular file; not read", shown);
  // /tmp is shared: another user could plant a map for a PID before the process starts. Only the
  // process's own users (real or effective) and root can write names it is known by.
  auto uids = status_fields(*status, "Uid");
  bool owner_ok = st.st_uid == 0;
  for (size_t i = 0; i < std::min<size_t>(uids.size(), 2); ++i)
    owner_ok = owner_ok || uids[i] == std::to_string(st.st_uid);
  if (!owner_ok)
    return fail("{} is owned by uid {}, not by the process's user or root; not read", shown,
                st.st_uid);
  auto text = read_text(fd.get(), shown);
  if (!text) return tl::unexpected(text.error());
  return std::optional<PerfMap>(parse(*text));
}

const PerfMapSymbol* PerfMap::find(uint64_t address) const {
  auto next = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                               [](uint64_t a, const PerfMapSymbol& s) { return a < s.start; });
  if (next == symbols_.begin()) return nullptr;
  const PerfMapSymbol& s = *std::prev(next);
  return address - s.start < s.size ? &s : nullptr;
}

}  // namespace uscope
