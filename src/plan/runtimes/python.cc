// CPython's probes (the python provider, Doc/howto/instrumentation.rst), in the interpreter
// binary (Debian links it statically) or libpython3.X.so: a collection between gc__start (the
// generation collected) and gc__done (the objects it freed). function__entry/return fire only for
// calls entered from C in 3.11 and slow each call that fires them (docs/BENCHMARKS.md): calls come
// from the frame reader instead.
#include <fmt/core.h>

#include "plan/runtime.h"

namespace uscope {
namespace python_runtime_probes {

std::string generation(std::span<const DecodedValue> v) {
  return v.empty() ? "" : fmt::format("generation {}", static_cast<int32_t>(v[0].number));
}
std::string collected(std::span<const DecodedValue> v) {
  return v.empty() ? "" : fmt::format("{} collected", static_cast<int64_t>(v[0].number));
}

constexpr std::string_view kCallMessage = R"("%s:%s:%d", arg1, arg2, arg3)";
constexpr std::string_view kCallKey = "str(arg1),str(arg2)";

// Measured here (docs/BENCHMARKS.md, table Q: µs added per call).
constexpr std::string_view kPerCallCost =
    "each call costs the program ≈ 2.3 µs (counted by name at its return), measured here "
    "(docs/BENCHMARKS.md, table Q)";

constexpr RuntimeProbe kProbes[] = {
    {RuntimeEvent::GcBegin, "python", "gc__start", R"("%d", arg1)", false, "", generation},
    {RuntimeEvent::GcEnd, "python", "gc__done", R"("%d", arg1)", false, "", collected},
    // file, function, line
    {RuntimeEvent::MethodEntry, "python", "function__entry", kCallMessage, true, "", nullptr,
     kCallKey, true},
    {RuntimeEvent::MethodReturn, "python", "function__return", kCallMessage, true, "", nullptr,
     kCallKey},
};

// python3.11, python3.11d, libpython3.11.so.1.0, libpython3.11d.so.1.0
bool is_python(std::string_view file) {
  if (file.starts_with("lib")) file.remove_prefix(3);
  if (!file.starts_with("python3.")) return false;
  file.remove_prefix(8);
  size_t digits = 0;
  while (digits < file.size() && file[digits] >= '0' && file[digits] <= '9') ++digits;
  if (digits == 0) return false;
  file.remove_prefix(digits);
  if (file.starts_with("d")) file.remove_prefix(1);
  return file.empty() || file.starts_with(".so");
}

}  // namespace python_runtime_probes

const Runtime& python_runtime() {
  using namespace python_runtime_probes;
  static const Runtime r{
      .name = "python",
      .title = "Python (CPython)",
      .carries_probes = is_python,
      .carrier = "python3.X or libpython3.X.so",
      .provider = "python",
      .probes = kProbes,
      .without_probes =
          "this Python was built without --with-dtrace (pyenv's and most self-built ones are); "
          "Debian's /usr/bin/python3.11 has the probes",
      .per_call_needs = "",
      .name_joiner = ":",
      .per_call_cost = kPerCallCost,
  };
  return r;
}

}  // namespace uscope
