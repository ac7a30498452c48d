#include "discover/process.h"

#include <dirent.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

#include "util/unique_fd.h"

namespace uscope {

namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Consumes digits of `base` from the front of `s`; false on no digits or overflow of `max`.
bool take_number(std::string_view& s, unsigned base, uint64_t max, uint64_t& out) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    int d = base == 16 ? hex_digit(s[i]) : (s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : -1);
    if (d < 0) break;
    if (v > (max - static_cast<uint64_t>(d)) / base) return false;
    v = v * base + static_cast<uint64_t>(d);
  }
  if (i == 0) return false;
  s.remove_prefix(i);
  out = v;
  return true;
}

bool take_char(std::string_view& s, char c) {
  if (s.empty() || s[0] != c) return false;
  s.remove_prefix(1);
  return true;
}

// The kernel's field separators are single spaces, but be lenient about runs of them.
bool take_spaces(std::string_view& s) {
  size_t n = s.find_first_not_of(' ');
  if (n == 0) return false;
  s.remove_prefix(n == std::string_view::npos ? s.size() : n);
  return true;
}

// The kernel escapes '\n' in mapped paths as "\012" so that each mapping stays on one line.
std::string unescape_path(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.substr(i, 4) == "\\012") {
      out += '\n';
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

Result<Mapping> parse_line(std::string_view line) {
  Mapping m;
  std::string_view s = line;
  constexpr uint64_t u64max = std::numeric_limits<uint64_t>::max();
  constexpr uint64_t u32max = std::numeric_limits<uint32_t>::max();
  if (!take_number(s, 16, u64max, m.start) || !take_char(s, '-') ||
      !take_number(s, 16, u64max, m.end))
    return fail("bad address range");
  if (m.end < m.start) return fail("range end {:#x} is below its start {:#x}", m.end, m.start);
  if (!take_spaces(s)) return fail("expected a space after the address range");
  if (s.size() < 4) return fail("truncated permissions");
  m.perms = std::string(s.substr(0, 4));
  s.remove_prefix(4);
  for (size_t i = 0; i < 4; ++i) {
    static constexpr std::string_view allowed[] = {"r-", "w-", "x-", "ps"};
    if (allowed[i].find(m.perms[i]) == std::string_view::npos)
      return fail("bad permissions '{}'", m.perms);
  }
  uint64_t major = 0, minor = 0;
  if (!take_spaces(s) || !take_number(s, 16, u64max, m.offset)) return fail("bad offset");
  if (!take_spaces(s) || !take_number(s, 16, u32max, major) || !take_char(s, ':') ||
      !take_number(s, 16, u32max, minor))
    return fail("bad device");
  m.dev_major = static_cast<uint32_t>(major);
  m.dev_minor = static_cast<uint32_t>(minor);
  if (!take_spaces(s) || !take_number(s, 10, u64max, m.inode)) return fail("bad inode");
  if (!s.empty() && !take_spaces(s)) return fail("junk after inode");
  if (s.ends_with(kDeletedSuffix)) {
    s.remove_suffix(kDeletedSuffix.size());
    m.deleted = true;
  }
  m.path = unescape_path(s);
  return m;
}

std::string_view strip_deleted(std::string_view path) {
  if (path.ends_with(kDeletedSuffix)) path.remove_suffix(kDeletedSuffix.size());
  return path;
}

Result<std::string> read_maps_text(pid_t pid) {
  std::string path = fmt::format("/proc/{}/maps", pid);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int e = errno;
    if (e == ENOENT || e == ESRCH) return fail_errno(e, "no process with PID {}", pid);
    if (e == EACCES || e == EPERM)
      return fail_errno(e, "cannot read {}: permission denied (need CAP_SYS_PTRACE)", path);
    return fail_errno(e, "cannot read {}: {}", path, std::strerror(e));
  }
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      int e = errno;
      if (e == EINTR) continue;
      if (e == ESRCH) return fail_errno(e, "process {} exited while its maps were read", pid);
      return fail_errno(e, "cannot read {}: {}", path, std::strerror(e));
    }
    text.append(buf, static_cast<size_t>(n));
  }
  // Once a process has exited its maps read as empty (or stop early), not as an error.
  if (!process_alive(pid))
    return fail_errno(ESRCH, "process {} exited while its maps were read", pid);
  if (text.empty())
    return fail("process {} has no memory mappings (a kernel thread or a zombie)", pid);
  return text;
}

