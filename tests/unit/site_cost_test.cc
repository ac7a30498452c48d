// Site classification and entry-site moving over hand-assembled byte sequences (Intel syntax in
// the comments; bytes from GNU as). The classes follow the table measured on the reference VM in
// src/plan/site_cost.cc.
#include "plan/site_cost.h"

#include "plan/branch_candidates.h"
#include "plan/instruction_sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace uscope {
namespace {

constexpr uint64_t kAddr = 0x401000;

using Bytes = std::vector<uint8_t>;

struct ClassCase {
  const char* name;
  Bytes code;
  SiteCost cost;
  const char* insn;  // capstone's text
  size_t length;
};

const std::vector<ClassCase>& class_cases() {
  static const std::vector<ClassCase> cases = {
      {"nop", {0x90}, SiteCost::Emulated, "nop", 1},
      {"xchg_ax_ax", {0x66, 0x90}, SiteCost::Emulated, "nop", 2},
      {"pause", {0xf3, 0x90}, SiteCost::Emulated, "pause", 2},
      {"nopl_rax", {0x0f, 0x1f, 0x00}, SiteCost::Emulated, "nop dword ptr [rax]", 3},
      {"nopl_0_rax", {0x0f, 0x1f, 0x40, 0x00}, SiteCost::Emulated, "nop dword ptr [rax]", 4},
      {"nop5", {0x0f, 0x1f, 0x44, 0x00, 0x00}, SiteCost::Emulated, "nop dword ptr [rax + rax]", 5},
      {"nopw6",
       {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
       SiteCost::Emulated,
       "nop word ptr [rax + rax]",
       6},
      {"nop8",
       {0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0},
       SiteCost::Emulated,
       "nop dword ptr [rax + rax]",
       8},
      // cs nopw 0x0(%rax,%rax,1): the cs prefix makes the kernel refuse it.
      {"cs_nopw",
       {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0},
       SiteCost::Unprobeable,
       "nop word ptr cs:[rax + rax]",
       10},
      {"endbr64", {0xf3, 0x0f, 0x1e, 0xfa}, SiteCost::SingleStepped, "endbr64", 4},
      {"push_rbp", {0x55}, SiteCost::Emulated, "push rbp", 1},
      {"push_rbx", {0x53}, SiteCost::Emulated, "push rbx", 1},
      {"push_r12", {0x41, 0x54}, SiteCost::Emulated, "push r12", 2},
      // rex.W push rbp: a REX other than 0x41 is not emulated.
      {"push_rex_rbp", {0x48, 0x55}, SiteCost::SingleStepped, "push rbp", 2},
      {"push_imm", {0x6a, 0x01}, SiteCost::SingleStepped, "push 1", 2},
      {"mov_rbp_rsp", {0x48, 0x89, 0xe5}, SiteCost::SingleStepped, "mov rbp, rsp", 3},
      {"mov_rdi_rbx", {0x48, 0x89, 0xdf}, SiteCost::SingleStepped, "mov rdi, rbx", 3},
      {"sub_rsp_0x18", {0x48, 0x83, 0xec, 0x18}, SiteCost::SingleStepped, "sub rsp, 0x18", 4},
      // lea rax, [rdi + 0x10]
      {"lea", {0x48, 0x8d, 0x47, 0x10}, SiteCost::SingleStepped, "lea rax, [rdi + 0x10]", 4},
      {"xor_eax", {0x31, 0xc0}, SiteCost::SingleStepped, "xor eax, eax", 2},
      {"mov_eax_1", {0xb8, 0x01, 0, 0, 0}, SiteCost::SingleStepped, "mov eax, 1", 5},
      {"test_edi", {0x85, 0xff}, SiteCost::SingleStepped, "test edi, edi", 2},
      // cmp rdi, 5
      {"cmp_rdi", {0x48, 0x83, 0xff, 0x05}, SiteCost::SingleStepped, "cmp rdi, 5", 4},
      {"ret", {0xc3}, SiteCost::SingleStepped, "ret", 1},
      {"jmp_rel8", {0xeb, 0x00}, SiteCost::Emulated, "jmp 0x401002", 2},
      {"jmp_rel32", {0xe9, 0, 0, 0, 0}, SiteCost::Emulated, "jmp 0x401005", 5},
      {"call_rel32", {0xe8, 0, 0, 0, 0}, SiteCost::Emulated, "call 0x401005", 5},
      {"je_rel8", {0x74, 0x00}, SiteCost::Emulated, "je 0x401002", 2},
      {"je_rel32", {0x0f, 0x84, 0, 0, 0, 0}, SiteCost::Emulated, "je 0x401006", 6},
      {"bnd_jmp", {0xf2, 0xe9, 0, 0, 0, 0}, SiteCost::Emulated, "bnd jmp 0x401006", 6},
      // jmpw rel16: the kernel refuses 0x66-prefixed relative branches.
      {"jmpw_rel16", {0x66, 0xe9, 0, 0}, SiteCost::Unprobeable, "jmp 0x1004", 4},
      // nop with a /1 ModRM reg field is not one of the nops the kernel emulates.
      {"nop_0f1f_reg1",
       {0x0f, 0x1f, 0x48, 0x00},
       SiteCost::SingleStepped,
       "nop dword ptr [rax]",
       4},
      {"jmp_rax", {0xff, 0xe0}, SiteCost::SingleStepped, "jmp rax", 2},
      {"call_rax", {0xff, 0xd0}, SiteCost::SingleStepped, "call rax", 2},
      // notrack jmp rax (CET jump tables): the ds prefix makes the kernel refuse it.
      {"notrack_jmp", {0x3e, 0xff, 0xe0}, SiteCost::Unprobeable, "jmp rax", 3},
      // lock add qword ptr [rsp], 0
      {"lock_add",
       {0xf0, 0x48, 0x83, 0x04, 0x24, 0x00},
       SiteCost::Unprobeable,
       "lock add qword ptr [rsp], 0",
       6},
      {"int3", {0xcc}, SiteCost::Unprobeable, "int3", 1},
      {"syscall", {0x0f, 0x05}, SiteCost::Unprobeable, "syscall", 2},
  };
  return cases;
}

TEST(site_cost, classifies_each_instruction_as_measured) {
  for (const ClassCase& c : class_cases()) {
    SCOPED_TRACE(c.name);
    auto got = classify_site(c.code, kAddr);
    ASSERT_TRUE(got.has_value()) << got.error().message;
    EXPECT_EQ(site_cost_name(got->cost), std::string(site_cost_name(c.cost)));
    EXPECT_EQ(got->insn, c.insn);
    EXPECT_EQ(got->length, c.length);
    EXPECT_FALSE(got->why.empty());
  }
}

TEST(site_cost, classify_fails_on_empty_or_truncated_code) {
  EXPECT_FALSE(classify_site({}, kAddr).has_value());
  const Bytes truncated = {0xe8, 0x00};  // call rel32 missing three bytes
  auto got = classify_site(truncated, kAddr);
  ASSERT_FALSE(got.has_value());
  EXPECT_NE(got.error().message.find("0x401000"), std::string::npos);
}

TEST(site_cost, canonical_register_maps_subregisters) {
  EXPECT_EQ(canonical_register("edi"), "rdi");
  EXPECT_EQ(canonical_register("dil"), "rdi");
  EXPECT_EQ(canonical_register("%di"), "rdi");
  EXPECT_EQ(canonical_register("r8d"), "r8");
  EXPECT_EQ(canonical_register("R9W"), "r9");
  EXPECT_EQ(canonical_register("r15b"), "r15");
  EXPECT_EQ(canonical_register("ah"), "rax");
  EXPECT_EQ(canonical_register("spl"), "rsp");
  EXPECT_EQ(canonical_register("xmm0"), "xmm0");
}

const std::vector<std::string> kArgRegs = {"rdi", "rsi", "rdx", "rcx", "r8", "r9"};

// endbr64; push rbp; mov rbp, rsp; mov [rbp-8], rdi; pop rbp; ret
const Bytes kEndbrPrologue = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89,
                              0xe5, 0x48, 0x89, 0x7d, 0xf8, 0x5d, 0xc3};

TEST(site_cost, moves_past_endbr64_to_push_rbp) {
  auto plan = plan_entry_site(kEndbrPrologue, kAddr, kArgRegs, true);
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_EQ(plan->offset_in_function, 4u);
  EXPECT_EQ(plan->sp_delta, 0);  // the site is before the push executes
  EXPECT_EQ(plan->original.cost, SiteCost::SingleStepped);
  EXPECT_EQ(plan->original.insn, "endbr64");
  EXPECT_EQ(plan->site.cost, SiteCost::Emulated);
  EXPECT_EQ(plan->site.insn, "push rbp");
  EXPECT_NE(plan->reason.find("moved"), std::string::npos) << plan->reason;
}

TEST(site_cost, keeps_start_when_first_insn_emulated) {
  // push rbp; mov rbp, rsp; pop rbp; ret
  const Bytes code = {0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3};
  auto plan = plan_entry_site(code, kAddr, kArgRegs, true);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_EQ(plan->site.cost, SiteCost::Emulated);
  EXPECT_EQ(plan->reason, "first instruction emulated (push rbp)");
}

TEST(site_cost, keeps_start_when_no_emulated_insn_in_entry_block) {
  // sub rsp, 0x18; mov rax, fs:0x28; mov [rsp+8], rax; xor eax, eax; add rsp, 0x18; ret
  const Bytes code = {0x48, 0x83, 0xec, 0x18, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00,
                      0x48, 0x89, 0x44, 0x24, 0x08, 0x31, 0xc0, 0x48, 0x83, 0xc4, 0x18, 0xc3};
  auto plan = plan_entry_site(code, kAddr, kArgRegs, true);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_EQ(plan->original.insn, "sub rsp, 0x18");
  EXPECT_EQ(plan->site.cost, SiteCost::SingleStepped);
  EXPECT_NE(plan->reason.find("entry block ends at +0x18 (ret)"), std::string::npos)
      << plan->reason;
}

TEST(site_cost, keeps_start_when_prologue_writes_argument) {
  // endbr64; mov rdi, rbx; push rbp; ret
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xdf, 0x55, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {"rdi"}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_NE(plan->reason.find("rdi written by mov at +0x4"), std::string::npos) << plan->reason;

  // The same prologue is fine to skip when the probe does not read rdi.
  auto other = plan_entry_site(code, kAddr, {"rsi"}, false);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->offset_in_function, 7u);
}

