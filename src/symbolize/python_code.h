#pragma once
// Python code objects as a user reads them: qualified name, file and line. A code object is read
// once per (process, address) from the target's memory and cached with its line table; the line
// of an instruction is decoded from that table in user space (the BPF walker records only the
// code object and the instruction index: PY_FRAME in bpf/python.h).
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "discover/python_runtime.h"
#include "util/result.h"

namespace uscope {

// How a code object maps instructions to lines.
enum class PythonLineTable {
  Lnotab,     // <= 3.9 co_lnotab: (byte delta, signed line delta) pairs
  Linetable,  // 3.10 co_linetable: (byte delta, signed line delta, -128 no line) pairs
  Locations,  // 3.11+ location table (PEP 657): varint entries of 1-8 code units each
};
PythonLineTable python_line_table_kind(PythonVersion v);

// A run of instructions [start, end) (code units) on one line; line -1 where there is none
// (co_lines() yields None).
struct PythonLineRange {
  uint32_t start = 0, end = 0;
  int line = -1;
};
// Every range the table describes, in order (as co_lines() yields them). Malformed or truncated
// tables end the decode where they stop making sense; never reads past `table`.
std::vector<PythonLineRange> decode_python_line_table(PythonLineTable kind, int first_line,
                                                      std::span<const uint8_t> table);
// The line of instruction `instr` (code units), as PyCode_Addr2Line answers for byte offset
// 2 * instr: -1 when the instruction has no line or is past the table's end.
int python_line_of(PythonLineTable kind, int first_line, std::span<const uint8_t> table,
                   uint32_t instr);

struct PythonCode {
  std::string qualname;  // co_qualname (3.11+), co_name before
  std::string filename;  // co_filename
  int first_line = 0;    // co_firstlineno
  PythonLineTable table_kind = PythonLineTable::Locations;
  std::vector<uint8_t> line_table;  // co_linetable / co_lnotab bytes

  int line_of(uint32_t instr) const {
    return python_line_of(table_kind, first_line, line_table, instr);
  }
};

// Reads the code object at `addr` (its strings as UTF-8: PEP 393 compact strings of any kind).
// Fails naming the field that could not be read or made no sense.
Result<PythonCode> read_python_code(const PythonLayout& layout, PythonVersion v,
                                    const TargetMemory& mem, uint64_t addr);

// The str object at `addr` as UTF-8 (PEP 393 compact strings of any kind; cut at 4,096
// characters).
Result<std::string> read_python_str(const PythonLayout& layout, const TargetMemory& mem,
                                    uint64_t addr);

// Code objects by (pid, address). A code object lives as long as a function refers to it, so
// its address is reused only after it is freed: forget a process when it exits.
class PythonCodeCache {
 public:
  // The code object at `addr` in rt's process, read on first use.
  Result<const PythonCode*> get(const PythonRuntime& rt, const TargetMemory& mem, uint64_t addr);
  // The code object at `addr` of `pid` if it was read before; null otherwise.
  const PythonCode* find(pid_t pid, uint64_t addr) const;
  void forget(pid_t pid);
  size_t size() const { return codes_.size(); }

 private:
  std::map<std::pair<pid_t, uint64_t>, PythonCode> codes_;
};

// A Python frame as printed: "outer.<locals>.inner (app.py:12)".
struct PythonFrame {
  uint64_t code = 0;
  uint32_t instr = PY_INSTR_UNKNOWN;
  std::string qualname;
  std::string filename;
  int line = -1;  // -1 when unknown
};
// The frame a walked stack holds (PY_FRAME: code object and instruction), named through
// `cache`; the line is the code's first when the instruction is unknown.
Result<PythonFrame> python_named_frame(const PythonRuntime& rt, const TargetMemory& mem,
                                       PythonCodeCache& cache, uint64_t code, uint32_t instr);
// python_thread_frames, named through `cache`.
Result<std::vector<PythonFrame>> python_thread_named_frames(const PythonRuntime& rt,
                                                            const TargetMemory& mem,
                                                            PythonCodeCache& cache,
                                                            uint64_t tstate);

}  // namespace uscope
