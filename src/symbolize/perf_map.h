#pragma once
// Perf maps: the symbol files JIT compilers write for perf (/tmp/perf-PID.map; Node
// --perf-basic-prof, the JVM's `jcmd PID Compiler.perfmap`, LuaJIT, ...), one "START SIZE NAME"
// line per piece of generated code, hex numbers. Hand-written: no packaged library parses them
// (perf's reader lives inside perf, blazesym is Rust), and the format is one line per symbol. The
// text is untrusted input (any process writes it): parse_perf_map has a libFuzzer target.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace uscope {

struct PerfMapSymbol {
  uint64_t start = 0;
  uint64_t size = 0;
  std::string name;
};

class PerfMap {
 public:
  // Lines that are not "HEX HEX NAME" (optional 0x, any whitespace, names with spaces) are
  // skipped and counted. When code ranges overlap, the later line wins: a JIT reuses freed code.
  static PerfMap parse(std::string_view text);
  // The map of `pid`, read in its own mount namespace (/proc/PID/root/tmp/perf-NSPID.map, with
  // NSpid from /proc/PID/status: a process in a PID namespace names the file by its own PID).
  // nullopt when the process writes none; an error when it cannot be read.
  static Result<std::optional<PerfMap>> read(pid_t pid);

  // The symbol whose [start, start+size) holds `address`.
  const PerfMapSymbol* find(uint64_t address) const;
  size_t size() const { return symbols_.size(); }
  size_t malformed_lines() const { return malformed_; }

 private:
  std::vector<PerfMapSymbol> symbols_;  // sorted by start, no overlaps
  size_t malformed_ = 0;
};

}  // namespace uscope
