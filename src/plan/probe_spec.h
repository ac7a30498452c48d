#pragma once
// The probe language of `trace`, `count` and `latency`: bcc trace's grammar
//   [p|r|u]:[target]:function[+offset] [(predicate)] ["format"[, arg, ...]]
// parsed into an AST the planner turns into BPF fetch recipes. Errors carry the column.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace uscope {

enum class ProbeKind { Entry, Return, Usdt };

// A C type as written in a cast or a declared parameter list: `int`, `u8`, `char *`,
// `struct timespec *`. Scalars carry their width; struct, union and void bases have width 0 and
// are given meaning by DWARF (or a header) when the planner resolves names and members.
struct CType {
  std::string name;  // base type, spacing normalized: "int", "unsigned long", "struct timespec"
  int pointers = 0;  // number of '*'
  int width = 0;     // bytes of a scalar base type; 0 for struct/union/void/unknown
  bool is_signed = false;
};

// One parameter of a probe's declared list: `p:c:open(char *filename, int flags)`.
struct DeclaredParam {
  CType type;
  std::string name;
  int column = 0;
  // Written Go's way, name then type: `main.work(i int, tag string)`, the type hint of a Go
  // function without DWARF. The Go type in Go's own spelling, as its DWARF and type descriptors
  // name it ("string", "[]uint8" for []byte, "interface {}" for any, "*net/http.Request"); "" for
  // a C declaration (`type` is then set).
  std::string go_type{};
};

// Whether a declared list is written Go's way (the parser takes one form per list).
bool is_go_declared(const std::vector<DeclaredParam>& params);

// An expression over what a probe can see. Kept small on purpose: everything here must be
// evaluable by the one generic BPF program (no compiler at run time).
struct Expr {
  enum class Op {
    Arg,      // argN (1-based), `index`
    Retval,   // retval (return probes)
    Entry,    // $entry(argN): argument N saved at entry, read at return; `index`. With a child
              // (children[0], made by the planner, never parsed): that expression, evaluated at
              // entry (registers, reads) and saved, e.g. a Go parameter's register in an r: probe
    Pid,      // $pid (thread group id)
    Tid,      // $tid
    Cpu,      // $cpu
    Comm,     // $comm (string)
    Uid,      // $uid
    Int,      // integer literal, `value`
    String,   // string literal, `text` (only as an operand of == / != against a string)
    Str,      // str(ptr[, len]): NUL-terminated string at ptr, at most len bytes (len may be an
              // expression such as arg2, or an integer); children[0] = ptr, children[1] = len
    Deref,    // *ptr or *(u32*)ptr: reads `width` bytes at children[0], `is_signed`
    Unary,    // `op_text` in {"-", "!", "~"}, children[0]
    Binary,   // `op_text` in {"+","-","*","/","%","&","|","^","<<",">>",
              //   "==","!=","<","<=",">",">=","&&","||"}, children[0], children[1]
    Cast,     // (type)children[0]: `type`; scalars also set `width`/`is_signed` (truncate and
              // extend like C); pointer casts only give the value a type for `->` and %s
    Name,     // an identifier the language does not define: a parameter named by the spec's
              // declared list or by DWARF, or `this`; `text`. The planner resolves it before
              // compiling (it never reaches a recipe)
    Member,   // children[0]->`text` (`index` = 1) or children[0].`text` (`index` = 0); resolved
              // by the planner from DWARF or header types into a dereference at an offset
    Reg,      // ctx->REG (bcc): a register at the probe, `text` = canonical name ("rdx", "rip")
    GoValue,  // a Go value that is more than one word, made by the planner from a parameter's Go
              // type (never parsed): `text` = its Go type ("interface {}", "[]interface {}",
              // "error"), children = its words (type, or itab for any interface but interface {},
              // and data of an interface; address and length of a slice). `%v` prints it
              // (TOP_EMIT_GOIFACE)
    AtEnd,    // made by the planner (never parsed): children[0] at end `index` of
              // ProbeSpec::ends_at, and at a site that is none of them; -1 at the other ends, so
              // that each end reads only what is its own (HTTP/1's status at finishRequest,
              // HTTP/2's at handlerDone)
  };
  Op op = Op::Int;
  int index = 0;
  int64_t value = 0;
  std::string text;
  std::string op_text;
  int width = 8;
  bool is_signed = false;
  std::vector<Expr> children;
  std::optional<CType> type;  // Cast: the target type; after name resolution, the C type of
                              // the value when known (a parameter's DWARF type)
  int column = 0;             // 1-based column in the whole spec where this expression starts
};