std::string read_small_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  std::string text;
  char buf[256];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

std::string read_link(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return {};
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

Result<std::vector<Mapping>> parse_proc_maps(std::string_view text) {
  std::vector<Mapping> out;
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    auto m = parse_line(line);
    if (!m) return fail("maps line {}: {}", line_no, m.error().message);
    out.push_back(std::move(*m));
  }
  return out;
}

std::optional<uint64_t> MappedObject::address_of_offset(uint64_t offset) const {
  std::optional<uint64_t> found;
  for (const auto& m : mappings) {
    if (offset < m.offset || offset - m.offset >= m.end - m.start) continue;
    uint64_t addr = m.start + (offset - m.offset);
    // Where a page is mapped twice, the executable copy is the one code runs from.
    if (m.executable()) return addr;
    if (!found) found = addr;
  }
  return found;
}

std::optional<uint64_t> MappedObject::offset_of_address(uint64_t addr) const {
  for (const auto& m : mappings) {
    if (addr < m.start || addr >= m.end) continue;
    uint64_t delta = addr - m.start;
    if (m.offset > std::numeric_limits<uint64_t>::max() - delta) return std::nullopt;
    return m.offset + delta;
  }
  return std::nullopt;
}

Result<Process> Process::open(pid_t pid) {
  if (pid <= 0) return fail("invalid PID {}", pid);
  auto text = read_maps_text(pid);
  if (!text) return tl::unexpected(text.error());
  // Before the maps: an exec between the two shows as a changed identity later, never as maps
  // of one program attributed to another.
  ExeIdentity exe = exe_identity(pid);
  auto p = from_maps(pid, *text);
  if (!p) return with_context(fmt::format("process {}", pid), p.error());
  p->exe_ = exe;
  if (p->main_index_ < p->objects_.size()) {
    MappedObject& main = p->objects_[p->main_index_];
    main.started_as = started_path(pid, main);
  }
  return p;
}

namespace {

bool same_file(const std::string& path, const MappedObject& o) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && st.st_ino == o.inode &&
         major(st.st_dev) == o.dev_major && minor(st.st_dev) == o.dev_minor;
}

// `path` (another name of o's file) when its file name differs from o's, as a symlink's does.
std::string other_name(const std::string& path, const MappedObject& o) {
  std::string_view base = std::string_view(path).substr(path.rfind('/') + 1);
  std::string_view file_base = std::string_view(o.path).substr(o.path.rfind('/') + 1);
  return base == file_base ? "" : path;
}

}  // namespace

void Process::name_started_as(const std::string& path) {
  if (main_index_ >= objects_.size() || path.empty()) return;
  MappedObject& main = objects_[main_index_];
  if (main.started_as.empty() && same_file(path, main)) main.started_as = other_name(path, main);
}

std::string started_path(pid_t pid, const MappedObject& main) {
  std::string cmdline = read_small_file(fmt::format("/proc/{}/cmdline", pid));
  std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
  if (argv0.empty()) return "";
  std::vector<std::string> candidates;
  if (argv0.front() == '/') {
    candidates.push_back(argv0);
  } else if (argv0.find('/') != std::string::npos) {
    std::string cwd = read_link(fmt::format("/proc/{}/cwd", pid));
    if (!cwd.empty())
      candidates.push_back((std::filesystem::path(cwd) / argv0).lexically_normal().string());
  } else {
    // Its $PATH is in its environment, which it may have changed since: the usual directories
    // and uscope's own $PATH stand in, and the inode check below keeps a wrong guess out.
    std::string dirs = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    if (const char* path = getenv("PATH")) dirs = std::string(path) + ":" + dirs;
    for (size_t at = 0; at <= dirs.size();) {
      size_t end = std::min(dirs.find(':', at), dirs.size());
      if (end > at) candidates.push_back(dirs.substr(at, end - at) + "/" + argv0);
      at = end + 1;
    }
  }
  for (const std::string& c : candidates)
    if (same_file(c, main)) return other_name(c, main);
  return "";
}

