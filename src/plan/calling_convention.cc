#include "plan/calling_convention.h"

namespace uscope {

namespace {

constexpr uscope_reg kSysvArgs[] = {UREG_RDI, UREG_RSI, UREG_RDX, UREG_RCX, UREG_R8, UREG_R9};
constexpr uscope_reg kSysvResults[] = {UREG_RAX, UREG_RDX};
// Go's ABIInternal on amd64 (cmd/compile/abi-internal.md): nine integer registers, the same
// sequence for results.
constexpr uscope_reg kGoInts[] = {UREG_RAX, UREG_RBX, UREG_RCX, UREG_RDI, UREG_RSI,
                                  UREG_R8,  UREG_R9,  UREG_R10, UREG_R11};

}  // namespace

const CallingConvention& sysv_convention() {
  static const CallingConvention cc{"SysV x86-64", kSysvArgs, kSysvResults, CallKey::ThreadStack,
                                    ReturnSites::Uretprobe};
  return cc;
}

const CallingConvention& go_register_convention() {
  static const CallingConvention cc{"Go register ABI (amd64)", kGoInts, kGoInts, CallKey::Goroutine,
                                    ReturnSites::RetInstructions};
  return cc;
}

const CallingConvention& go_stack_convention() {
  static const CallingConvention cc{
      "Go stack ABI (before Go 1.17)", {}, {}, CallKey::Goroutine, ReturnSites::RetInstructions};
  return cc;
}

const char* register_name(uscope_reg reg) {
  static constexpr const char* kNames[TRACE_NUM_REGS] = {
      "r15", "r14", "r13", "r12", "rbp",      "rbx", "r11", "r10",   "r9",  "r8", "rax",
      "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs",  "flags", "rsp", "ss"};
  return reg >= 0 && reg < TRACE_NUM_REGS ? kNames[reg] : "?";
}

}  // namespace uscope