TEST(site_cost, keeps_start_when_prologue_writes_subregister_of_argument) {
  // endbr64; sub dil, 1; push rbx; ret
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x40, 0x80, 0xef, 0x01, 0x53, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {"edi"}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_NE(plan->reason.find("rdi written by sub"), std::string::npos) << plan->reason;
}

TEST(site_cost, keeps_start_when_branch_targets_second_insn) {
  // 0: endbr64; 4: push rbx; 5: dec rdi; 8: jne 4; pop rbx; ret
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x48, 0xff, 0xcf, 0x75, 0xfa, 0x5b, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_NE(plan->reason.find("branch target +0x4"), std::string::npos) << plan->reason;
}

TEST(site_cost, keeps_start_when_function_has_indirect_jump) {
  // endbr64; push rbp; jmp rax
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xff, 0xe0};
  auto plan = plan_entry_site(code, kAddr, kArgRegs, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_NE(plan->reason.find("indirect jmp at +0x5"), std::string::npos) << plan->reason;
}

TEST(site_cost, tracks_sp_delta_for_stack_reads) {
  // endbr64; sub rsp, 8; call <self>; add rsp, 8; ret
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x08, 0xe8,
                      0xf3, 0xff, 0xff, 0xff, 0x48, 0x83, 0xc4, 0x08, 0xc3};
  // Probe reads the seventh argument at [entry rsp + 8]: the call site sees it at [rsp + 16].
  auto plan = plan_entry_site(code, kAddr, {"rdi", "rsp"}, true);
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_EQ(plan->offset_in_function, 8u);
  EXPECT_EQ(plan->sp_delta, -8);
  EXPECT_EQ(plan->site.insn, "call 0x401000");
  EXPECT_EQ(plan->site.cost, SiteCost::Emulated);
}

