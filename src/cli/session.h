#pragma once
// What trace, count and latency share: the target options (-p, -c, -d, -M, -i), turning them into
// a planning context, and the session's end (why it stopped, the launched command's fate).
#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>

#include "collect/event_loop.h"
#include "discover/launched_command.h"
#include "discover/process.h"
#include "plan/planner.h"

namespace uscope::cli {

struct SessionOptions {
  pid_t pid = 0;
  std::string command;
  double duration_s = 0;
  double interval_s = 0;
  uint64_t max_events = 0;
  bool json = false;
  bool verbose = false;
  bool no_multi = false;  // force one link per site (comparison, old kernels)
};

// -p, -c, -d, --json, -v; `with_interval` adds -i, `with_max_events` adds -M.
void add_session_options(CLI::App* cmd, SessionOptions& o, bool with_interval,
                         bool with_max_events);

// The target of a session: the process to watch or the command to start, and the planning
// context derived from it.
// Not movable: `context` points into `process`.
struct SessionTarget {
  SessionTarget() = default;
  SessionTarget(const SessionTarget&) = delete;
  SessionTarget& operator=(const SessionTarget&) = delete;
  std::optional<Process> process;
  std::optional<LaunchedCommand> command;
  TargetContext context;
  pid_t watch_pid() const { return context.pid; }
};

Result<std::unique_ptr<SessionTarget>> open_session_target(const SessionOptions& o);
Result<EventLoop> make_event_loop(const SessionOptions& o, const SessionTarget& t);

// Checks the capabilities needed to attach, naming the missing ones.
Result<void> check_session_capabilities(const SessionOptions& o);

// Prints site placements (cost class, moved or not) to stderr for --verbose.
void print_sites(const std::vector<PlannedSite>& sites);

}  // namespace uscope::cli
