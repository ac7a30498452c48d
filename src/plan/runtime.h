#pragma once
// The managed runtimes whose own USDT probes uscope's runtime tools read (gc, threads, ...): one
// description per language (plan/runtimes/*.cc), saying which file carries the probes, what each
// probe marks and says, what it costs the program and what the runtime needs for it to fire. A
// fifth runtime is one new file and one line in runtimes().
//
// plan_runtime() finds the runtime a process runs (or the one -l names), checks that its probes
// are there, and plans the probes of the events a tool asks for as `trace` would plan
// `u:FILE:provider:name "format", args`: one planner, one BPF program.
#include <sys/types.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/decoded_event.h"
#include "plan/keyed_plan.h"
#include "plan/planner.h"
#include "util/result.h"

namespace uscope {

// What a runtime probe marks.
enum class RuntimeEvent : uint8_t {
  GcBegin,  // a collection (or one of its phases) begins on this thread
  GcEnd,    // and ends
  ThreadStart,
  ThreadEnd,
  ClassLoad,
  MethodEntry,
  MethodReturn,
  ObjectNew,
  Exception,
};
std::string_view runtime_event_name(RuntimeEvent e);

struct RuntimeProbe {
  RuntimeEvent event;
  std::string_view provider;
  std::string_view name;
  // The trace spec's message and arguments after the probe (`"%d", arg1`): what is read at each
  // hit; "" reads nothing. A ThreadStart or ThreadEnd probe reads, in this order, the thread's
  // name, the runtime's id for it, its native (kernel) id and whether it is a daemon.
  std::string_view message;
  // It fires at every call or allocation of the program: enabled only when the user asks, saying
  // what it costs (plan/runtimes' per-call figures).
  bool per_call = false;
  // A GC probe's phase ("mark", "sweep"), so that one thread's nested phases pair up; "" = the
  // collection itself.
  std::string_view phase{};
  // What the values read say, for a person ("generation 2", "full"); null: the message as is.
  std::string (*says)(std::span<const DecodedValue> values) = nullptr;
  // MethodEntry/MethodReturn/ObjectNew: the keys (count --by) that name the method or type, in
  // the order the runtime's `name_joiner` joins them ("str(arg2, arg3),str(arg4, arg5)").
  std::string_view key{};
  // It fires for only some of the events it marks (python 3.11's function__entry: only calls
  // entered from C): never used to count or time them.
  bool partial = false;
  // A flag of the carrier (a one-byte global in its symbol table) that is 0 while the probe
  // cannot fire, and the option that sets it ("DTraceMethodProbes", "-XX:+DTraceMethodProbes"):
  // a running process whose flag is off is refused, not watched for nothing.
  std::string_view flag_symbol{};
  std::string_view flag_option{};
};

struct Runtime {
  std::string_view name;   // -l NAME: "java", "python", "ruby", "php"
  std::string_view title;  // "Java (HotSpot)"
  // A file name (no directory) of the object that carries the probes: libjvm.so, python3.11,
  // libpython3.11.so.1.0, libruby-3.1.so.3.1, php8.2.
  bool (*carries_probes)(std::string_view file_name);
  std::string_view carrier;  // that object as a person names it: "libjvm.so"
  std::string_view provider;
  std::span<const RuntimeProbe> probes;
  // What a build of the runtime without probes is, and what has them (one sentence).
  std::string_view without_probes;
  // What the per-call probes need in the program to fire ("-XX:+ExtendedDTraceProbes"); "" when
  // they fire whenever attached.
  std::string_view per_call_needs;
  // An environment variable the per-call probes need set in the process (PHP's USE_ZEND_DTRACE,
  // read once at its start): a running process without it is refused.
  std::string_view per_call_env{};
  // What joins a method's key parts into its name: "." (Java: class.method), "#" (Ruby), ""
  // (PHP: class, "::", function), ":" (Python: file:function). Empty parts are left out.
  std::string_view name_joiner;
  // What the per-call probes cost each call, measured here (docs/BENCHMARKS.md, table P): said
  // when a tool turns them on.
  std::string_view per_call_cost;
};

// Every runtime uscope knows, in the order detection tries them.
std::span<const Runtime* const> runtimes();
const Runtime& java_runtime();
const Runtime& python_runtime();
const Runtime& ruby_runtime();
const Runtime& php_runtime();

struct RuntimePlan {
  const Runtime* runtime = nullptr;
  std::string object;  // the file that carries the probes, as the process maps it
  TracePlan trace;
  // trace.probes[i] is probe_of[i]'s.
  std::vector<const RuntimeProbe*> probe_of;
  // Whether a probe of `e` is among them (a runtime version may lack one its description has).
  bool marks(RuntimeEvent e) const;
};

struct FoundRuntime {
  const Runtime* runtime = nullptr;
  std::vector<std::string> carriers;  // its files the target maps (or a -c command would)
  std::string who;                    // the target, as errors name it
};
// The runtime of the target (see plan_runtime), or the one `forced` names; errors as
// plan_runtime's.
Result<FoundRuntime> find_runtime(const TargetContext& ctx, const std::string& forced,
                                  std::string_view tool);

// What `uscope stat` and the agent read of a managed runtime: its cheap probes (none that fires
// at every call).
std::span<const RuntimeEvent> runtime_stat_events();

// Whether `r` has a probe of `e`.
bool runtime_marks(const Runtime& r, RuntimeEvent e);

// The runtime of the target (`ctx`: -p's process, or -c's program, its libraries and a java
// launcher's libjvm.so), or the one `forced` names (-l), and the probes of `events` in it, planned
// with `opts`. Errors name what was wrong and what would work: no runtime uscope knows (and the
// ones it does), a runtime built without probes, a runtime whose probes mark none of `events`
// (`tool` names the command). Per-call probes (RuntimeProbe::per_call) only with `per_call`;
// a partial one (it fires for only some calls) is refused, as a flow of calls it would miss.
Result<RuntimePlan> plan_runtime(ObjectCache& cache, const TargetContext& ctx,
                                 const std::string& forced, std::span<const RuntimeEvent> events,
                                 std::string_view tool, const TraceOptions& opts = {},
                                 bool per_call = false);

// What calls, objnew and flow read: every call of a method (counted, or timed by pairing each
// return with its entry on the thread: TRACE_F_DEPTH), every object created.
enum class RuntimeTally { Calls, TimedCalls, Objects };

// A runtime tally planned as in-kernel aggregation (keyed_plan.h): one slot, keyed by the method
// or type name (`keys`).
struct RuntimeAggregation {
  const Runtime* runtime = nullptr;
  std::string object;
  AggregationPlan plan;
  std::vector<AggregateKey> keys;
  std::vector<std::string_view> probes;  // the probes used, for the line said at start
};
Result<RuntimeAggregation> plan_runtime_tally(ObjectCache& cache, const TargetContext& ctx,
                                              const std::string& forced, RuntimeTally what,
                                              std::string_view tool);

// A method's name from its key parts, joined as the runtime does (Runtime::name_joiner).
std::string runtime_name(const Runtime& r, std::span<const std::string> parts);

// What a tool that turns on per-call probes says at start: which, what they cost, what the
// runtime needs for them to fire.
std::string per_call_notice(const Runtime& r, std::span<const std::string_view> probes);

// flow: the calls of `plan` (its MethodEntry and MethodReturn probes) paired by their depth on the
// thread (TRACE_F_DEPTH), each event carrying it, and the returns attached first.
void pair_calls_by_depth(RuntimePlan& plan);

// The files among `paths` (a process's mapped objects, or a command's program and its libraries)
// named as `r`'s probes' carrier, in their order.
std::vector<std::string> runtime_carriers(const Runtime& r, std::span<const std::string> paths);

}  // namespace uscope
