#pragma once
// A process running a HotSpot JVM, as a stack walker needs it: libjvm.so, its VMStructs tables,
// the code heaps and interpreter the BPF walker looks a pc up in (bpf/hotspot.h), the offsets it
// reads, and the JVM's threads; every value from the JVM's own tables, checked against the live
// process before anything trusts it. No JVM flag is needed: the tables are always exported.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bpf/hotspot.h"
#include "discover/hotspot_vmstructs.h"
#include "discover/process.h"
#include "util/result.h"

namespace uscope {

struct HotspotRuntime {
  pid_t pid = 0;
  std::string object_path;  // libjvm.so, as the process sees it
  uint64_t load_bias = 0;
  HotspotVmStructs vm;
  std::string version;         // "17.0.13+11-Debian-2deb12u1"
  std::string version_source;  // "Abstract_VM_Version::_s_vm_release" or "libjvm.so path"
  // Vtables (their address points, as an object's first word holds them) that tell a
  // JavaThread's kind; 0 when libjvm.so's .symtab does not name them.
  uint64_t vtable_java_thread = 0, vtable_compiler_thread = 0;
  // Where libjvm.so keeps what reading a java.lang.Thread's name takes (.symtab: the field
  // offsets HotSpot computes at start, and the flags that say how references are stored); 0: not
  // named there, and threads are named by their tasks.
  struct JavaNameSymbols {
    uint64_t thread_name_offset = 0;   // java_lang_Thread::_name_offset (int)
    uint64_t string_value_offset = 0;  // java_lang_String::_value_offset (int)
    uint64_t string_coder_offset = 0;  // java_lang_String::_coder_offset (int)
    uint64_t compressed_oops = 0;      // UseCompressedOops (bool)
    uint64_t compressed_klass = 0;     // UseCompressedClassPointers (bool)
    uint64_t compact_headers = 0;      // UseCompactObjectHeaders (bool, JDK 24+; 0: none)
  } java_names;
  hs_proc proc{};  // for hotspot_procs
  // Bytes of CodeBlob::_frame_complete_offset: 4 (int) to JDK 22, 2 (int16_t) from JDK 23, whose
  // next byte is CodeBlob::_kind (proc.off.frame_complete_bytes says the same to the walker).
  uint32_t blob_frame_complete_bytes = 4;
  // "java (pid 5)": how messages name it.
  std::string name() const;
};

// Finds the JVM in a process: libjvm.so mapped and exporting gHotSpotVMStructs (opened through
// ObjectStore::shared()). nullopt: not a HotSpot JVM, an answer, not an error. An error: a JVM
// uscope cannot read, naming why (a field the walker needs that this JDK does not list, more code
// heaps than HS_MAX_HEAPS). An error whose errnum is EAGAIN: the JVM is still starting (its
// VMStructs, code cache or interpreter not made yet): ask again a little later.
Result<std::optional<HotspotRuntime>> find_hotspot_runtime(const Process& process);
Result<std::optional<HotspotRuntime>> find_hotspot_runtime(pid_t pid);
// The same from what the process's memory holds (tests: a synthetic image).
Result<HotspotRuntime> read_hotspot_runtime(pid_t pid, const std::string& object_path,
                                            uint64_t load_bias, const VmStructsSymbols& symbols,
                                            const TargetMemory& mem);

// Reads known values back from the live process: at least one code heap, each segment size 32 to
// 4096 bytes with its segment map readable, the interpreter inside a heap and its blob (found
// through the segment map, as the walker finds it) named "Interpreter", the blob fields inside
// the bytes the walker reads, and every JavaThread's OSThread id a task of the process. An error
// names the field and the value read.
Result<void> validate_hotspot_runtime(const HotspotRuntime& rt, const TargetMemory& mem);
Result<void> validate_hotspot_runtime(const HotspotRuntime& rt);

// The code blob (nmethod, stub, the interpreter) holding `pc`, as the walker finds it: through its
// heap's segment map to the block's first segment, past the HeapBlock header. nullopt when `pc` is
// in no heap or in a free block; an error when the segment map cannot be read.
Result<std::optional<uint64_t>> hotspot_blob_at(const HotspotRuntime& rt, const TargetMemory& mem,
                                                uint64_t pc);
// CodeBlob::_name of the blob at `blob` ("nmethod", "Interpreter", "StubRoutines (1)").
Result<std::string> hotspot_blob_name(const HotspotRuntime& rt, const TargetMemory& mem,
                                      uint64_t blob);

enum class HotspotThreadKind {
  Java,      // a JavaThread running Java code: main, the application's, Reference Handler, ...
  Compiler,  // a CompilerThread (C1, C2, JVMCI)
  Other,     // another JavaThread subclass: service, sweeper, monitor deflation, ...
  Unknown,   // libjvm.so names no vtable to tell
};
const char* hotspot_thread_kind_name(HotspotThreadKind kind);  // "java", "compiler", ...

struct HotspotThread {
  uint64_t java_thread = 0;  // JavaThread*
  pid_t tid = 0;             // kernel tid (OSThread::_thread_id)
  // Its java.lang.Thread's name ("C2 CompilerThread0", "main"), read from the Java heap; else
  // its task's name (/proc/PID/task/TID/comm): HotSpot names a thread's task after its Java name
  // cut to 15 characters ("C2 CompilerThre"), the launcher's main thread keeps "java". "" when
  // gone.
  std::string name;
  bool java_name = false;  // `name` is the java.lang.Thread's
  HotspotThreadKind kind = HotspotThreadKind::Unknown;
};
// Every JavaThread of ThreadsSMRSupport::_java_thread_list, in list order. GC and other VM
// threads that are no JavaThread (GC Thread#0, VM Thread) are not in it: they are the process's
// other tasks.
Result<std::vector<HotspotThread>> hotspot_threads(const HotspotRuntime& rt,
                                                   const TargetMemory& mem);

}  // namespace uscope
