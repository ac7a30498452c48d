#pragma once
// Python's own names of a process's threads: the names `threading.Thread(name=...)` gives (and
// "MainThread", "Thread-1 (run)"), which the kernel never sees before 3.14. Read as py-spy reads
// them: sys.modules (the interpreter's modules dict) -> the `threading` module -> its `_active`
// dict, whose keys are threading.get_ident() (pthread_self(), PyThreadState.thread_id) and whose
// values are the Thread objects -> each one's `_name`. A handful of reads of the target, no
// code run in it. 3.8-3.11 (3.8-3.10's dicts index by dk_size, their instances keep their dict
// at tp_dictoffset); 3.12+'s dicts and instance attributes are not described
// (PythonLayout.interp_modules). `uscope dump` shows the names by thread state, which it maps to
// a kernel thread by native_thread_id (3.11+) or, 3.8-3.10, by thread_id, the thread's fs base.
#include <cstdint>
#include <map>
#include <string>

#include "discover/python_runtime.h"
#include "util/result.h"

namespace uscope {

// Names by thread ident (PyThreadState.thread_id). Empty when the process has not imported
// threading, or for a version whose layout does not describe it. An error when what it reads
// makes no sense (a dict whose sizes are out of bounds, an unreadable pointer); a Thread whose
// name cannot be read is left out.
Result<std::map<uint64_t, std::string>> python_thread_names(const PythonRuntime& rt,
                                                            const TargetMemory& mem);

// The entries of a dict (its keys object and, for a split dict, its values array: 0 when the
// values are in the entries), in insertion order, deleted ones left out. Exposed for tests.
struct PythonDictEntry {
  uint64_t key = 0, value = 0;  // object addresses
};
Result<std::vector<PythonDictEntry>> python_dict_entries(const PythonLayout& l,
                                                         const TargetMemory& mem, uint64_t keys,
                                                         uint64_t values);

}  // namespace uscope
