#pragma once
// Runtime addresses of a process -> function names, in two steps kept apart as blazesym does:
// normalization (address -> object + file offset, normalize.h) and symbolization (file offset ->
// link-time address -> function). Processes' maps and objects' symbol tables are cached, so that
// stacks arriving in bulk from the kernel cost a lookup each, not a parse each.
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "discover/debug_info.h"
#include "discover/hotspot_runtime.h"
#include "discover/object_store.h"
#include "discover/process.h"
#include "symbolize/hotspot_code.h"
#include "symbolize/normalize.h"
#include "symbolize/python_code.h"
#include "symbolize/v8_code.h"

namespace uscope {

// Where a frame's name came from. The four ELF sources are told apart per symbol
// (discover/debug_info.cc: by which of libdwfl's files a symbol came from).
enum class SymbolOrigin : uint8_t {
  None,           // not named (see Frame::miss)
  Symtab,         // the object's .symtab
  Dynsym,         // its .dynsym only
  MiniDebugInfo,  // .gnu_debugdata
  DebugFile,      // a separate debug file (build-id or debuglink)
  PerfMap,        // /tmp/perf-PID.map: JIT code
  Kallsyms,       // the kernel
  Gopclntab,      // Go's own function table
  Python,         // a Python code object (symbolize/python_code.h): an interpreter frame
  Java,           // a HotSpot JVM's own structures (symbolize/hotspot_code.h): a Java frame
  V8,             // a V8 SharedFunctionInfo (symbolize/v8_code.h): a JavaScript frame
};

// A call inlined at a frame's address: the function whose code it is, and where in it.
struct InlinedCall {
  std::string function;  // demangled
  std::string file;      // source file, "" unless known
  int line = 0;          // 0 unless known
};

struct Frame {
  uint64_t address = 0;  // runtime address, as given (never the adjusted lookup address)
  std::string object;    // path as the process maps it, a pseudo name ("[vdso]"), "" if unmapped
  // The main executable as the process was started (a symlink to `object`); "" when the same.
  std::string started_as;
  uint64_t file_offset = 0;      // of `address` in `object`; 0 when `object` is no file
  std::string build_id;          // lowercase hex; "" when absent or the object could not be opened
  std::string function;          // demangled; "" when missed
  uint64_t function_offset = 0;  // address - function start
  FrameMiss miss = FrameMiss::None;
  SymbolOrigin origin = SymbolOrigin::None;
  std::string mangled;  // the name as in the symbol table, when it differs from `function`
  // With SymbolizerOptions::lines: the source position in `function` (for an address with inlined
  // calls, the call site of the outermost one), and the calls inlined at the address, innermost
  // first (inlined[0] is the code that ran), each with its own position.
  std::string file;
  int line = 0;
  std::vector<InlinedCall> inlined;
  // origin Java: the code that ran (interpreted, compiled by C1 or C2, a JNI wrapper, a stub) and
  // a compiled method's comp level (1-3 C1, 4 C2; 0 otherwise). `function` is the method that
  // holds the code ("HotLoop.hotMethod"), `inlined` the methods compiled into it at this pc; a
  // stub is named by its blob ("[jvm stub: StubRoutines (1)]").
  HotspotCodeKind java_kind = HotspotCodeKind::Stub;
  int comp_level = 0;

