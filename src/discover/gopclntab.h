#pragma once
// Go's own function table, `.gopclntab`: every function's name, entry and end, its file:line
// table and its inline tree (FUNCDATA_InlTree + PCDATA_InlTreeIndex). Go binaries keep it when
// stripped (`-ldflags='-s -w'` drops .symtab and DWARF, never this: the runtime needs it for
// tracebacks), so it is how uscope finds and names functions of stripped Go programs, and how it
// sees functions the compiler inlined (net/http.Get, fmt.Println), which no symbol table lists.
//
// Hand-written because no packaged C/C++ library reads it (elfutils does not know Go; Go's own
// debug/gosym is Go). Layouts: Go 1.16-1.17 (magic 0xfffffffa), 1.18-1.19 (0xfffffff0), 1.20+
// (0xfffffff1). The pcHeader's textStart, not .text's address, is where entry offsets count from
// (they differ in some binaries). Every offset read is bounds-checked: the bytes are untrusted
// (fuzz/gopclntab_fuzz.cc).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/elf_file.h"
#include "util/result.h"

namespace uscope {

struct GoFunction {
  // As the runtime prints it: "net/http.(*Client).do", "main.Sum[...]" (1.19 names generic
  // shapes "main.Sum[go.shape.int_0]": kept as is). Where the table's bytes hold it, which live
  // as long as the GoPclntab: not a copy of each of 63,000 names (4 MB) in a big program.
  std::string_view name;
  uint64_t entry = 0;  // link-time address
  uint64_t end = 0;    // first address past it (its file and line: frames_at(entry))
  // _func.flag (go1.17+, 0 before): kGoFuncTopFrame, kGoFuncSpWrite.
  uint8_t flag = 0;
};

// The runtime's funcFlag bits (runtime/symtab.go).
constexpr uint8_t kGoFuncTopFrame = 1;  // the outermost frame of a stack: goexit, mstart, rt0_go
constexpr uint8_t kGoFuncSpWrite = 2;   // writes SP where pcsp cannot follow (stack switches)

// One range of a function's SP-delta table (pcsp): from `start` to `end` the function's frame
// is `delta` bytes below the return address (rsp = entry rsp - delta).
struct GoSpDelta {
  uint64_t start = 0, end = 0;
  int32_t delta = 0;
};

// One position of the code at a pc: the function that ran, innermost first for inlined code.
struct GoFrame {
  std::string function;
  std::string file;
  int line = 0;
};

// One copy of an inlined function inside another.
struct GoInlinedCall {
  std::string function;  // the inlined function: "net/http.Get"
  std::string caller;    // the function whose code holds the copy: "main.fetch"
  uint64_t caller_entry = 0;
  // The copy's first instruction (the lowest pc whose inline tree position is this call or a
  // call inlined into it): where an entry probe of the inlined function attaches.
  uint64_t pc = 0;
  std::string call_file;  // where the call is written in `caller` (or in the function it was
  int call_line = 0;      // inlined into, for nested inlining)
  int depth = 0;          // 1 = inlined directly into `caller`, 2 = into a function inlined there
};

// What the runtime's moduledata says of the program's types (go1.18+; zeros when unknown): the
// range of type descriptors, whose nameOff/typeOff fields count from `types`, and the typelinks
// (int32 offsets from `types`) that reflection starts from.
struct GoModuleData {
  uint64_t types = 0, etypes = 0;
  uint64_t typelinks = 0, ntypelinks = 0;
};

class GoPclntab {
 public:
  // `data` is the section's bytes (copied), `section_addr` its link-time address.
  static Result<GoPclntab> parse(std::span<const uint8_t> data, uint64_t section_addr);
  // The object's .gopclntab section; nullopt when the object has none (not Go). The table reads
  // its bytes and inline trees from `elf` (not copied): `elf` must outlive it. Read it through
  // StoredObject::go_table() where there is one, so that an object's table is parsed once.
  static Result<std::optional<GoPclntab>> read(const ElfFile& elf);

  GoPclntab(GoPclntab&&) noexcept;
  GoPclntab& operator=(GoPclntab&&) noexcept;
  ~GoPclntab();

  uint64_t text_start() const;
  const GoModuleData& module() const;  // read() finds it; parse() alone leaves it empty
  const std::vector<GoFunction>& functions() const;  // sorted by entry
  const GoFunction* containing(uint64_t pc) const;
  // What ran at `pc`: the inlined calls innermost first, then the function itself, each with the
  // file:line of `pc` in it (for an outer frame: the line of the call into the inner one). Empty
  // when no function covers `pc`.
  std::vector<GoFrame> frames_at(uint64_t pc) const;
  // The SP-delta table of functions()[index], in address order; empty when it has none or it is
  // malformed (then as far as it could be read).
  std::vector<GoSpDelta> sp_deltas(size_t index) const;
  // Every inlined copy of every function, decoded on first use and kept.
  const std::vector<GoInlinedCall>& inlined_calls() const;
  // The inlined copies of the functions `wanted` accepts (by name), decoded now and not kept: a
  // probe on one function need not hold the copies of all (12 MB in a big program).
  std::vector<GoInlinedCall> inlined_calls(
      const std::function<bool(const std::string&)>& wanted) const;

  struct Impl;

 private:
  explicit GoPclntab(std::unique_ptr<Impl> impl);
  // parse() of `data`, which must outlive the table; `owned` is kept with it (empty, or the
  // buffer `data` points into).
  static Result<GoPclntab> parse_in_place(std::span<const uint8_t> data, uint64_t section_addr,
                                          std::vector<uint8_t> owned);
  std::unique_ptr<Impl> impl_;
};

}  // namespace uscope