TEST(site_cost, tracks_sp_delta_across_pushes) {
  // endbr64; push r12; push rbp; ret -- push r12 is already emulated, so the site is +4.
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x54, 0x55, 0xc3};
  auto plan = plan_entry_site(code, kAddr, kArgRegs, true);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 4u);
  EXPECT_EQ(plan->sp_delta, 0);
  EXPECT_EQ(plan->site.insn, "push r12");
}

TEST(site_cost, keeps_start_when_store_may_alias_read_memory) {
  // endbr64; sub rsp, 0x18; mov [rsp+0x20], rdi; call <self>; ret
  // [rsp+0x20] after the sub is [entry rsp + 8]: the first stack argument.
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x18, 0x48, 0x89,
                      0x7c, 0x24, 0x20, 0xe8, 0xee, 0xff, 0xff, 0xff, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {"rdi", "rsp"}, true);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_NE(plan->reason.find("store by mov at +0x8 may alias"), std::string::npos) << plan->reason;

  // Register-only probes do not care about the store.
  auto regs_only = plan_entry_site(code, kAddr, {"rdi"}, false);
  ASSERT_TRUE(regs_only.has_value());
  EXPECT_EQ(regs_only->offset_in_function, 0xdu);
  EXPECT_EQ(regs_only->sp_delta, -0x18);
}

