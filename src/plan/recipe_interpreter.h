#pragma once
// A user-space reference of the recipe machine in src/bpf/trace.bpf.c (step() and run()): the
// same ops, limits (TRACE_MAX_OPS, TRACE_STACK, entry slots, pool, TRACE_MAX_DATA, TRACE_MAX_STR),
// string clamps, deferred strings and drop rules, over synthetic registers and memory. It lets
// unit tests and the fuzzer run what the planner compiles without root, a kernel or BPF, and
// check what a user would see. Change it together with trace.bpf.c.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bpf/trace.h"
#include "plan/recipe.h"
#include "util/result.h"

// A string field's length word has this bit when the string was longer than what was read (see
// TRACE_STR_DEFERRED in trace.h). Defined here until trace.h carries it.
#ifndef TRACE_STR_TRUNCATED
#define TRACE_STR_TRUNCATED 0x20000000u
#endif

namespace uscope {

// Copies `len` bytes of the target's memory at `addr` into `dst`, all or nothing, like
// bpf_probe_read_user(). False: the read failed (unmapped, or a page not faulted in yet).
using MemoryReader = std::function<bool(uint64_t addr, void* dst, size_t len)>;

using EntrySlots = std::array<uint64_t, TRACE_ENTRY_SLOTS>;

// What the program sees when its uprobe fires.
struct RecipeInput {
  std::array<uint64_t, TRACE_NUM_REGS> regs{};  // pt_regs, indexed by uscope_reg
  uint32_t pid = 0;                             // tgid
  uint32_t tid = 0;
  uint32_t cpu = 0;
  uint32_t uid = 0;
  std::string comm;  // the kernel keeps TRACE_COMM_LEN - 1 bytes of it
  // Return probes: the slots the entry half saved for this call; nullopt when none was recorded.
  std::optional<EntrySlots> entry{};
  uint64_t duration_ns = 0;  // return probes with an entry: time since it
  // TRACE_F_AGG_USTACK: the walked stack's hash, as stored in the stack table; nullopt when the
  // walk or the store failed.
  std::optional<uint64_t> stack;
  MemoryReader read{};  // none: every read fails
};

enum class RecipeOutcome {
  Emitted,       // an event with `payload` goes to the ring buffer (TC_EMITTED)
  Filtered,      // a predicate was false (TC_FILTERED)
  Malformed,     // the recipe broke a limit or the payload overflowed: DROP_ERROR
  SavedEntry,    // entry half of a return probe: `slots` are stored for the return
  NoEntry,       // return probe without a recorded entry (TC_NO_ENTRY)
  Histogrammed,  // latency return half: the duration is counted, nothing emitted
  Aggregated,    // TRACE_F_AGGREGATE: `key` and `bucket` are updated, nothing emitted
  Abandoned,     // TRACE_F_ABANDON: the recorded entry is dropped unfinished (TC_ABANDONED)
  NothingToDrop  // TRACE_F_ABANDON without a recorded entry: nothing counted
};

const char* recipe_outcome_name(RecipeOutcome o);

struct RecipeRun {
  RecipeOutcome outcome = RecipeOutcome::Emitted;
  std::vector<uint8_t> payload;  // the event's data (data_len bytes); Emitted only
  EntrySlots slots{};            // after the run (SavedEntry: what is stored)
  uint32_t read_errors = 0;      // failed user-memory reads (TC_READ_ERRORS counts the event once)
  uint32_t ops_run = 0;          // ops stepped, END excluded
  // Aggregated: the row's key (zero-padded fields; stack id -1 when the stack failed), the
  // value added to its sum and the bucket it counts in (-1: TRACE_AGG_COUNT).
  uscope_agg_key key{};
  uint64_t value = 0;
  int bucket = -1;
  bool stack_failed = false;
};

// Runs `recipe` as trace.bpf.c's run() would for an event of `in`.
RecipeRun interpret_recipe(const uscope_recipe& recipe, const RecipeInput& in);

// One field of a payload, decoded by the wire format of trace.h.
struct PayloadValue {
  bool is_string = false;
  uint64_t number = 0;     // values
  std::string text;        // strings read in BPF
  bool truncated = false;  // TRACE_STR_TRUNCATED: the string goes on past `text`
  bool deferred = false;   // TRACE_STR_DEFERRED: user space reads `length` bytes at `address`
  bool exact = false;      // deferred pointer + length string
  uint32_t length = 0;     // deferred: bytes to read
  uint64_t address = 0;    // deferred
};

// Decodes a payload by a probe's output fields, strictly: every field present, every byte used
// (`zero_padded`: the rest is zeros, as in an aggregation key), no length past the payload or
// TRACE_MAX_STR. Errors say which field broke which rule.
Result<std::vector<PayloadValue>> decode_payload(std::span<const OutputField> fields,
                                                 std::span<const uint8_t> payload,
                                                 bool zero_padded = false);

}  // namespace uscope
