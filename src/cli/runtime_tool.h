#pragma once
// What the runtime tools (gc, threads, stat, calls, objnew) share: the runtime's probes of their
// events planned (plan/runtime.h), run by the trace job into the tool's sink, and the sink's
// summary written once the session ends.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "cli/aggregate_job.h"
#include "cli/output_options.h"
#include "cli/session.h"
#include "plan/runtime.h"
#include "sink/event_sink.h"
#include "sink/runtime_tally_output.h"
#include "util/output_buffer.h"

namespace uscope::cli {

using RuntimeSinkMaker = std::function<std::unique_ptr<SummarizingSink>(
    const RuntimePlan& plan, OutputFormat format, OutputBuffer& out)>;

// `tool` is the command's name; `watching` ends the line said once the probes are in ("the
// collections"). `calls` (flow): the per-call probes too, each return paired with its call
// (pair_calls_by_depth), what they cost said at start. The exit code.
int run_runtime_tool(const SessionOptions& so, const std::string& runtime,
                     std::span<const RuntimeEvent> events, std::string_view tool,
                     std::string_view watching, const RuntimeSinkMaker& make_sink,
                     bool calls = false);
// The last lines of `out` written (briefly: a stopped reader must not hold up the exit), and
// `summary` after them in JSON, or on stderr in text.
void write_summary(OutputBuffer& out, const CommandOutput& output, const std::string& summary);

// The same on a session and output already open (stat, once it knows the target is no Go
// program).
int run_runtime_session(Session& session, const CommandOutput& output, const SessionOptions& so,
                        const std::string& runtime, std::span<const RuntimeEvent> events,
                        std::string_view tool, std::string_view watching,
                        const RuntimeSinkMaker& make_sink, bool calls = false);

// calls and objnew: the runtime's per-call probes of `what` counted in the kernel by name
// (plan_runtime_tally), what they cost said at start, each table printed by print_tally with
// `view` (its runtime filled in here).
int run_runtime_tally(const SessionOptions& so, const MapOptions& ao, const std::string& runtime,
                      RuntimeTally what, std::string_view tool, TallyView view);

}  // namespace uscope::cli