TEST(site_cost, stores_into_new_frame_do_not_alias) {
  // endbr64; mov rbp, rsp; mov [rbp-0x10], rdi; push rbx; ret
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x89, 0xe5, 0x48, 0x89, 0x7d, 0xf0, 0x53, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {"rdi", "rsp"}, true);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0xbu);
  EXPECT_EQ(plan->sp_delta, 0);

  // ...unless the probe reads rbp, which the mov overwrites.
  auto reads_rbp = plan_entry_site(code, kAddr, {"rbp"}, true);
  ASSERT_TRUE(reads_rbp.has_value());
  EXPECT_EQ(reads_rbp->offset_in_function, 0u);
}

TEST(site_cost, keeps_start_when_rsp_changes_by_unknown_amount) {
  // endbr64; and rsp, -16; push rbx; ret
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xe4, 0xf0, 0x53, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {"rsp"}, true);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_NE(plan->reason.find("rsp changed by an unknown amount by and at +0x4"), std::string::npos)
      << plan->reason;
}

TEST(site_cost, moves_to_conditional_jump_after_test) {
  // endbr64; test edi, edi; je +5; mov eax, 1; ret
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x85, 0xff, 0x74,
                      0x05, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {"rdi"}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 6u);
  EXPECT_EQ(plan->site.insn, "je 0x40100d");
}

TEST(site_cost, moves_off_unprobeable_start) {
  // cs nopw 0x0(%rax,%rax,1); mov eax, 1; ret
  const Bytes code = {0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00,
                      0x00, 0x00, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3};
  auto plan = plan_entry_site(code, kAddr, {"rdi"}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->original.cost, SiteCost::Unprobeable);
  EXPECT_EQ(plan->offset_in_function, 10u);
  EXPECT_EQ(plan->site.cost, SiteCost::SingleStepped);
}

TEST(site_cost, keeps_start_when_probe_reads_rip) {
  auto plan = plan_entry_site(kEndbrPrologue, kAddr, {"rip"}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
}

TEST(site_cost, keeps_start_when_function_does_not_decode) {
  // endbr64; push rbp; then a truncated call
  const Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xe8, 0x00};
  auto plan = plan_entry_site(code, kAddr, {}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u);
  EXPECT_NE(plan->reason.find("cannot decode"), std::string::npos) << plan->reason;

  EXPECT_FALSE(plan_entry_site({}, kAddr, {}, false).has_value());
}

// glibc's __mempcpy_* jumps to __memmove_*+3, past `mov rax, rdi`: a probe moved there would
// count every mempcpy call as a memmove call.
TEST(site_cost, keeps_start_when_another_function_jumps_into_the_prologue) {
  const std::vector<uint8_t> code = {
      0x48, 0x89, 0xf8,  // mov rax, rdi
      0x72, 0x01,        // jb +1
      0x90,              // nop
      0xc3,              // ret
  };
  const std::vector<std::string> reads = {"rdi"};
  auto moved = plan_entry_site(code, kAddr, reads, false);
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_EQ(moved->offset_in_function, 3u);
  EXPECT_FALSE(moved->skipped_only_landing_pads);

  const std::vector<uint64_t> elsewhere = {kAddr - 0x100, kAddr + 3, kAddr + 0x1000};
  auto kept = plan_entry_site(code, kAddr, reads, false, elsewhere);
  ASSERT_TRUE(kept) << kept.error().message;
  EXPECT_EQ(kept->offset_in_function, 0u) << kept->reason;
  EXPECT_NE(kept->reason.find("branch target +0x3"), std::string::npos) << kept->reason;
}