Result<Process> Process::from_maps(pid_t pid, std::string_view maps_text, std::string proc_root) {
  auto maps = parse_proc_maps(maps_text);
  if (!maps) return tl::unexpected(maps.error());
  return from_mappings(pid, std::move(*maps), std::move(proc_root));
}

Process Process::from_mappings(pid_t pid, std::vector<Mapping> mappings, std::string proc_root) {
  Process p;
  p.pid_ = pid;
  p.proc_root_ = std::move(proc_root);
  p.mappings_ = std::move(mappings);

  std::map<std::tuple<uint32_t, uint32_t, uint64_t, std::string_view>, size_t> index;
  for (const auto& m : p.mappings_) {
    if (!m.is_file()) continue;
    auto key = std::make_tuple(m.dev_major, m.dev_minor, m.inode, std::string_view(m.path));
    auto [it, added] = index.try_emplace(key, p.objects_.size());
    if (added) {
      MappedObject o;
      o.path = m.path;
      o.inode = m.inode;
      o.dev_major = m.dev_major;
      o.dev_minor = m.dev_minor;
      o.deleted = m.deleted;
      p.objects_.push_back(std::move(o));
    }
    p.objects_[it->second].mappings.push_back(m);
  }

  std::string pid_dir = fmt::format("{}/{}", p.proc_root_, pid);
  for (auto& o : p.objects_) {
    const Mapping& first = o.mappings.front();
    std::string map_file = fmt::format("{}/map_files/{:x}-{:x}", pid_dir, first.start, first.end);
    // Opening a map_files link needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE); without it the
    // path through the process's root is the best we have, though it cannot reach deleted files.
    if (::faccessat(AT_FDCWD, map_file.c_str(), R_OK, AT_EACCESS) == 0)
      o.open_path = std::move(map_file);
    else
      o.open_path = pid_dir + "/root" + o.path;
  }

  std::string exe = read_link(pid_dir + "/exe");
  std::string_view exe_path = strip_deleted(exe);
  for (size_t i = 0; i < p.objects_.size() && !exe_path.empty(); ++i) {
    if (p.objects_[i].path == exe_path) {
      p.main_index_ = i;
      break;
    }
  }
  return p;
}

const MappedObject* Process::main_object() const {
  return main_index_ < objects_.size() ? &objects_[main_index_] : nullptr;
}

const MappedObject* Process::object_containing(uint64_t addr) const {
  for (const auto& o : objects_)
    for (const auto& m : o.mappings)
      if (addr >= m.start && addr < m.end) return &o;
  return nullptr;
}

