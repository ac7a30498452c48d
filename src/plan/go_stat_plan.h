#pragma once
// The probes of `uscope stat` on a Go program: entry uprobes on the runtime functions that mark
// what the runtime does, planned like any other probe (plan_count for what is counted in the
// kernel, plan_trace for the events whose times matter). All are entry probes that read nothing:
// no return probe touches the program.
//   runtime.newproc1               a goroutine is created (`go f()`)
//   runtime.goexit0                a goroutine has exited
//   runtime.gcMarkTermination      a GC cycle completes (once per cycle)
//   runtime.stopTheWorldWithSema   a stop-the-world pause begins (GC's two, and other STWs)
//   runtime.startTheWorldWithSema  it ends: the world restarts
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "plan/aggregate_plan.h"
#include "plan/planner.h"
#include "util/result.h"

namespace uscope {

enum class GoRuntimeEvent : uint8_t { Created, Exited, GcCycle, StopTheWorld, StartTheWorld };
inline constexpr size_t kGoRuntimeEvents = 5;

// The runtime function whose entry marks `e` ("runtime.newproc1").
std::string_view go_runtime_function(GoRuntimeEvent e);

// Where the live goroutines are, for a census of the target's memory (collect/go_goroutines.h).
// Link-time addresses: the census adds the load bias.
struct GoroutineLayout {
  uint64_t allgs = 0;           // runtime.allgs (a []*g slice header)
  uint64_t status_offset = 0;   // runtime.g.atomicstatus (uint32)
  uint64_t startpc_offset = 0;  // runtime.g.startpc (uintptr)
  // The functions that start the runtime's own goroutines: package runtime, runtime.main aside.
  std::set<uint64_t> system_starts;
  std::string sources;  // where the offsets came from ("DWARF", ...), for -v
};

struct GoStatPlan {
  std::string object;  // the Go binary's display path
  std::string go_version;
  // Counted in the kernel: counts.sites[cookie] counts the event counted_event[cookie].
  CountPlan counts;
  std::vector<GoRuntimeEvent> counted_event;
  // Each stop and start of the world as an event with its time: trace.probes[i] is stw_event[i].
  TracePlan stw;
  std::vector<GoRuntimeEvent> stw_event;
  // The census of live goroutines, or why there is none (a stripped binary has no runtime.allgs
  // symbol).
  std::optional<GoroutineLayout> goroutines;
  std::string no_goroutines;
};

// The goroutine layout of a Go binary: runtime.allgs from its symbol table or, stripped, from the
// code of runtime.forEachG; the g's fields from GoTypes (DWARF, type descriptors, uscope's table).
// Fails saying what is missing.
Result<GoroutineLayout> goroutine_layout(ObjectCache& cache, PlannedObject& o);

// The address of runtime.allgs from the machine code of runtime.forEachG (`code`, at `addr`):
// `for _, gp := range allgs` loads the slice's pointer and length, two RIP-relative 8-byte loads
// of addresses 8 apart (Go 1.17 on). nullopt unless exactly one such pair is found.
std::optional<uint64_t> allgs_in_for_each_g(std::span<const uint8_t> code, uint64_t addr);

struct GoStatOptions {
  std::string target;  // "" = the main binary of -p/-c
  bool move_sites = true;
};

// Fails for a binary that is not Go, and for a Go runtime that lacks one of the functions (naming
// it and the Go version: the runtime's internals change between releases).
Result<GoStatPlan> plan_go_stat(ObjectCache& cache, const GoStatOptions& opts);

}  // namespace uscope
