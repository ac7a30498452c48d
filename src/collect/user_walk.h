#pragma once
// A thread's user stack walked in user space, from registers and the process's memory
// (process_vm_readv), by the same rules as the BPF walker (bpf/unwind.bpf.h): CFI rows where the
// object has them, frame pointers where it has none, and the thread's Python frames in place of
// each eval call that runs them (bpf/python.h's PY_FRAME values, which the Symbolizer names), and
// a JVM's Java frames where the pc is in its code cache (bpf/hotspot.h).
// For `uscope dump`, which reads each thread once: the BPF walker serves samples, which must be
// taken in the thread's own context; a dump reads threads that sleep.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "bpf/hotspot.h"
#include "bpf/unwind.h"
#include "discover/process.h"
#include "discover/python_runtime.h"
#include "discover/unwind_table.h"

namespace uscope {

class ObjectStore;
class UnwindCache;

struct UserWalk {
  std::vector<uint64_t> frames;  // innermost first: the pc, then return addresses, PY_FRAMEs
  unwind_end end = UNWIND_END_TRUNCATED;
  size_t python_unmatched = 0;  // Python frames put at the outer end: their eval call not met
};

class UserWalker {
 public:
  // `cache` may be null (no disk cache).
  UserWalker(std::shared_ptr<ObjectStore> store, UnwindCache* cache);

  // Walks from (ip, sp, bp) through `process`'s memory `mem`. `python`: the thread's Python
  // frames, innermost first (python_thread_frames), and the interpreter whose eval calls they
  // replace; empty when it runs none. `java`: the process's JVM (bpf/hotspot.h), whose code cache
  // frames become Java frames; r13 is the thread's (its bytecode pointer where it is interpreted).
  UserWalk walk(const Process& process, const TargetMemory& mem, uint64_t ip, uint64_t sp,
                uint64_t bp, const PythonRuntime* python,
                std::span<const PythonRawFrame> python_frames, const hs_proc* java = nullptr,
                uint64_t r13 = 0);

 private:
  struct Table {
    std::shared_ptr<const UnwindTable> table;  // null: frame pointers
    uint64_t bias = 0;                         // runtime address - link-time address
  };
  const Table& table_for(const MappedObject& object);

  std::shared_ptr<ObjectStore> store_;
  UnwindCache* cache_;
  std::map<std::string, Table> tables_;  // by the object's path as the process maps it
};

}  // namespace uscope
