#pragma once
// A running process as a tracer sees it: /proc/PID/maps parsed into mappings, grouped into the
// objects mapped, each openable through /proc/PID/map_files (works when the file was deleted or
// lives in another mount namespace) or /proc/PID/root.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/elf_file.h"
#include "util/result.h"

namespace uscope {

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;  // file offset of start
  std::string perms;    // "r-xp"
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  std::string path;      // as shown in maps, without " (deleted)"; may be "[heap]" or empty
  bool deleted = false;  // maps said "(deleted)"

  bool executable() const { return perms.size() > 2 && perms[2] == 'x'; }
  bool is_file() const { return inode != 0 && !path.empty() && path[0] == '/'; }
};

// Parses the text of /proc/PID/maps. Malformed lines are an error naming the line number.
Result<std::vector<Mapping>> parse_proc_maps(std::string_view text);

// One file mapped into a process (all mappings with the same device+inode+path).
struct MappedObject {
  std::string path;  // path as the process sees it
  // Path uscope opens: /proc/PID/map_files/<start>-<end> or /proc/PID/root/...
  std::string open_path;
  uint64_t inode = 0;
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  bool deleted = false;
  std::vector<Mapping> mappings;  // in address order
  // The main executable under the path the process was started by, when that is another name
  // for the same file (a symlink: /usr/bin/redis-server for redis-check-rdb); "" otherwise.
  // The kernel shows only the resolved file in maps and /proc/PID/exe.
  std::string started_as;

  // Runtime address of file offset `offset`, or nullopt if that part of the file is not mapped.
  std::optional<uint64_t> address_of_offset(uint64_t offset) const;
  // File offset of runtime address `addr`, or nullopt if not in this object.
  std::optional<uint64_t> offset_of_address(uint64_t addr) const;
};

// Which executable a process runs, to notice that it exec'd another one: (device, inode) of
// /proc/PID/exe. Both 0 when it could not be read.
struct ExeIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  bool known() const { return dev != 0 || ino != 0; }
  bool operator==(const ExeIdentity&) const = default;
};
ExeIdentity exe_identity(pid_t pid);

class Process {
 public:
  // Reads /proc/PID/maps; fails with a clear message if the PID does not exist or is not readable.
  static Result<Process> open(pid_t pid);
  // For tests: a process model from maps text, with `proc_root` standing in for /proc.
  static Result<Process> from_maps(pid_t pid, std::string_view maps_text,
                                   std::string proc_root = "/proc");
  // From mappings read elsewhere (the kernel's, sent as the process exited: collect/exit_maps.h),
  // in address order. Its objects open through /proc only while the process lives; after, through
  // their paths (symbolize/symbolizer.cc checks device and inode).
  static Process from_mappings(pid_t pid, std::vector<Mapping> mappings,
                               std::string proc_root = "/proc");

  pid_t pid() const { return pid_; }
  const std::vector<Mapping>& mappings() const { return mappings_; }
  // File-backed objects, in order of first mapping (main executable first).
  const std::vector<MappedObject>& objects() const { return objects_; }
  // The main executable (/proc/PID/exe), if it is mapped.
  const MappedObject* main_object() const;
  const MappedObject* object_containing(uint64_t addr) const;
  std::string comm() const;  // /proc/PID/comm without newline, "" if gone
  // The executable it ran when opened (unknown for a process model from maps text).
  const ExeIdentity& exe() const { return exe_; }
  // Names the main executable as started by `path` (MappedObject::started_as), when that is the
  // same file under another name and it has none yet: -c's command line, or what a read while
  // the process lived found.
  void name_started_as(const std::string& path);

 private:
  pid_t pid_ = 0;
  std::string proc_root_;
  std::vector<Mapping> mappings_;
  std::vector<MappedObject> objects_;
  // Index into objects_, found once at construction: the process may exit before it is asked.
  size_t main_index_ = 0;
  ExeIdentity exe_;
};

// The load bias of `elf` mapped as `o` (runtime minus link-time addresses): where its .text's file
// offset is mapped, less .text's link-time address; nullopt when .text is absent or not mapped.
std::optional<uint64_t> load_bias(const MappedObject& o, const ElfFile& elf);

// The path `pid` was started by (argv[0], found as its shell would: through its cwd, or $PATH),
// when it is another name of the file `main` (same device and inode) than main.path; "" when
// it is the same name or cannot be found.
std::string started_path(pid_t pid, const MappedObject& main);

// True if the process still exists (kill(pid, 0) or /proc/PID present).
bool process_alive(pid_t pid);
// Its threads' ids now (/proc/PID/task); empty when it is gone.
std::set<pid_t> process_task_ids(pid_t pid);
// True if it has exited, though its parent may not have reaped it yet (a zombie).
bool process_exited(pid_t pid);
// True if it has exited, or is exiting: its memory already released (/proc/PID/statm all zero),
// its exit not yet complete. A read of its memory that failed then lost nothing.
bool process_exiting(pid_t pid);

// CPU time a process has used, all its threads (live and exited) together, as /proc/PID/stat
// counts it: utime and stime in clock ticks (USER_HZ, 10 ms on Linux), so a reading is good to a
// tick per field.
struct CpuTime {
  uint64_t user_ns = 0;
  uint64_t system_ns = 0;
  uint64_t total_ns() const { return user_ns + system_ns; }
};
// Parses the text of /proc/PID/stat (comm may hold spaces and parentheses); `ticks_per_second`
// is sysconf(_SC_CLK_TCK). Fails naming what was malformed.
Result<CpuTime> parse_proc_stat_cpu_time(std::string_view stat_text, long ticks_per_second);
// Reads /proc/PID/stat; fails when the process is gone (or reaped) or unreadable.
Result<CpuTime> process_cpu_time(pid_t pid);

// The arguments process `pid` was started with (/proc/PID/cmdline), joined by spaces; nullopt when
// the process is gone or not readable. The process may have rewritten them (setproctitle).
std::optional<std::string> process_command_line(pid_t pid);

// Reads up to out.size() bytes of process `pid` at `addr` (process_vm_readv: never writes, never
// stops the process); returns how many bytes were readable from the start.
Result<size_t> read_process_memory(pid_t pid, uint64_t addr, std::span<uint8_t> out);

}  // namespace uscope
