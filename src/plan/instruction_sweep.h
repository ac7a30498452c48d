#pragma once
// Where instructions start and where they branch, decoded without detail: the linear sweeps that
// need no more than that (all of a function for the branches into its prologue, a function up to
// a possible branch to check it is a real one; site_cost.h, site_placement.h). Zydis in its
// minimal mode decodes ~7x as many instructions a second as capstone with detail (6.8 M against
// 0.9 M a second over prometheus's .text on the reference VM), and these sweeps were most of the
// instructions `list` decoded. capstone still decodes the few instructions whose cost, registers
// and stores the planner weighs.
#include <cstddef>
#include <cstdint>
#include <span>

namespace uscope {

struct SweptInstruction {
  uint64_t pc = 0;
  uint8_t length = 0;
  bool direct_branch = false;  // jmp/jcc/call/loop/jrcxz rel: `target` is where it goes
  bool call = false;
  bool indirect_jump = false;  // jmp reg/mem: a jump table or a computed tail call
  const char* mnemonic = "";   // of an indirect jump, as capstone names it: "jmp", "bnd jmp"
  uint64_t target = 0;
};

// Decodes `code` (loaded at `addr`) one instruction after another.
class InstructionSweep {
 public:
  InstructionSweep(std::span<const uint8_t> code, uint64_t addr) : code_(code), addr_(addr) {}
  // The next instruction; false at the end of the code and at bytes that do not decode (pc() is
  // then where they start: skip_byte() steps over one to resynchronise).
  bool next(SweptInstruction& out);
  void skip_byte() { ++at_; }
  uint64_t pc() const { return addr_ + at_; }
  bool done() const { return at_ >= code_.size(); }

 private:
  std::span<const uint8_t> code_;
  uint64_t addr_;
  size_t at_ = 0;
};

}  // namespace uscope
