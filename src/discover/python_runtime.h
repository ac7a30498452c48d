#pragma once
// A process running CPython, as a stack walker needs it: the object that holds the interpreter
// (the python binary, linked statically as Debian's, or libpython3.X.so), its version, the
// addresses of _PyRuntime and of the eval function, and the layout of its structures; checked
// against the live process before anything trusts it. Also the user-space walk of a thread's
// frame chain (`dump`, tests): the same chain the BPF walker reads at sample time.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/python.h"
#include "discover/elf_file.h"
#include "discover/process.h"
#include "discover/python_offsets.h"
#include "discover/symbol_table.h"
#include "util/result.h"

namespace uscope {

// Reads exactly out.size() bytes of the target at `addr`; false when any of them is unreadable.
// Never writes.
using TargetMemory = std::function<bool(uint64_t addr, std::span<uint8_t> out)>;
// process_vm_readv of `pid` (read_process_memory).
TargetMemory process_target_memory(pid_t pid);
// `mem` read a page (4 KiB) at a time, each page once: many small reads of a few pages cost a few
// reads of the process. A page that cannot be read whole is read as asked, uncached; at most
// 4,096 pages are kept. For reads of one moment (a dump, a table): a page's later changes are not
// seen.
TargetMemory page_cached(TargetMemory mem);

// What one ELF object says of the interpreter it holds, at link-time addresses.
struct PythonObjectInfo {
  PythonVersion version;
  bool debug = false;                     // a Py_DEBUG build (python3.11d: _Py_RefTotal is defined)
  uint64_t runtime_addr = 0;              // _PyRuntime (OBJECT symbol, .dynsym)
  uint64_t code_type_addr = 0;            // PyCode_Type (checks a frame's code object); 0: unknown
  uint64_t eval_start[PY_EVAL_RANGES]{};  // _PyEval_EvalFrameDefault [and its .cold part]
  uint64_t eval_end[PY_EVAL_RANGES]{};
  std::string version_source;  // "Py_Version", "PY_VERSION string", "file name"
};
// PY_VERSION ("3.9.2", "3.10.0rc1"): a NUL-terminated string of its own in .rodata, which
// Py_GetVersion formats into sys.version; for versions before Py_Version (3.11). Only one of
// `named`'s major.minor (what the object's file name says) when given; 3.6+.
std::optional<PythonVersion> python_version_string(const ElfFile& elf,
                                                   std::optional<PythonVersion> named = {});
// nullopt when `elf` holds no interpreter (no _PyRuntime or no eval function); an error when it
// does but its version cannot be told. The eval function's .cold part is looked up in the table
// `symbols` gives, asked only for an object that holds an interpreter (a stored object's:
// discover/object_store.h); without it, in a table loaded for the call; null: none.
using SymbolTableSource = std::function<const SymbolTable*()>;
Result<std::optional<PythonObjectInfo>> python_object_info(const ElfFile& elf,
                                                           const SymbolTableSource& symbols = {});

struct PythonRuntime {
  pid_t pid = 0;
  std::string object_path;  // the object holding the interpreter, as the process sees it
  PythonObjectInfo object;  // its facts, at link-time addresses
  uint64_t load_bias = 0;
  PythonLayout layout;  // from the table, or (3.13+) from the process's _Py_DebugOffsets
  py_proc proc{};       // the process's addresses and layout.bpf, for python_procs
  // "python3.11 (pid 123)", "python3.11d (pid 123)": how messages name it.
  std::string name() const;
};

// Finds the interpreter in a process (objects opened through ObjectStore::shared(), so a second
// call, or the symbolizer, opens nothing again). nullopt: the process is not Python (no object
// holds an interpreter), which is an answer, not an error. An error: it is Python but uscope cannot
// read it (a version with no table row, unreadable object).
Result<std::optional<PythonRuntime>> find_python_runtime(pid_t pid);
Result<std::optional<PythonRuntime>> find_python_runtime(const Process& process);

// The process's threads by the base their fs points to (collect/thread_regs.h reads it through
// the kernel): on x86-64 (glibc, musl) that is pthread_self(), what PyThreadState.thread_id
// holds, and so the only way to tell which thread a 3.8-3.10 thread state (no native_thread_id)
// is.
using ThreadsByFsBase = std::map<uint64_t, pid_t>;

// Reads known values back from the live process: an interpreter list head, its first thread
// state whose interp is that head and whose native_thread_id is one of the process's threads
// (/proc/PID/task), a current frame whose code object's type is the code type. An error names the
// field and the value read: "python3.11 (pid 5): PyThreadState.native_thread_id reads 0, not a
// thread of the process: the offsets of 3.11 do not fit". 3.8-3.10: each thread_id a pointer
// and, with `fs_bases`, at least one of them a thread's fs base (a thread started since they
// were read has one that is in no list). The threads run while they are read: a check that fails
// is read again, afresh (not through `mem`), up to 5 times, and fails only when every read does
// (a torn read of a running thread's chain is not offsets that misfit).
Result<void> validate_python_runtime(const PythonRuntime& rt, const TargetMemory& mem,
                                     const ThreadsByFsBase* fs_bases = nullptr);
Result<void> validate_python_runtime(const PythonRuntime& rt);

struct PythonThread {
  uint64_t tstate = 0;  // PyThreadState address
  uint64_t interp = 0;  // its PyInterpreterState
  // Its kernel tid: native_thread_id (3.11+), or the thread whose fs base is its thread_id
  // (3.8-3.10, with python_threads' `fs_bases`); 0 when unknown.
  pid_t native_id = 0;
  uint64_t thread_id = 0;  // pthread_t (thread_id)
  bool holds_gil = false;  // 3.8-3.11; false where unknown (see python_gil_holder)
};
// Every thread state of every interpreter, in list order (at most PY_MAX_THREADS per
// interpreter). A version without native_thread_id finds each one's thread in `fs_bases`.
Result<std::vector<PythonThread>> python_threads(const PythonRuntime& rt, const TargetMemory& mem,
                                                 const ThreadsByFsBase* fs_bases = nullptr);
// The thread state holding the GIL: 0 when none does; nullopt when this version does not say
// where (3.12). 3.8-3.11: _PyRuntime.gilstate.tstate_current; 3.13+: the main interpreter's GIL
// (locked, last_holder) where its _Py_DebugOffsets describe it.
Result<std::optional<uint64_t>> python_gil_holder(const PythonRuntime& rt, const TargetMemory& mem);

// One frame of a thread's Python stack, innermost first.
struct PythonRawFrame {
  uint64_t code = 0;                  // PyCodeObject address
  uint32_t instr = PY_INSTR_UNKNOWN;  // instruction index in code units (2 bytes), every version
  bool entry = false;  // the first frame an eval call ran (3.11 is_entry; <= 3.10 every frame)
};
// Walks `tstate`'s current frame chain (at most `max_frames`): the frames traceback would show,
// innermost first (3.11+: frames not yet started and C-stack shims are skipped). An error when a
// pointer cannot be read.
Result<std::vector<PythonRawFrame>> python_thread_frames(const PythonRuntime& rt,
                                                         const TargetMemory& mem, uint64_t tstate,
                                                         size_t max_frames = 1024);

}  // namespace uscope