std::string Process::comm() const {
  std::string s = read_small_file(fmt::format("{}/{}/comm", proc_root_, pid_));
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

ExeIdentity exe_identity(pid_t pid) {
  struct stat st {};
  if (::stat(fmt::format("/proc/{}/exe", pid).c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino};
}

bool process_exited(pid_t pid) {
  if (!process_alive(pid)) return true;
  // The state follows the command name, which may hold spaces and parentheses: take the last ')'.
  std::string stat = read_small_file(fmt::format("/proc/{}/stat", pid));
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return !process_alive(pid);
  char state = stat[close + 2];
  return state == 'Z' || state == 'X';
}

bool process_exiting(pid_t pid) {
  if (process_exited(pid)) return true;
  // A task without an mm (exit_mm() has run) reads as "0 0 0 0 0 0 0"; a live one never does.
  const std::string statm = read_small_file(fmt::format("/proc/{}/statm", pid));
  return !statm.empty() && statm.find_first_not_of("0 \n") == std::string::npos;
}

std::optional<uint64_t> load_bias(const MappedObject& o, const ElfFile& elf) {
  auto text = elf.section(".text");
  if (!text) return std::nullopt;
  auto at = o.address_of_offset(text->offset);
  if (!at) return std::nullopt;
  return *at - text->addr;
}

std::set<pid_t> process_task_ids(pid_t pid) {
  std::set<pid_t> tids;
  std::string dir = fmt::format("/proc/{}/task", pid);
  DIR* d = opendir(dir.c_str());
  if (!d) return tids;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    tids.insert(static_cast<pid_t>(std::strtol(e->d_name, nullptr, 10)));
  }
  closedir(d);
  return tids;
}

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) == 0 || errno == EPERM) return true;
  struct stat st;
  return ::stat(fmt::format("/proc/{}", pid).c_str(), &st) == 0;
}

Result<CpuTime> parse_proc_stat_cpu_time(std::string_view stat_text, long ticks_per_second) {
  if (ticks_per_second <= 0) return fail("clock ticks per second must be positive");
  size_t close = stat_text.rfind(')');
  if (close == std::string_view::npos) return fail("/proc/PID/stat: no ')' after the command name");
  // After "pid (comm) ": state is field 3, utime field 14 and stime field 15 (proc(5)).
  std::string_view rest = stat_text.substr(close + 1);
  std::vector<std::string_view> fields;
  size_t pos = 0;
  while (fields.size() < 13) {
    pos = rest.find_first_not_of(" \n", pos);
    if (pos == std::string_view::npos) break;
    size_t end = rest.find_first_of(" \n", pos);
    fields.push_back(rest.substr(pos, end == std::string_view::npos ? end : end - pos));
    pos = end;
  }
  if (fields.size() < 13)
    return fail("/proc/PID/stat: {} fields after the command name, need 13", fields.size());
  auto ticks = [&](std::string_view f, const char* name) -> Result<uint64_t> {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || p != f.data() + f.size())
      return fail("/proc/PID/stat: {} '{}' is not a number", name, f);
    return v;
  };
  auto utime = ticks(fields[11], "utime");
  if (!utime) return tl::unexpected(utime.error());
  auto stime = ticks(fields[12], "stime");
  if (!stime) return tl::unexpected(stime.error());
  const uint64_t ns_per_tick = 1'000'000'000 / static_cast<uint64_t>(ticks_per_second);
  return CpuTime{*utime * ns_per_tick, *stime * ns_per_tick};
}

std::optional<std::string> process_command_line(pid_t pid) {
  std::string text = read_small_file(fmt::format("/proc/{}/cmdline", pid));
  if (text.empty()) return std::nullopt;  // gone, unreadable, or a kernel thread
  if (text.back() == '\0') text.pop_back();
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

Result<CpuTime> process_cpu_time(pid_t pid) {
  std::string path = fmt::format("/proc/{}/stat", pid);
  std::string text = read_small_file(path);
  if (text.empty()) return fail("cannot read {}: the process is gone or not readable", path);
  auto t = parse_proc_stat_cpu_time(text, sysconf(_SC_CLK_TCK));
  if (!t) return with_context(path, t.error());
  return t;
}

Result<size_t> read_process_memory(pid_t pid, uint64_t addr, std::span<uint8_t> out) {
  iovec local{out.data(), out.size()};
  iovec remote{reinterpret_cast<void*>(addr), out.size()};
  ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
  if (n < 0) {
    int e = errno;
    return fail_errno(e, "cannot read {} bytes at {:#x} in process {}: {}", out.size(), addr, pid,
                      std::strerror(e));
  }
  return static_cast<size_t>(n);
}

}  // namespace uscope
