// PHP's probes (the php provider, Zend/zend_dtrace.d): function calls, exceptions, file
// compilation and requests. They fire only in a PHP started with USE_ZEND_DTRACE=1 in its
// environment (Zend switches to its instrumented executor then, which slows every call). PHP has
// no probe in its garbage collector nor at a thread's start.
#include "plan/runtime.h"

namespace uscope {
namespace php_runtime_probes {

// function__entry/return: function name, file, line, class name, scope ("::" or "->").
constexpr std::string_view kCall = R"("%s%s%s %s:%d", arg4, arg5, arg1, arg2, arg3)";
// class, scope, function: "Widget::work", "strlen"
constexpr std::string_view kCallKey = "str(arg4),str(arg5),str(arg1)";

// Measured here (docs/BENCHMARKS.md, table Q: µs added per call over what the runtime needs).
constexpr std::string_view kPerCallCost =
    "each hit costs the program ≈ 2.5 µs (counted by name), each call ≈ 4.0 µs timed (calls -L) "
    "or ≈ 5.5 µs shown (flow), measured here (docs/BENCHMARKS.md, table Q)";

constexpr RuntimeProbe kProbes[] = {
    {RuntimeEvent::MethodEntry, "php", "function__entry", kCall, true, "", nullptr, kCallKey},
    {RuntimeEvent::MethodReturn, "php", "function__return", kCall, true, "", nullptr, kCallKey},
    {RuntimeEvent::Exception, "php", "exception__thrown", R"("%s", arg1)", true},
};

// php8.2, php, php-fpm8.2, php-cgi8.2, libphp8.2.so (the Apache module)
bool is_php(std::string_view file) {
  return file == "php" || file.starts_with("php8.") || file.starts_with("php7.") ||
         file.starts_with("php-fpm") || file.starts_with("php-cgi") || file.starts_with("libphp");
}

}  // namespace php_runtime_probes

const Runtime& php_runtime() {
  using namespace php_runtime_probes;
  static const Runtime r{
      .name = "php",
      .title = "PHP (Zend)",
      .carries_probes = is_php,
      .carrier = "php",
      .provider = "php",
      .probes = kProbes,
      .without_probes =
          "this PHP was built without --enable-dtrace; Debian's php8.2 has the probes",
      .per_call_needs = "PHP started with USE_ZEND_DTRACE=1 in its environment",
      .per_call_env = "USE_ZEND_DTRACE",
      .name_joiner = "",
      .per_call_cost = kPerCallCost,
  };
  return r;
}

}  // namespace uscope
