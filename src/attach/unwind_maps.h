#pragma once
// The unwinder's shared maps (bpf/unwind.h), created once per session through unwind_maps.bpf.c
// and handed to every BPF object that walks stacks (BpfObject::reuse_map, before it loads), kept
// true to the processes it covers:
//   - load_process(pid) reads /proc/PID/maps and puts each executable range in the LPM trie with
//     its object's table (built once per object and session, by build-id; tables are shared by
//     every process that maps the object), frame pointers for JIT code and objects without CFI;
//   - the walker asks for a process it meets without tables, or at a pc in no known range (a
//     dlopen, a new thread's JIT), through the request ring: a caller polls request_fd() and
//     hands what it reads to load_process / forget (collect/unwind_requests.h). Maps are re-read
//     on demand rather than followed through PERF_RECORD_MMAP2: nothing is missed when records
//     are lost, and a process that maps nothing new costs nothing;
//   - exec and exit are seen by two BTF tracepoints, which mark the process stale or drop it.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attach/bpf_loader.h"
#include "bpf/unwind.h"
#include "discover/unwind_cache.h"
#include "discover/unwind_table.h"
#include "util/result.h"

struct bpf_link;

namespace uscope {

class ObjectStore;
class Process;
class StoredObject;

// What the tables cost and where they came from, for -v and the benchmarks.
struct UnwindLoadStats {
  size_t processes = 0;              // loaded now
  size_t tables = 0;                 // objects with a table in the maps
  size_t frame_pointer_objects = 0;  // objects mapped without CFI: walked by frame pointer
  size_t failed = 0;         // objects whose table could not be built or loaded (see errors)
  uint64_t rows = 0;         // rows in the maps
  uint64_t table_bytes = 0;  // bytes of table entries in the maps (excluding map overhead)
  size_t rules = 0;          // distinct rules
  size_t built = 0, from_cache = 0;  // tables built from CFI / read from the cache this session
  std::chrono::microseconds build_time{0}, cache_time{0};
  size_t mapping_keys = 0;          // LPM entries
  std::vector<std::string> errors;  // one line per object that failed, first few
  size_t python_processes = 0;      // processes whose Python frames were read, this session
  size_t java_processes = 0;        // processes whose Java frames were read, this session
  size_t v8_processes = 0;          // processes whose JavaScript frames were named (bpf/v8.h)
};

// What became of a process's managed runtime (a Python interpreter, a JVM) when its mappings were
// loaded: found and checked (its frames are read), or found and refused (why; native frames
// only).
using RuntimeNoteHandler = std::function<void(pid_t pid, const std::string& line)>;

class UnwindMaps {
 public:
  // `store` opens the objects (shared with the symbolizer); `cache`: nullopt, no disk cache.
  static Result<std::unique_ptr<UnwindMaps>> create(std::shared_ptr<ObjectStore> store,
                                                    std::optional<UnwindCache> cache);
  ~UnwindMaps();
  UnwindMaps(const UnwindMaps&) = delete;
  UnwindMaps& operator=(const UnwindMaps&) = delete;

  // Before `object` loads: its copies of the shared maps become these.
  Result<void> share_with(BpfObject& object) const;
  // Before `object` loads, when it will walk no stacks: its copies of the maps shrink to a slot.
  static Result<void> leave_unused(BpfObject& object);

  // Loads the tables of everything `pid` maps now, replacing what it had. A process that has
  // gone is forgotten and reported as such.
  Result<void> load_process(pid_t pid);
  // Called once per process with a Python interpreter or a JVM: "python3.11 (pid 5): Python
  // 3.11.2 frames", "java (pid 7): Java frames (HotSpot 17.0.15+6-Debian-1deb12u1)", or why they
  // are not read.
  void on_runtime(RuntimeNoteHandler handler) { on_runtime_ = std::move(handler); }
  // Looks again for the JVMs that were starting when their mappings were loaded (their tables
  // not yet filled in): at most every kRuntimeRetry, for kRuntimeTries tries, then says why not.
  void retry_runtimes();

  // A process about to exec (a -c command uscope forked): its exec asks for its tables at once,
  // rather than at its first walk. The tables of `files` (discover/library_names.h's
  // startup_files) and the vDSO's are loaded now: each costs the kernel an RCU grace period
  // (~15 ms here) to put in, which after the exec would be that long of stacks cut short.
  Result<void> expect_exec(pid_t pid, std::span<const std::string> files = {});
  // Drops what `pid` had (it exited).
  void forget(pid_t pid);

  // The request ring's map fd (bpf/unwind.h's unwind_request records).
  int request_ring_fd() const;

  // The per-CPU unwind_stats array (bpf/unwind.h's enum unwind_stat).
  int stats_map_fd() const;
  const UnwindLoadStats& stats() const { return stats_; }

 private:
  UnwindMaps(BpfObject object, std::shared_ptr<ObjectStore> store,
             std::optional<UnwindCache> cache);
  struct Table {
    uint32_t id = UNWIND_TABLE_FP;  // or UNWIND_TABLE_PENDING when it failed
    uint64_t base = 0;              // link-time address the table's offsets count from
    uint32_t pages = 0;             // its page entries
  };
  // The table of an object (built or read once per session), loaded into the maps.
  Table table_of(StoredObject& object, const std::string& display_path);
  const Table& vdso_table();
  Table install(const UnwindTable& table, const std::string& what);
  Table failed(const std::string& what, const Error& e);
  std::optional<uint32_t> rule_index(const UnwindRule& rule);
  void remove_keys(pid_t pid);
  // Finds, checks and loads into python_procs the interpreter `process` runs, if any.
  void load_python(const Process& process);
  // Finds, checks and loads into hotspot_procs the JVM `process` runs, if any.
  void load_hotspot(const Process& process);
  // The same for V8 (node): its layout into v8_procs. Its notes go to on_runtime's handler.
  void load_v8(const Process& process);
  // Tells every walker that unwind_procs or unwind_mappings changed (bpf/unwind_maps.bpf.h's
  // unwind_generation): what a CPU remembered of a process is looked up again.
  void changed();

  BpfObject object_;
  std::shared_ptr<ObjectStore> store_;
  std::optional<UnwindCache> cache_;
  std::vector<bpf_link*> links_;
  std::map<std::string, Table> tables_;  // by StoredObject::key()
  std::optional<Table> vdso_;
  uint64_t vdso_link_base_ = 0;
  std::map<UnwindRule, uint32_t> rules_;
  std::map<pid_t, std::vector<unwind_mapping_key>> keys_;  // what each process has in the trie
  // Processes whose interpreter was looked for, by the start of the mapping it was looked for in
  // (0: none found): a reload after a dlopen does not look again unless it moved (an exec).
  std::map<pid_t, uint64_t> python_looked_;
  // The same for JVMs (libjvm.so's first mapping), once found and loaded or refused for good.
  std::map<pid_t, uint64_t> hotspot_looked_;
  struct RuntimeRetry {
    std::chrono::steady_clock::time_point next;
    int tries = 0;
  };
  std::map<pid_t, RuntimeRetry> hotspot_retry_;  // JVMs still starting
  RuntimeNoteHandler on_runtime_;
  // The same for V8, by a sum of where the objects named for node start (0: none).
  std::map<pid_t, uint64_t> v8_looked_;
  UnwindLoadStats stats_;
  volatile uint64_t* generation_ = nullptr;  // unwind_generation, mmapped
  size_t generation_bytes_ = 0;
};

}  // namespace uscope
