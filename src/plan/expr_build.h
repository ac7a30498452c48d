#pragma once
// Probe expressions built in code rather than parsed: the commands that plan their own trace
// probes (http, tls) write each spec's predicate and arguments with these.
#include <cstdint>

#include "plan/probe_spec.h"

namespace uscope::expr {

Expr reg(const char* name);  // a register at the probe: "rax", "rdi", ...
Expr integer(int64_t v);
Expr retval();
Expr binary(const char* op, Expr a, Expr b);  // op: "+", "==", "&&", ...
// `child` evaluated at the function's entry and saved for its return (a parameter's register is
// reused by then).
Expr at_entry(Expr child);
// The `width`-byte value at `base` + `offset` (sign-extended when `is_signed`).
Expr load(Expr base, uint64_t offset, int width = 8, bool is_signed = false);
// `e` truncated to `width` bytes and sign-extended, as a C cast to int32_t does.
Expr signed_cast(Expr e, int width);
// `len` bytes at `ptr` (a pointer + length string).
Expr bytes_at(Expr ptr, Expr len);
// The Go string (pointer, length) at `base` + `offset`.
Expr go_string_at(const Expr& base, uint64_t offset);
// `when` ? `value` : -1, without a branch (`when` is 0 or 1): (when * (value + 1)) - 1.
Expr or_minus_one(Expr when, Expr value);
// `e` at end `index` of ProbeSpec::ends_at (and at any other kind of site), -1 at its other ends.
Expr at_end(size_t index, Expr e);
// The smaller of `e` and `cap` (`e` is not negative).
Expr at_most(const Expr& e, int64_t cap);

// Appends `e` to the spec's arguments, printed with %`conv`.
void add_arg(ProbeSpec& spec, Expr e, char conv);

}  // namespace uscope::expr
