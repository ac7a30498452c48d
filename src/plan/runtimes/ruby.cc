// Ruby's probes (the ruby provider, probes.d): a collection's mark and sweep phases, each between
// its begin and end (both may run several times per collection: marking and sweeping are
// incremental and lazy); method and C-method calls and object creation, which fire at every call
// or allocation once attached.
#include "plan/runtime.h"

namespace uscope {
namespace ruby_runtime_probes {

// method__entry/return, cmethod__*: class name, method name, file, line.
constexpr std::string_view kCall = R"("%s#%s %s:%d", arg1, arg2, arg3, arg4)";
constexpr std::string_view kCallKey = "str(arg1),str(arg2)";

// Measured here (docs/BENCHMARKS.md, table Q: µs added per call over what the runtime needs).
constexpr std::string_view kPerCallCost =
    "each hit costs the program ≈ 3.3 µs (counted by name), each call ≈ 5.0 µs timed (calls -L) "
    "or ≈ 8.3 µs shown (flow), measured here (docs/BENCHMARKS.md, table Q)";

constexpr RuntimeProbe kProbes[] = {
    {RuntimeEvent::GcBegin, "ruby", "gc__mark__begin", "", false, "mark"},
    {RuntimeEvent::GcEnd, "ruby", "gc__mark__end", "", false, "mark"},
    {RuntimeEvent::GcBegin, "ruby", "gc__sweep__begin", "", false, "sweep"},
    {RuntimeEvent::GcEnd, "ruby", "gc__sweep__end", "", false, "sweep"},
    {RuntimeEvent::MethodEntry, "ruby", "method__entry", kCall, true, "", nullptr, kCallKey},
    {RuntimeEvent::MethodReturn, "ruby", "method__return", kCall, true, "", nullptr, kCallKey},
    {RuntimeEvent::MethodEntry, "ruby", "cmethod__entry", kCall, true, "", nullptr, kCallKey},
    {RuntimeEvent::MethodReturn, "ruby", "cmethod__return", kCall, true, "", nullptr, kCallKey},
    // class name, file, line
    {RuntimeEvent::ObjectNew, "ruby", "object__create", R"("%s %s:%d", arg1, arg2, arg3)", true, "",
     nullptr, "str(arg1)"},
    {RuntimeEvent::Exception, "ruby", "raise", R"("%s %s:%d", arg1, arg2, arg3)"},
};

// libruby-3.1.so.3.1, libruby.so.3.1; a ruby built with its library inside: ruby3.1, ruby
bool is_ruby(std::string_view file) {
  return file.starts_with("libruby") || file == "ruby" || file.starts_with("ruby3.") ||
         file.starts_with("ruby2.");
}

}  // namespace ruby_runtime_probes

const Runtime& ruby_runtime() {
  using namespace ruby_runtime_probes;
  static const Runtime r{
      .name = "ruby",
      .title = "Ruby (CRuby)",
      .carries_probes = is_ruby,
      .carrier = "libruby",
      .provider = "ruby",
      .probes = kProbes,
      .without_probes =
          "this Ruby was built without DTrace probes (configure --enable-dtrace; rbenv and "
          "ruby-build leave them out); Debian's ruby3.1 has them",
      // Measured here: without a TracePoint, a method written in Ruby fired no method__entry;
      // with `TracePoint.new(:call) {}.enable`, each of its calls did.
      .per_call_needs =
          "a TracePoint on :call and :return enabled in the program, for methods written in Ruby "
          "(Ruby 2.5+ "
          "compiles no trace instructions otherwise; C methods fire always)",
      .name_joiner = "#",
      .per_call_cost = kPerCallCost,
  };
  return r;
}

}  // namespace uscope