// One conversion of the format string, e.g. "%lu".
struct FormatConversion {
  char conv = 'd';        // one of d i u x X p s c v (v: a value as Go's %v prints it)
  std::string length;     // "", "l", "ll", "h", "hh", "z"
  std::string flags;      // flags/width/precision as written, e.g. "-08"
  int column = 0;         // column of the '%' in the whole spec
  size_t format_pos = 0;  // where the conversion starts in the decoded `format`
  size_t format_len = 0;  // its length there ("%lu" = 3)
};

struct ProbeSpec {
  ProbeKind kind = ProbeKind::Entry;
  std::string target;    // path, library short name, or "" (main binary of -p/-c)
  std::string provider;  // USDT provider; "" lets the planner search all providers
  std::string function;  // symbol name (C, mangled, or demangled C++/Rust such as
                         // "orchard::Pear::ripen"), a demangled signature selecting one overload
                         // ("orchard::Pear::ripen(int)"), a glob, or a USDT probe name
  uint64_t offset = 0;   // func+offset
  std::optional<Expr> predicate;
  std::string format;                         // without quotes, escapes (\n \t \" \\) decoded
  std::vector<FormatConversion> conversions;  // parsed from `format`
  std::vector<Expr> args;                     // one per conversion
  // `open(char *filename)`, `main.work(i int, tag string)`; nullopt = none
  std::optional<std::vector<DeclaredParam>> params;
  std::string text;  // the spec as given
  int function_column = 0;
  // A Go return probe built in code (http_plan.h), never parsed: the call ends at the entry of
  // any of these functions, which the caller calls next from the same frame (so the goroutine key
  // of its entry is the call's), instead of at the RETs, which are single-stepped (~15 us a hit)
  // where an entry site after the stack check is emulated. Empty = at the RETs.
  std::vector<std::string> ends_at{};
  // With ends_at: at most one call of this probe runs on a goroutine at a time, so the call is
  // keyed by its goroutine alone (TRACE_F_GOROUTINE_ONLY) and may end in another frame than its
  // caller's (HTTP/2's handlerDone, several calls deeper than ServeHTTP).
  bool one_per_goroutine = false;
  // With one_per_goroutine: the entry of each of these functions drops the goroutine's call
  // unfinished, counted (TRACE_F_ABANDON, TC_ABANDONED): where a call that is still recorded can
  // no longer end (http_plan.h: a hijack, a connection's end, a new stream on the goroutine).
  std::vector<std::string> abandoned_at{};
};

// Parses one `trace` spec. Errors: "probe spec column 14: expected ')' ..." style messages that
// quote the spec and point at the column; format/argument count or type mismatches too (e.g.
// "%s" with $pid, retval on an entry probe, $entry on an entry probe, arg7).
Result<ProbeSpec> parse_probe_spec(std::string_view text);

// Parses a `count`/`latency` pattern: "[p:|u:]target:glob" or "glob" (bcc funccount's form);
// no predicate or format. kind is Entry unless "u:" is given.
Result<ProbeSpec> parse_probe_pattern(std::string_view text);

// Parses one expression on its own (a `--by` key, a `hist` value) as it would read at a probe of
// `kind`; columns count from the start of `text`.
Result<Expr> parse_probe_expression(std::string_view text, ProbeKind kind);

// Renders an error message that quotes `text` with a caret under `column` (two lines).
std::string caret_message(std::string_view text, int column, std::string_view message);

}  // namespace uscope
