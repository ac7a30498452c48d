#pragma once
// One description of how a function is called, used by the planner (which return sites to
// probe), the recipes (which register argN and retval are) and the BPF side (what keys one call's
// entry to its return). SysV x86-64 for C, C++ and Rust; Go's register ABI (ABIInternal, Go
// 1.17+ on amd64) and its older stack ABI (ABI0) for Go code.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "bpf/trace.h"

namespace uscope {

// What ties a return to its entry in the BPF `entries` map.
enum class CallKey {
  ThreadStack,  // (thread, rsp at entry): threads never move their stacks
  // (goroutine, distance from the top of its stack): goroutines move between threads, and the Go
  // runtime copies their stacks to grow and shrink them, which keeps that distance. The g pointer
  // is R14 in ABIInternal code (recipe flag TRACE_F_GOROUTINE).
  Goroutine,
};

// How a return probe is placed.
enum class ReturnSites {
  Uretprobe,        // the kernel's uretprobe (rewrites the return address on the stack)
  RetInstructions,  // a uprobe on each RET of the function (found by disassembly): Go, whose
                    // stacks move under a rewritten return address and crash the program
};

struct CallingConvention {
  std::string_view name;                    // "SysV x86-64", "Go register ABI (amd64)", ...
  std::span<const uscope_reg> int_args;     // argN in registers, in order (empty: on the stack)
  std::span<const uscope_reg> int_results;  // retval, then further results in registers
  CallKey key = CallKey::ThreadStack;
  ReturnSites returns = ReturnSites::Uretprobe;
};

const CallingConvention& sysv_convention();         // rdi rsi rdx rcx r8 r9; rax (rdx)
const CallingConvention& go_register_convention();  // rax rbx rcx rdi rsi r8 r9 r10 r11; same
const CallingConvention& go_stack_convention();     // Go < 1.17: everything on the stack

// The canonical name of a register ("rdi", "r14"), as site_cost.h's canonical_register() gives.
const char* register_name(uscope_reg reg);

}  // namespace uscope
