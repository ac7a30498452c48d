#pragma once
// Address normalization, the first half of symbolization (after blazesym): a runtime address of a
// process -> the object that maps it and the file offset there. It needs only the process's maps,
// never the object's contents, so it is cheap and kept apart from the symbol lookup that follows.
#include <cstdint>
#include <string>

#include "discover/process.h"

namespace uscope {

// Why an address has no function name. A miss is an answer, not an error: stacks routinely hold
// addresses of JIT code, stripped objects and processes that exited before their stack was read.
enum class FrameMiss {
  None,            // resolved
  Unmapped,        // no mapping of the process contains the address
  NoSymbols,       // mapped, but nothing to look it up in: [vdso], [heap], an object that has
                   // no function symbols (stripped, and no MiniDebugInfo or debug file found)
  UnknownAddress,  // the object (or perf map) has symbols but none contains the address
  ProcessGone,     // the process exited before its maps could be read
  NoAccess,        // the process exists but its maps are not readable (permissions)
  Unreadable,      // a file maps it, but the file could not be opened (deleted and gone, access)
  NoPerfMap,       // executable memory no file backs (JIT code), and the process wrote no perf map
  InterpreterUnreadable,  // an interpreter's frame (bpf/python.h) whose code object could not be
                          // read or made no sense (freed since, or the offsets do not fit)
  CodeGone,  // a Java frame (bpf/hotspot.h) whose code (nmethod, Method) the runtime freed, and
             // its memory reused, before the frame was read; a Python frame whose code object
             // did not read while its process lived (a module's body, freed once run)
};

struct NormalizedAddress {
  // The file holding the address; null for unmapped addresses and memory no file backs.
  // Points into the Process passed to normalize(); valid while it is neither destroyed nor moved.
  const MappedObject* object = nullptr;
  // Object path as the process maps it, or the mapping's pseudo name ("[vdso]", "[heap]",
  // "[stack]", "[anon]" for nameless memory); "" when unmapped.
  std::string name;
  // When object != nullptr, the offset in its file; in memory no file backs, the offset from the
  // mapping's start (the vdso's image is looked up by it).
  uint64_t file_offset = 0;
  uint64_t mapping_size = 0;         // of the mapping holding the address, when no file backs it
  FrameMiss miss = FrameMiss::None;  // None, Unmapped, or NoSymbols for non-file memory
  bool executable = false;           // the mapping holding the address may run code
};

NormalizedAddress normalize(const Process& process, uint64_t address);

}  // namespace uscope
