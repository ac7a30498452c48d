// Unwind spans for Go functions from .gopclntab's SP deltas. Go writes no .eh_frame for its own
// code (cgo's C code has one) and its .debug_frame, where kept, is derived from the same pcsp
// table without saying where rbp is: pcsp is what the Go runtime's own traceback uses, and it
// survives stripping.
//
// At a pc with SP delta d: CFA = rsp + d + 8 (the return address sits just above the frame),
// return address at CFA - 8. The caller's rbp: amd64 functions with a frame save it in the
// frame's top slot, CFA - 16, either
//   go1.17-1.20:  SUBQ $N, SP; MOVQ BP, N-8(SP); LEAQ N-8(SP), BP
//   go1.21+:      PUSHQ BP; MOVQ SP, BP; SUBQ $N-8, SP
// so the instruction at the pc where d first turns positive tells which: with the first form,
// rbp is saved only after the MOVQ (one instruction later, when the caller's rbp is still in
// rbp), with the second from there on. Functions without either (frameless leaves, NOFRAME
// assembly) leave rbp alone. In the epilogue rbp is restored before SP moves back; the slot still
// holds the same value then, so "at CFA - 16" stays right.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "discover/gopclntab.h"
#include "discover/unwind_spans.h"

namespace uscope {

namespace {

// Outermost frames when the table has no funcFlag (go1.16).
bool outermost_by_name(std::string_view name) {
  return name == "runtime.goexit" || name == "runtime.mstart" || name == "runtime.rt0_go";
}

// Where rbp is saved from, given the pc at which the SP delta first becomes `delta` > 0; 0 when
// the function does not save it.
uint64_t rbp_saved_from(const ElfFile& elf, uint64_t pc, int32_t delta) {
  auto before = elf.code_bytes(pc - 1, 1);
  if (before.size() == 1 && before[0] == 0x55 && delta == 8) return pc;  // PUSHQ BP
  auto code = elf.code_bytes(pc, 8);
  const int64_t slot = int64_t{delta} - 8;
  // MOVQ BP, disp8(SP) = 48 89 6c 24 disp8; MOVQ BP, disp32(SP) = 48 89 ac 24 disp32
  if (code.size() >= 5 && code[0] == 0x48 && code[1] == 0x89 && code[2] == 0x6c &&
      code[3] == 0x24 && static_cast<int8_t>(code[4]) == slot)
    return pc + 5;
  if (code.size() >= 8 && code[0] == 0x48 && code[1] == 0x89 && code[2] == 0xac &&
      code[3] == 0x24) {
    int32_t disp = 0;
    std::memcpy(&disp, code.data() + 4, 4);
    if (disp == slot) return pc + 8;
  }
  return 0;
}

UnwindRule frame_rule(int32_t delta, bool rbp_saved) {
  UnwindRule r{.cfa = UNWIND_CFA_RSP, .ra_offset = -8, .cfa_offset = delta + 8};
  if (rbp_saved) {
    r.rbp = UNWIND_RBP_AT_CFA;
    r.rbp_offset = -16;
  }
  return r;
}

}  // namespace

std::vector<UnwindSpan> go_spans(const GoPclntab& go, const ElfFile& elf) {
  std::vector<UnwindSpan> out;
  const auto& fs = go.functions();
  for (size_t i = 0; i < fs.size(); ++i) {
    const GoFunction& f = fs[i];
    if (f.end <= f.entry) continue;
    // Go's own traceback stops at TOPFRAME functions (a goroutine's or thread's first frame) and
    // at SPWRITE ones (morestack, systemstack, mcall, asmcgocall switch stacks: what is above
    // them is another stack's, which pcsp does not describe).
    if ((f.flag & (kGoFuncTopFrame | kGoFuncSpWrite)) || outermost_by_name(f.name)) {
      out.push_back({f.entry, f.end, UnwindRule{.cfa = UNWIND_CFA_END}});
      continue;
    }
    auto deltas = go.sp_deltas(i);
    uint64_t saved_from = 0;
    for (const auto& d : deltas) {
      if (d.delta > 0) {
        saved_from = rbp_saved_from(elf, d.start, d.delta);
        break;
      }
    }
    for (const auto& d : deltas) {
      if (d.delta < 0 || d.delta > INT32_MAX - 8) {
        out.push_back({d.start, d.end, UnwindRule{.cfa = UNWIND_CFA_UNSUPPORTED}});
        continue;
      }
      const bool saves = saved_from != 0 && d.delta > 0;
      if (saves && d.start < saved_from && saved_from < d.end) {
        out.push_back({d.start, saved_from, frame_rule(d.delta, false)});
        out.push_back({saved_from, d.end, frame_rule(d.delta, true)});
      } else {
        out.push_back({d.start, d.end, frame_rule(d.delta, saves && d.start >= saved_from)});
      }
    }
  }
  return out;
}

}  // namespace uscope
