#pragma once
// V8 JavaScript functions as a user reads them: name, script and line, from the
// SharedFunctionInfo a V8 frame holds (bpf/v8.h's V8_FRAME), read from the target's memory once
// per (process, address) and cached.
//
// The name and the function's start position are in its ScopeInfo, whose layout V8's metadata
// does not describe beyond its first slots: past the context locals, the first non-empty string
// is the function's name (its own, else the name V8 inferred for an anonymous function assigned
// to a property: "Module._compile", as V8's CPU profiler names it) and the first pair of
// ascending Smis its [start, end) positions in the script (the OpenTelemetry profiler reads it
// so too). A function with no ScopeInfo keeps its name in
// the same field, as a string. The line is the start position's, counted in the script's line
// ends (Script::line_ends when V8 computed them, else the source's own newlines): the line
// `node --perf-basic-prof` names a function by.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "discover/python_runtime.h"  // TargetMemory
#include "discover/v8_runtime.h"
#include "util/result.h"

namespace uscope {

struct V8Function {
  std::string name;    // "" for an anonymous function
  std::string script;  // the script's name (a path, "node:internal/..."); "" when it has none
  int line = 0;        // of the function's start; 0 when unknown
};

// Reads a V8 string (sequential one- or two-byte, cons, thin, sliced) at tagged pointer
// `tagged`, as UTF-8 (two-byte characters beyond Latin-1 as '?'), at most `max` bytes. External
// strings (whose characters live outside V8's heap) are refused.
Result<std::string> read_v8_string(const V8Layout& l, const TargetMemory& mem, uint64_t tagged,
                                   size_t max = 4096);

// The 1-based line of `position` in a script whose line ends (the offsets of its newlines, in
// order) are `line_ends`.
int v8_line_of(std::span<const uint32_t> line_ends, uint32_t position);

// The name and the start position a ScopeInfo's slots (from its first, after the map) hold, by
// the heuristic above; `string_at(slot)` reads a tagged slot that is a string, nullopt otherwise.
struct V8ScopeFacts {
  std::string name;
  int64_t start = -1, end = -1;
};
V8ScopeFacts v8_scope_facts(const V8Layout& l, std::span<const uint64_t> slots,
                            const std::function<std::optional<std::string>(uint64_t)>& string_at);

// Reads the function of the SharedFunctionInfo at `sfi` (untagged). Fails naming what could not
// be read or made no sense.
Result<V8Function> read_v8_function(const V8Layout& l, const TargetMemory& mem, uint64_t sfi);

// Functions by (pid, address). A SharedFunctionInfo moves only when a GC compacts old space:
// read it while its stack is new (the profiler announces new stacks), and forget a process when
// it exits.
class V8FunctionCache {
 public:
  Result<const V8Function*> get(const V8Runtime& rt, const TargetMemory& mem, uint64_t sfi);
  const V8Function* find(pid_t pid, uint64_t sfi) const;
  void forget(pid_t pid);

 private:
  std::map<std::pair<pid_t, uint64_t>, V8Function> functions_;
};

}  // namespace uscope