TEST(site_cost, direct_branch_targets_sweeps_past_undecodable_bytes) {
  const std::vector<uint8_t> code = {
      0xe8, 0x10, 0x00, 0x00, 0x00,  // call +0x10 (target kAddr + 0x15)
      0x06,                          // invalid in 64-bit mode
      0x74, 0x02,                    // je +2 (target kAddr + 0xa)
      0xeb, 0xf6,                    // jmp -10 (target kAddr + 0x0)
  };
  EXPECT_EQ(direct_branch_targets(code, kAddr),
            (std::vector<uint64_t>{kAddr, kAddr + 0xa, kAddr + 0x15}));
}

// A sweep stopped before a pc and gone on from where it stopped finds what one sweep finds.
TEST(site_cost, direct_branches_found_in_pieces_are_those_of_one_sweep) {
  const std::vector<uint8_t> code = {
      0xe8, 0x10, 0x00, 0x00, 0x00,  // call +0x10
      0x06,                          // invalid in 64-bit mode
      0x74, 0x02,                    // je +2
      0xeb, 0xf6,                    // jmp -10
  };
  std::vector<uint64_t> whole, pieces;
  for_each_direct_branch(code, kAddr, [&](const DirectBranch& b) { whole.push_back(b.pc); });
  auto add = [&](const DirectBranch& b) { pieces.push_back(b.pc); };
  // Stops before the first instruction at or past kAddr + 6: the call and the skipped byte.
  uint64_t next = for_each_direct_branch_before(code, kAddr, kAddr + 6, add);
  EXPECT_EQ(next, kAddr + 6);
  EXPECT_EQ(pieces, (std::vector<uint64_t>{kAddr}));
  next = for_each_direct_branch_before(std::span(code).subspan(next - kAddr), next, kAddr + 7, add);
  EXPECT_EQ(next, kAddr + 8);  // the je started before kAddr + 7
  next =
      for_each_direct_branch_before(std::span(code).subspan(next - kAddr), next, UINT64_MAX, add);
  EXPECT_EQ(next, kAddr + code.size());
  EXPECT_EQ(pieces, whole);
  EXPECT_EQ(whole, (std::vector<uint64_t>{kAddr, kAddr + 6, kAddr + 8}));
}

// Past kMaxScan (8) instructions the planner decodes the rest only when a byte could branch back:
// this loop's jne at the end must still keep the probe off the instruction it returns to.
TEST(site_cost, keeps_start_when_a_branch_past_the_first_eight_insns_targets_the_prologue) {
  Bytes code = {0xf3, 0x0f, 0x1e, 0xfa, 0x53};                              // endbr64; push rbx
  for (int i = 0; i < 8; ++i) code.insert(code.end(), {0x48, 0xff, 0xcf});  // dec rdi
  code.insert(code.end(), {0x75, static_cast<uint8_t>(4 - (code.size() + 2))});  // jne +4
  code.insert(code.end(), {0x5b, 0xc3});                                         // pop rbx; ret
  auto plan = plan_entry_site(code, kAddr, {}, false);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->offset_in_function, 0u) << plan->reason;
  EXPECT_NE(plan->reason.find("branch target +0x4"), std::string::npos) << plan->reason;

  // The same function without the loop moves to the push.
  code[code.size() - 4] = 0x90;  // nop; nop instead of the jne
  code[code.size() - 3] = 0x90;
  auto moved = plan_entry_site(code, kAddr, {}, false);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->offset_in_function, 4u) << moved->reason;
}

// AVX-512's vpcmpeqb (glibc's __strlen_evex+0x18; bytes and lengths from objdump), which
// capstone 4 cannot decode: the branches of a function are found by a decoder that can
// (instruction_sweep.h), so the entry site still moves; before, the function was kept at +0x0 as
// "cannot decode the function past +0x6".
const Bytes kVpcmpeqb = {0x62, 0xf3, 0x7d, 0x20, 0x3f, 0x07, 0x00};  // vpcmpeqb k0, ymm16, [rdi]

TEST(site_cost, moves_over_a_function_with_code_capstone_4_cannot_decode) {
  Bytes code = {0x48, 0x83, 0xfa, 0x20, 0x77, 0x07};  // cmp rdx, 0x20; ja +7 (the ret)
  code.insert(code.end(), kVpcmpeqb.begin(), kVpcmpeqb.end());
  code.push_back(0xc3);  // ret
  auto plan = plan_entry_site(code, kAddr, {"rdi", "rdx"}, true);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->offset_in_function, 4u) << plan->reason;
  EXPECT_EQ(plan->site.insn, "ja 0x40100d");
}