  // "malloc+0x14 (/usr/lib/x86_64-linux-gnu/libc.so.6)", a miss with its reason:
  // "0x7f12... ([unknown: no symbols] in /usr/lib/libfoo.so)", "0x10 [unmapped]".
  std::string describe() const;
};

struct SymbolizerOptions {
  // Where separate debug files are looked for when an object has no .symtab of its own.
  DebugSearchPaths debug;
  // Source file and line of each frame, and the calls inlined at it (profile --lines): reads
  // DWARF, which costs time and memory per object, so it is off unless asked for.
  bool lines = false;
  // Objects whose symbols stay cached; the least recently used beyond this are dropped.
  size_t max_objects = ObjectStore::kDefaultMaxObjects;
  // The object cache to use. Null: the process's shared store (ObjectStore::shared(), which the
  // planner and `list` use too) when `debug` and `max_objects` are the defaults, else a store of
  // this Symbolizer's own with them.
  std::shared_ptr<ObjectStore> objects;
  // Called when a process's maps can no longer be read (it exited), before its addresses are
  // given up: a source of maps kept from its exit (collect/exit_maps.h) delivers them to adopt().
  std::function<void()> catch_up;
  // The JVM a process runs (its VMStructs tables and where its code cache starts), for naming its
  // Java frames (bpf/hotspot.h); nullopt when it runs none that can be read. Empty:
  // discover/hotspot_runtime.h's find_hotspot_runtime.
  std::function<std::optional<HotspotRuntime>(const Process&)> hotspot;
};

// Whether a walked stack's value is a runtime's frame (bpf/unwind.h's tagged values: Python,
// HotSpot Java, V8), not an address.
inline bool is_interpreter_frame(uint64_t value) {
  return UNWIND_FRAME_TAG(value) != 0;
}

// Not thread-safe: one per consumer thread, or guard it.
class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {});
  Symbolizer(Symbolizer&&) noexcept;
  Symbolizer& operator=(Symbolizer&&) noexcept;
  ~Symbolizer();

  // A user stack, innermost frame first. Entries after the first are return addresses, which
  // point after their call and may already lie in the next function, so they are looked up at
  // address - 1; so is the first when `first_is_ip` is false (a stack whose IP was dropped).
  // An address outside the cached maps (a library dlopen()ed since) re-reads them, at most once
  // per call. Frames come back in input order, one per address.
  std::vector<Frame> symbolize(pid_t pid, std::span<const uint64_t> addresses, bool first_is_ip);
  // One exact address (an instruction pointer, a probe site).
  Frame symbolize(pid_t pid, uint64_t address);
  // A stack may hold runtimes' frames among its addresses: a Python frame (bpf/python.h's
  // PY_FRAME) comes back named by its code object (function = qualified name, file, line; object
  // "[python]"), a V8 frame (bpf/v8.h's V8_FRAME) by its function (name, script, line of its
  // start; object "[v8]"), a Java frame (bpf/hotspot.h's HS_FRAME_CODE, HS_FRAME_INTERP) by the
  // method that holds the code, with the methods inlined at the pc, tier and line (object
  // "[java]"). Their objects are read from the live process on first sight and cached:
  // read_runtime_code() reads a stack's now, so that they stay named after the process exits.
  void read_runtime_code(pid_t pid, std::span<const uint64_t> addresses);
  // Against a snapshot the caller already holds (or builds with Process::from_maps); the
  // process's maps are neither cached nor re-read, only the objects' symbols are.
  std::vector<Frame> symbolize(const Process& process, std::span<const uint64_t> addresses,
                               bool first_is_ip);

  // Reads and caches the maps of `pid` now, opens the objects its code maps and reads its perf
  // map, so that addresses of a process that exits before its events are symbolized are still
  // named. No-op when cached or unreadable.
  void remember(pid_t pid);

  // The maps a process had as it exited (collect/exit_maps.h): they replace any read earlier, and
  // serve its addresses from now on without /proc. The objects are opened now, by path. At most
  // kMaxExited are kept, the oldest dropped first: events trail their process's exit by
  // milliseconds, and a host-wide session sees every exit on the host.
  static constexpr size_t kMaxExited = 4096;
  void adopt(Process last);
  // -c: the path the command line named its program by, so that a process read only at its exit
  // (no command line left to read) is named as it was started.
  void started_as(pid_t pid, std::string path);

  // What could not be named for a reason a profile counts as a loss (sink/profile_summary.cc):
  // "java_code_gone", Java code frames whose nmethod the JVM flushed, its memory holding another
  // blob, before they were read (HotspotCodeCache::code_gone()); "java_method_reused", Methods
  // whose memory held two methods in the session (a class unloaded), whose interpreted frames
  // are unnamed (methods_reused()). Only nonzero counts.
  std::vector<std::pair<std::string, uint64_t>> losses() const;

  // Drops the cached maps and perf map of `pid`: call it when the process exits or exec()s, since
  // the same PID then names different (or no) mappings. Objects stay in the store; other
  // processes map the same files.
  void forget(pid_t pid);

  // JIT code: addresses in memory no file backs are named from the process's perf map
  // (/tmp/perf-PID.map in its mount namespace, symbolize/perf_map.h), read by remember() and
  // again when an address is not in the copy read last, so that a process that exits keeps the
  // names it wrote while it lived.

 private:
  // What was read from a process while it lived: its maps, the objects its code maps (held, so
  // that they outlive the process and the store's eviction), and its perf map.
  struct ProcessState;
  // An object as the maps name it, found in the store on first use. A failed open is kept, so
  // that an unreadable object costs one attempt, not one per frame.
  struct ObjectSlot {
    std::weak_ptr<StoredObject> object;
    bool unreadable = false;
  };
  // dev major, dev minor, inode: one file however many processes map it, under whatever path.
  using ObjectKey = std::tuple<uint32_t, uint32_t, uint64_t>;

  std::shared_ptr<StoredObject> load(const MappedObject& object);
  Frame resolve(const NormalizedAddress& n, uint64_t address, uint64_t lookup, ProcessState* state,
                bool& perf_map_reread);
  // The function at `file_offset` of `object` (`lookup` is address or address - 1).
  Frame name_in(Frame f, StoredObject& object, uint64_t file_offset, uint64_t address,
                uint64_t lookup);
  void add_lines(Frame& f, StoredObject& object, uint64_t link_address);
  // Go code: file:line and the inlined calls at the address, from .gopclntab.
  void add_go_frames(Frame& f, const GoPclntab& table, uint64_t link_address);
  // An interpreter frame of `pid` (PY_FRAME), named through the code cache.
  Frame python_frame(pid_t pid, ProcessState* state, uint64_t value);
  // A Java frame of `pid` (bpf/hotspot.h), named through the HotSpot code cache.
  Frame java_frame(pid_t pid, ProcessState* state, uint64_t value);
  // A tagged value's frame (bpf/unwind.h's tags): Python's, Java's or V8's.
  Frame tagged_frame(pid_t pid, ProcessState* state, uint64_t value);
  // The layout of the process's JVM (found once per process state); null when it runs none
  // readable.
  const HotspotCodeLayout* hotspot_layout(pid_t pid, ProcessState* state);
  // The process's interpreter (found once per process state); null when it has none readable.
  const PythonRuntime* python_runtime(ProcessState* state);
  // A V8 frame of `pid` (V8_FRAME), named through the function cache; its V8 likewise.
  Frame v8_frame(pid_t pid, ProcessState* state, uint64_t value);
  const V8Runtime* v8_runtime(ProcessState* state);
  ProcessState* cached(pid_t pid);
  // Process::open with the started_as() hint applied: a -c program read as it exits has no
  // command line left to say how it was started (/proc/PID/cmdline reads empty past exit_mm).
  Result<Process> open_process(pid_t pid) const;
  // The state of a process /proc no longer shows, if catch_up() delivers it.
  ProcessState* caught_up(pid_t pid);
  void hold_code_objects(ProcessState& state);

  SymbolizerOptions options_;
  std::shared_ptr<ObjectStore> store_;
  std::unordered_map<pid_t, std::unique_ptr<ProcessState>> processes_;
  std::map<ObjectKey, ObjectSlot> objects_;
  std::unordered_map<pid_t, std::string> started_as_;
  std::deque<pid_t> exited_;  // adopted, oldest first
  PythonCodeCache python_codes_;
  uint64_t python_code_gone_ = 0;  // code objects of announced stacks freed before they were read
  HotspotCodeCache java_codes_;
  V8FunctionCache v8_functions_;
};

// Human-readable name of a miss, as describe() prints it ("unmapped", "process gone", ...).
const char* to_string(FrameMiss miss);

}  // namespace uscope
