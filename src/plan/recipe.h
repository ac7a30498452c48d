#pragma once
// Compiles a parsed probe (probe_spec.h) into the fetch recipe trace.bpf.c interprets at one
// attach site: which registers, dereferences, strings and comparisons, in stack-machine ops.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bpf/trace.h"
#include "discover/usdt.h"
#include "plan/calling_convention.h"
#include "plan/probe_spec.h"
#include "util/result.h"

namespace uscope {

// How user space decodes one emitted field of an event.
struct OutputField {
  // GoValue, GoValues: one Go interface value or a []any (%v of a GoValue expression), decoded
  // to text by collect/ (TOP_EMIT_GOIFACE's payload).
  enum class Kind { Value, String, GoValue, GoValues };
  Kind kind = Kind::Value;
  FormatConversion conv;
};

// What the compiler needs to know about the site a recipe runs at.
struct SiteContext {
  ProbeKind kind = ProbeKind::Entry;
  const UsdtLocation* usdt = nullptr;  // USDT probes: the location's argument specs
  uint64_t site_addr = 0;              // link-time address of the probed instruction
  int32_t sp_delta = 0;                // rsp at the site minus rsp at function entry
  bool capture_stack = false;
  // Which registers argN and retval are, and what keys a return to its entry (SysV, Go).
  const CallingConvention* cc = &sysv_convention();
  std::string go_stack_abi;  // Go version when it predates the register ABI: argN is refused
  // Which of ProbeSpec::ends_at this site is (Expr::Op::AtEnd), -1 for any other site.
  int end_index = -1;
  // Link-time address of a symbol named in a USDT operand ("foo(%rip)"); nullopt if unknown.
  std::function<std::optional<uint64_t>(const std::string&)> symbol_address;
};

struct CompiledProbe {
  uscope_recipe main{};                // runs at the site
  std::optional<uscope_recipe> entry;  // return probes using $entry(): runs at function entry
  std::vector<OutputField> fields;     // in emit order
};

// Fails with "probe spec column N: ..." for what cannot run at this site (arg7 of a USDT probe
// with 3 arguments, a too complex expression, ...).
Result<CompiledProbe> compile_probe(const ProbeSpec& spec, const SiteContext& site,
                                    uint32_t probe_id);

// Recipes for `latency`: the entry half records the time keyed by (thread, entry rsp), the return
// half adds the duration to the recipe's log2 histogram.
// Under a Go convention (CallKey::Goroutine) both halves key by goroutine (TRACE_F_GOROUTINE).
uscope_recipe latency_entry_recipe(uint32_t probe_id, int32_t sp_delta,
                                   const CallingConvention& cc = sysv_convention());
uscope_recipe latency_return_recipe(uint32_t probe_id,
                                    const CallingConvention& cc = sysv_convention());

// Index into uscope_reg of a canonical x86-64 register name ("rdi", "rip"), or -1.
int trace_register(const std::string& name);

// Default and maximum bytes read for %s. The maximum leaves room in the BPF side's
// TRACE_MAX_STR read for the NUL bpf_probe_read_user_str() writes and for one byte more, read to
// see whether the string goes on (TRACE_STR_TRUNCATED).
inline constexpr int kDefaultStringBytes = 128;
inline constexpr int kMaxStringBytes = TRACE_MAX_STR - 3;

}  // namespace uscope