// The instructions the planner weighs are decoded by capstone: one it cannot decode is not
// stepped over.
TEST(site_cost, keeps_start_before_an_instruction_capstone_4_cannot_decode) {
  Bytes code = {0xf3, 0x0f, 0x1e, 0xfa};  // endbr64
  code.insert(code.end(), kVpcmpeqb.begin(), kVpcmpeqb.end());
  code.insert(code.end(), {0x55, 0xc3});  // push rbp; ret
  auto plan = plan_entry_site(code, kAddr, {}, false);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->offset_in_function, 0u) << plan->reason;
  EXPECT_NE(plan->reason.find("cannot decode the instruction at +0x4"), std::string::npos)
      << plan->reason;
}

// The planner keeps its last plan and entry block (plan_function_entry plans a function twice):
// other bytes of the same size at the same address, as another object may have there, and other
// reads get their own plan.
TEST(site_cost, a_kept_plan_is_not_given_for_other_bytes_or_reads) {
  // endbr64; push rbp; mov rbp, rsp; mov eax, 1; pop rbp; ret
  const Bytes moves = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5,
                       0xb8, 0x01, 0x00, 0x00, 0x00, 0x5d, 0xc3};
  Bytes kept = moves;
  kept[12] = 0x90;  // mov eax, 0x90000001; jne +0x4 (back to the push): same size and start
  kept[13] = 0x75;
  kept[14] = static_cast<uint8_t>(0x4 - 0xf);
  for (int round = 0; round < 2; ++round) {
    auto a = plan_entry_site(moves, kAddr, {"rdi"}, false);
    ASSERT_TRUE(a) << a.error().message;
    EXPECT_EQ(a->offset_in_function, 4u) << a->reason;
    auto b = plan_entry_site(kept, kAddr, {"rdi"}, false);
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->offset_in_function, 0u) << b->reason;
    EXPECT_NE(b->reason.find("branch target +0x4"), std::string::npos) << b->reason;
  }
  auto rip = plan_entry_site(moves, kAddr, {"rip"}, false);
  ASSERT_TRUE(rip) << rip.error().message;
  EXPECT_EQ(rip->offset_in_function, 0u) << rip->reason;
}

// The kept entry block decodes its instructions in detail when first asked: for the same bytes
// at the same address from another buffer (another object's), it reads that buffer, not the
// first one, freed by then (ASan's heap-use-after-free otherwise).
TEST(site_cost, a_kept_entry_block_reads_the_bytes_it_is_given_now) {
  auto first = std::make_unique<Bytes>(kEndbrPrologue);
  auto rip = plan_entry_site(*first, kAddr, {"rip"}, false);  // decodes the endbr64 only
  ASSERT_TRUE(rip) << rip.error().message;
  EXPECT_EQ(rip->offset_in_function, 0u);
  first.reset();
  const Bytes again = kEndbrPrologue;
  auto moved = plan_entry_site(again, kAddr, {}, false);  // the push too
  ASSERT_TRUE(moved) << moved.error().message;
  EXPECT_EQ(moved->offset_in_function, 4u) << moved->reason;
}

// Lengths and branches as objdump reads the same bytes.
TEST(instruction_sweep, finds_lengths_direct_branches_and_indirect_jumps) {
  Bytes code = {
      0xe8, 0x10, 0x00, 0x00, 0x00,        // call kAddr+0x15
      0x3e, 0xff, 0xe0,                    // notrack jmp rax
      0xff, 0x25, 0x00, 0x00, 0x00, 0x00,  // jmp [rip]
      0x0f, 0x87, 0xf0, 0xff, 0xff, 0xff,  // ja kAddr+0x4 (-0x10 from kAddr+0x14)
  };
  code.insert(code.end(), kVpcmpeqb.begin(), kVpcmpeqb.end());
  code.push_back(0x06);  // invalid in 64-bit mode
  InstructionSweep sweep(code, kAddr);
  std::vector<SweptInstruction> insns;
  for (SweptInstruction insn; sweep.next(insn);) insns.push_back(insn);
  EXPECT_FALSE(sweep.done());
  EXPECT_EQ(sweep.pc(), kAddr + code.size() - 1);
  ASSERT_EQ(insns.size(), 5u);
  const std::vector<uint8_t> lengths = {5, 3, 6, 6, 7};
  for (size_t i = 0; i < insns.size(); ++i) EXPECT_EQ(insns[i].length, lengths[i]) << i;
  EXPECT_TRUE(insns[0].direct_branch && insns[0].call);
  EXPECT_EQ(insns[0].target, kAddr + 0x15);
  EXPECT_TRUE(insns[1].indirect_jump);
  EXPECT_TRUE(insns[2].indirect_jump);
  EXPECT_TRUE(insns[3].direct_branch);
  EXPECT_FALSE(insns[3].call);
  EXPECT_EQ(insns[3].target, kAddr + 0x4);
  EXPECT_FALSE(insns[4].direct_branch || insns[4].indirect_jump);
  sweep.skip_byte();
  EXPECT_TRUE(sweep.done());
}

