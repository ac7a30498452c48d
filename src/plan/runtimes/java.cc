// HotSpot's probes (libjvm.so's hotspot provider, OpenJDK's dtrace.md): a collection between
// gc__begin (its one argument: a full collection) and gc__end on the VM thread; a thread's start
// and end with its Java name, Java id, native id and daemon flag; each class loaded. The
// method and allocation probes fire only with -XX:+ExtendedDTraceProbes, which slows every call.

#include "plan/runtime.h"

namespace uscope {
namespace java_runtime_probes {

std::string gc_kind(std::span<const DecodedValue> v) {
  return !v.empty() && v[0].number ? "full" : "not full";
}

// thread__start/stop: name (pointer, length), Java thread id, native thread id, daemon.
constexpr std::string_view kThreadMessage = R"("%s %d %d %d", str(arg1, arg2), arg3, arg4, arg5)";

// method__entry/return: thread id, class (pointer, length), method (pointer, length), signature
// (pointer, length).
constexpr std::string_view kCallMessage = R"("%s.%s", str(arg2, arg3), str(arg4, arg5))";
constexpr std::string_view kCallKey = "str(arg2, arg3),str(arg4, arg5)";

// Measured here (docs/BENCHMARKS.md, table Q: µs added per call over what the runtime needs).
constexpr std::string_view kPerCallCost =
    "each hit costs the program ≈ 1.9 µs (counted by name), each call ≈ 3.2 µs timed (calls -L) "
    "or ≈ 4.6 µs shown (flow), measured here (docs/BENCHMARKS.md, table Q)";

constexpr RuntimeProbe kProbes[] = {
    {RuntimeEvent::GcBegin, "hotspot", "gc__begin", R"("%d", arg1)", false, "", gc_kind},
    {RuntimeEvent::GcEnd, "hotspot", "gc__end", ""},
    {RuntimeEvent::ThreadStart, "hotspot", "thread__start", kThreadMessage},
    {RuntimeEvent::ThreadEnd, "hotspot", "thread__stop", kThreadMessage},
    {RuntimeEvent::ClassLoad, "hotspot", "class__loaded", R"("%s", str(arg1, arg2))"},
    // thread id, class (pointer, length), method (pointer, length), signature (pointer, length)
    {RuntimeEvent::MethodEntry, "hotspot", "method__entry", kCallMessage, true, "", nullptr,
     kCallKey, false, "DTraceMethodProbes", "-XX:+DTraceMethodProbes"},
    {RuntimeEvent::MethodReturn, "hotspot", "method__return", kCallMessage, true, "", nullptr,
     kCallKey, false, "DTraceMethodProbes", "-XX:+DTraceMethodProbes"},
    // thread id, class (pointer, length), size in bytes. The size is not used: OpenJDK 17's is 0
    // or junk for most allocations (its -4@%ebx is not set on every path; bpftrace reads the same).
    {RuntimeEvent::ObjectNew, "hotspot", "object__alloc", R"("%s", str(arg2, arg3))", true, "",
     nullptr, "str(arg2, arg3)", false, "DTraceAllocProbes", "-XX:+DTraceAllocProbes"},
};

bool is_libjvm(std::string_view file) {
  return file == "libjvm.so";
}

}  // namespace java_runtime_probes

const Runtime& java_runtime() {
  using namespace java_runtime_probes;
  static const Runtime r{
      .name = "java",
      .title = "Java (HotSpot)",
      .carries_probes = is_libjvm,
      .carrier = "libjvm.so",
      .provider = "hotspot",
      .probes = kProbes,
      .without_probes =
          "this JDK was built without DTrace probes (configure --enable-dtrace); Debian's "
          "openjdk-17 has them",
      .per_call_needs = "the JVM started with -XX:+ExtendedDTraceProbes",
      .name_joiner = ".",
      .per_call_cost = kPerCallCost,
  };
  return r;
}

}  // namespace uscope
