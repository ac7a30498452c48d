#pragma once
// bcc trace's options, each turned into what uscope already has: -L and --uid into the probes'
// predicates (filtered in the kernel), -Z into the cap of every printed string, -n into a comm
// test on each event (user space, as bcc does), and the symbols of %U, %K, -U and -K found for an
// event before the sink prints it.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/exit_symbolizer.h"
#include "model/decoded_event.h"
#include "plan/planner.h"
#include "sink/trace_output.h"
#include "symbolize/kernel_symbols.h"
#include "symbolize/stack_cache.h"
#include "symbolize/symbolizer.h"

namespace uscope::cli {

struct BccFilters {
  std::optional<pid_t> tid;        // -L
  std::optional<uint32_t> uid;     // --uid
  std::optional<int> string_size;  // -Z
};

// ANDs -L and --uid into each spec's predicate and caps the strings it prints at -Z bytes.
Result<void> apply_filters(std::vector<ProbeSpec>& specs, const BccFilters& f);

// The thread group of thread `tid` (-L without -p), from /proc/TID/status.
Result<pid_t> process_of_thread(pid_t tid);

// -n: whether an event's comm contains `name` (bcc's test; an empty name matches all).
bool comm_contains(const uscope_event& ev, std::string_view name);

// Symbols an event needs before it is printed: %U and %K values, -U and -K stacks.
class EventSymbols {
 public:
  EventSymbols(const TracePlan& plan, bool user_stack, bool kernel_stack);
  EventSymbols(const EventSymbols&) = delete;  // the symbolizer calls back into this object
  EventSymbols& operator=(const EventSymbols&) = delete;
  // Kernel symbols are read only when -K or a %K asks for them; a note on stderr when the kernel
  // hides its addresses (kptr_restrict), since every kernel frame then shows as unknown.
  Result<void> load_kernel_symbols();
  bool needs_kernel_symbols() const { return needs_kernel_; }
  // -p: the target's maps read while it surely lives (it may exit before its events are read).
  // Not for -c before its exec: the maps would be uscope's own fork's.
  void remember_process(pid_t pid);
  // Keeps the maps of the target (`pid`; 0: of every process) as it exits, so that %U and -U name
  // the addresses of a process that is gone by the time its events are read (a -c command that
  // exits at once). Nothing without %U or -U. `started_as`: -c's program as its command line
  // names it (Session::started_as), so that a symlink's name survives the process.
  Result<void> follow_exits(pid_t pid, const std::string& started_as);
  // Takes in the exits seen so far (call it as the session's loop drains).
  void catch_up();
  // Fills ev's %U/%K values' `symbol` and returns its stacks (pointing into this object).
  EventStacks resolve(DecodedEvent& ev);

 private:
  Frame kernel_frame(uint64_t address) const;
  bool needs_user_symbols() const;

  struct SymbolField {
    size_t value;  // index into the event's values
    bool kernel;   // %K
  };
  std::vector<std::vector<SymbolField>> fields_;  // by probe id
  bool user_stack_, kernel_stack_, needs_kernel_ = false;
  ExitSymbolizer symbols_;
  std::optional<KernelSymbols> kernel_;
  StackSymbolCache user_stacks_;
  std::vector<Frame> kernel_frames_;
};

}  // namespace uscope::cli