TEST(branch_candidates, finds_every_encoding_also_inside_other_instructions) {
  const Bytes code = {
      0x74, 0x02,                                   // je +2 -> kAddr + 4
      0xe8, 0xf9, 0xff, 0xff, 0xff,                 // call -7 -> kAddr + 0
      0x48, 0xb8, 0xeb, 0xf7, 0,    0, 0, 0, 0, 0,  // movabs rax, imm: holds "jmp -9" at +9
  };
  std::vector<std::pair<uint64_t, uint64_t>> found;
  for_each_possible_branch(code, kAddr, [&](uint64_t pc, uint64_t target) {
    found.emplace_back(pc - kAddr, target - kAddr);
  });
  EXPECT_NE(std::find(found.begin(), found.end(), std::pair<uint64_t, uint64_t>{0, 4}),
            found.end());
  EXPECT_NE(std::find(found.begin(), found.end(), std::pair<uint64_t, uint64_t>{2, 0}),
            found.end());
  EXPECT_NE(std::find(found.begin(), found.end(), std::pair<uint64_t, uint64_t>{9, 2}),
            found.end());
  EXPECT_TRUE(may_branch_into(code, kAddr, kAddr + 1, kAddr + 2));
  EXPECT_FALSE(may_branch_into(code, kAddr, kAddr + 5, kAddr + 6));
}

TEST(branch_candidates, indirect_jumps_but_not_indirect_calls) {
  EXPECT_TRUE(may_jump_indirectly(Bytes{0xff, 0xe0}));        // jmp rax
  EXPECT_TRUE(may_jump_indirectly(Bytes{0x41, 0xff, 0xe3}));  // jmp r11
  EXPECT_TRUE(may_jump_indirectly(Bytes{0xff, 0x24, 0xc5}));  // jmp [rax*8+disp32]
  EXPECT_TRUE(may_jump_indirectly(Bytes{0xff, 0x2d}));        // jmp far [rip+disp32]
  EXPECT_FALSE(may_jump_indirectly(Bytes{0xff, 0xd0}));       // call rax
  EXPECT_FALSE(may_jump_indirectly(Bytes{0xff, 0xe8}));       // (jmp far needs memory)
  EXPECT_FALSE(may_jump_indirectly(Bytes{0xff, 0xff, 0xff}));
}

// Far candidates are those a rel8 cannot reach, inside the given code, sorted by target.
TEST(branch_candidates, far_branches_leave_near_ones_and_outside_targets) {
  Bytes text(0x400, 0x90);
  const Bytes call = {0xe8, 0xfb, 0x01, 0x00, 0x00};  // at +0x10: call +0x200 -> +0x210
  std::copy(call.begin(), call.end(), text.begin() + 0x10);
  const Bytes near = {0x74, 0x10};  // at +0x30: je -> +0x42
  std::copy(near.begin(), near.end(), text.begin() + 0x30);
  const Bytes out = {0xe9, 0x00, 0x00, 0x10, 0x00};  // at +0x50: jmp far outside the code
  std::copy(out.begin(), out.end(), text.begin() + 0x50);
  std::vector<std::pair<uint64_t, std::span<const uint8_t>>> sections = {{kAddr, text}};
  EXPECT_EQ(possible_far_branches(sections),
            (std::vector<PossibleBranch>{{kAddr + 0x210, kAddr + 0x10}}));
}

}  // namespace
}  // namespace uscope
