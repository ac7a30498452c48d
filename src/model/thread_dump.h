#pragma once
// One look at every thread of a process (`uscope dump`): what runs in it, and each thread's state
// and stack, symbolized.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace uscope {

struct DumpedThread {
  pid_t tid = 0;
  std::optional<std::string> name;  // its runtime's name (Python's threading, Java's)
  std::string comm;                 // the kernel's name
  std::string state;                // as ps says it: "running", "idle (sleeping, S)", ...
  bool holds_gil = false;
  std::string kind;  // in a JVM: "JIT compiler thread", "not a Java thread (...)"; "" otherwise
  bool native_not_read = false;     // on a CPU now: its native frames cannot be read
  std::vector<std::string> frames;  // innermost first, each as symbol_text writes it
};

struct ThreadDump {
  pid_t pid = 0;
  std::string command_line;  // "?" when unreadable
  // "Python 3.11.2 (path)", "Java: HotSpot 17... (path)", or why only native frames are shown.
  std::vector<std::string> runtimes;
  std::vector<DumpedThread> threads;
};

}  // namespace uscope
