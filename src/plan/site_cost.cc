#include "plan/site_cost.h"

#include <capstone/capstone.h>
#include <fmt/format.h>

#include "plan/branch_candidates.h"
#include "plan/capstone_lib.h"
#include "plan/instruction_sweep.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

namespace uscope {

// Which instructions the kernel emulates, measured (not inferred from kernel versions) on the
// reference VM, kernel 6.18.44: a function whose first instruction is the candidate, called 1e5-2e5
// times in a loop, with and without `bpftrace -e 'uprobe:BIN:f { }'` attached; ns per call,
// median (min) of 4 runs. Unprobeable = perf_event_open of the uprobe failed with ENOTSUPP (524),
// or the target died. The split is bimodal: ~0.3-1.2 us emulated vs ~14-25 us single-stepped.
//
//   instruction                 no probe   probed          class
//   nop (90)                      1.0      1155 (464)      emulated
//   xchg ax,ax (66 90)            1.0      1019 (869)      emulated
//   pause (f3 90)                11.0      1176 (618)      emulated
//   nopl (%rax) (0f 1f 00)        1.0      1204 (395)      emulated
//   nopl 0(%rax) (0f 1f 40 00)    1.0       882 (393)      emulated
//   nopl 0(%rax,%rax) 5 bytes     1.0       336 (328)      emulated (5-byte nop: cheapest)
//   nopw 6 bytes (66 0f 1f 44)    1.1       959 (389)      emulated
//   nopl 8 bytes (0f 1f 84)       1.0       832 (425)      emulated
//   cs nopw (66 2e 0f 1f 84)       -        ENOTSUPP        unprobeable (cs prefix)
//   endbr64                       1.0     17320 (16752)    single-stepped
//   push %rbp / %rbx / %rdi       1.1      ~1000 (403)     emulated
//   push %r12 (41 54)             1.0       987 (419)      emulated
//   push $1                       1.0     14887 (14102)    single-stepped
//   mov %rsp,%rbp                 1.5     15685 (14238)    single-stepped
//   mov %rdi,%rax / %rbx,%rdi     1.0     ~18800 (14304)   single-stepped
//   mov %edi,%eax                 1.0     21612 (17055)    single-stepped
//   sub $0x18,%rsp / $8           1.0     ~25000 (21442)   single-stepped
//   lea 0x10(%rdi),%rax           1.0     22288 (15352)    single-stepped
//   lea sym(%rip),%rax            1.0     22042 (14504)    single-stepped
//   xor %eax,%eax                 1.0     21679 (14299)    single-stepped
//   mov $1,%eax                   1.0     22058 (19078)    single-stepped
//   mov %rdi,-8(%rsp)             1.0     22212 (14918)    single-stepped
//   mov sym(%rip),%rax            1.0     22921 (21884)    single-stepped
//   test %edi,%edi / cmp $5,%rdi  1.0     ~24700 (21074)   single-stepped
//   ret                           1.0     25676 (22803)    single-stepped
//   jmp rel8 / jmp rel32          1.2      1105 (993)      emulated
//   call rel32                    1.5      1112 (684)      emulated
//   je rel8 / je rel32            1.0      ~1000 (672)     emulated
//   call *%rax / jmp *%rax        1.7     ~34000 (22245)   single-stepped
//   jmpw rel16 (66 e9)             -        ENOTSUPP        unprobeable (0x66 on a branch)
//   nopl 0(%rax) with /1 (0f 1f 48) 1.0     14036           single-stepped (only /0 is a nop)
//   lock addq $0,(%rsp)            -        ENOTSUPP        unprobeable (lock prefix)
//   ds jmp rel8 (3e eb)            -        ENOTSUPP        unprobeable (ds prefix, as notrack jmp)
//   int3                           -        ENOTSUPP        unprobeable
//   syscall                      75        SIGSEGV         unprobeable: attaches, first hit kills
//                                                          the target
//   prefetcht0, pshufb, palignr, lfence, rdtsc, popcnt: attach, single-stepped (25-45 us)
//
// Consistent with the kernel's arch/x86/kernel/uprobes.c: branch_setup_xol_ops emulates 0x90
// with prefixes, 0f 1f nops, jmp/call rel and jcc (and refuses branches with a 0x66 prefix);
// push_setup_xol_ops emulates push r64 in its 1-byte form or with REX 0x41 (r8-r15); all else is
// single-stepped, and is_prefix_bad rejects cs/ds/es/ss/lock prefixes. The other refused opcodes
// (int, in/out, hlt, cli/sti, iret) come from its good_insns_64 table and were not run.

namespace {

// At most this many instructions are considered for the moved site: prologues that matter are
// short, and every extra instruction skipped is one more assumption about the entry state.
constexpr size_t kMaxScan = 8;

// The loaded library; only called once open_capstone() has succeeded, which loaded it.
const CapstoneLib& capstone() {
  return **capstone_lib();
}

struct CapstoneClose {
  void operator()(csh* h) const {
    capstone().close(h);
    delete h;
  }
};
using Capstone = std::unique_ptr<csh, CapstoneClose>;

struct InsnFree {
  void operator()(cs_insn* insn) const { capstone().free(insn, 1); }
};
using InsnBuffer = std::unique_ptr<cs_insn, InsnFree>;

Result<Capstone> open_capstone() {
  auto lib = capstone_lib();
  if (!lib) return fail("capstone: {}", lib.error().message);
  csh raw = 0;
  if (cs_err e = capstone().open(CS_ARCH_X86, CS_MODE_64, &raw); e != CS_ERR_OK) {
    return fail("capstone: cannot open an x86-64 disassembler: {}", capstone().strerror(e));
  }
  Capstone handle(new csh(raw));
  // Detail mode gives prefixes, operands and cs_regs_access; without it nothing here works.
  if (cs_err e = capstone().option(raw, CS_OPT_DETAIL, CS_OPT_ON); e != CS_ERR_OK) {
    return fail("capstone: cannot enable instruction detail: {}", capstone().strerror(e));
  }
  return handle;
}

// One disassembler per thread, opened on first use: `list` plans every function of an object, and
// cs_open per function costs more than decoding its prologue.
Result<csh> thread_capstone() {
  thread_local std::optional<Result<Capstone>> cs;
  if (!cs) cs.emplace(open_capstone());
  if (!*cs) return tl::unexpected(cs->error());
  return ***cs;
}

bool in_group(const cs_insn& insn, uint8_t group) {
  const cs_detail& d = *insn.detail;
  return std::find(d.groups, d.groups + d.groups_count, group) != d.groups + d.groups_count;
}

std::string insn_text(const cs_insn& insn) {
  std::string text = insn.mnemonic;
  if (insn.op_str[0] != '\0') {
    text += ' ';
    text += insn.op_str;
  }
  return text;
}

// canonical_register() of every capstone x86 register, by its id: decode_detail() names the
// registers an instruction writes for each of up to eight instructions of every function `list`
// plans, and making those strings was a tenth of its time on a big Go binary.
const std::vector<std::string>& canonical_register_names(csh h) {
  static const std::vector<std::string> names = [h] {
    std::vector<std::string> v(X86_REG_ENDING);
    for (unsigned r = 1; r < X86_REG_ENDING; ++r)
      if (const char* name = capstone().reg_name(h, r)) v[r] = canonical_register(name);
    return v;
  }();
  return names;
}

bool is_conditional_jump(unsigned id) {
  switch (id) {
    case X86_INS_JAE:
    case X86_INS_JA:
    case X86_INS_JBE:
    case X86_INS_JB:
    case X86_INS_JE:
    case X86_INS_JGE:
    case X86_INS_JG:
    case X86_INS_JLE:
    case X86_INS_JL:
    case X86_INS_JNE:
    case X86_INS_JNO:
    case X86_INS_JNP:
    case X86_INS_JNS:
    case X86_INS_JO:
    case X86_INS_JP:
    case X86_INS_JS:
      return true;
    default:
      return false;
  }
}

// The measured rules (see the table above). Order matters: the kernel rejects bad prefixes
// before it looks for an emulation, so a `cs nopw` is unprobeable, not an emulated nop.
SiteClass classify_insn(const cs_insn& insn) {
  const cs_x86& x = insn.detail->x86;
  SiteClass c{SiteCost::SingleStepped, insn_text(insn), insn.size, ""};
  auto set = [&c](SiteCost cost, std::string why) {
    c.cost = cost;
    c.why = std::move(why);
    return c;
  };

  if (x.prefix[0] == X86_PREFIX_LOCK)
    return set(SiteCost::Unprobeable, "lock prefix: kernel refuses (ENOTSUPP)");
  // VEX (c4/c5) and EVEX (62) encoded instructions (AVX: glibc's __memset_avx2_*, __strcmp_avx2,
  // ...) are refused too; seen as ENOTSUPP when `count c:*` attached all of libc.
  size_t first = 0;
  while (first < insn.size && (insn.bytes[first] == 0x66 || insn.bytes[first] == 0x67 ||
                               insn.bytes[first] == 0xf2 || insn.bytes[first] == 0xf3))
    ++first;
  if (first < insn.size &&
      (insn.bytes[first] == 0xc4 || insn.bytes[first] == 0xc5 || insn.bytes[first] == 0x62))
    return set(SiteCost::Unprobeable,
               "VEX/EVEX-encoded (AVX) instruction: kernel refuses (ENOTSUPP)");
  switch (x.prefix[1]) {
    case X86_PREFIX_CS:
    case X86_PREFIX_SS:
    case X86_PREFIX_DS:
    case X86_PREFIX_ES:
      // gcc's `cs nopw` padding and CET's `notrack jmp` (ds prefix) land here.
      return set(SiteCost::Unprobeable, "cs/ds/es/ss segment prefix: kernel refuses (ENOTSUPP)");
    default:
      break;
  }
  switch (insn.id) {
    case X86_INS_INT3:
    case X86_INS_INT:
    case X86_INS_INT1:
    case X86_INS_INTO:
    case X86_INS_IRET:
    case X86_INS_IRETD:
    case X86_INS_IRETQ:
    case X86_INS_HLT:
    case X86_INS_CLI:
    case X86_INS_STI:
    case X86_INS_IN:
    case X86_INS_OUT:
    case X86_INS_INSB:
    case X86_INS_INSW:
    case X86_INS_INSD:
    case X86_INS_OUTSB:
    case X86_INS_OUTSW:
    case X86_INS_OUTSD:
      return set(SiteCost::Unprobeable, "opcode the kernel refuses to probe (ENOTSUPP)");
    case X86_INS_SYSCALL:
    case X86_INS_SYSENTER:
    case X86_INS_SYSRET:
    case X86_INS_SYSEXIT:
      // The kernel accepts the probe, but the first hit kills the target with SIGSEGV.
      return set(SiteCost::Unprobeable, "single-stepping a syscall out of line crashes the target");
    default:
      break;
  }

  // 0x90 with any legacy prefix (nop, xchg ax,ax, pause) is emulated as a nop; with REX.B it is
  // xchg r8,rax, which capstone does not call a nop.
  if ((insn.id == X86_INS_NOP || insn.id == X86_INS_PAUSE) && x.opcode[0] == 0x90) {
    return set(SiteCost::Emulated, "nop is emulated");
  }
  // Multi-byte nop 0f 1f /0 ("nopl 0(%rax)", "nopw ..."), gcc's alignment padding.
  if (insn.id == X86_INS_NOP && x.opcode[0] == 0x0f && x.opcode[1] == 0x1f &&
      ((x.modrm >> 3) & 7) == 0) {
    return set(SiteCost::Emulated, "multi-byte nop is emulated");
  }
  // push r64: the kernel emulates the one-byte form and REX.B (0x41) pushes of r8-r15 only.
  if (insn.id == X86_INS_PUSH && x.op_count == 1 && x.operands[0].type == X86_OP_REG &&
      (insn.size == 1 || (insn.size == 2 && x.rex == 0x41))) {
    return set(SiteCost::Emulated, "push reg is emulated");
  }
  // Relative jmp/call/jcc are emulated; with an operand-size (0x66) prefix the kernel refuses
  // them outright rather than single-stepping (Intel and AMD disagree on what they do).
  if (in_group(insn, X86_GRP_BRANCH_RELATIVE) &&
      (insn.id == X86_INS_JMP || insn.id == X86_INS_CALL || is_conditional_jump(insn.id))) {
    if (x.prefix[2] == X86_PREFIX_OPSIZE) {
      return set(SiteCost::Unprobeable, "0x66-prefixed relative branch: kernel refuses (ENOTSUPP)");
    }
    return set(SiteCost::Emulated, "relative branch is emulated");
  }
  return set(SiteCost::SingleStepped,
             fmt::format("{} is single-stepped out of line", insn.mnemonic));
}

// Everything plan_entry_site needs to know about one instruction, pulled out of capstone's
// buffer so the whole function can be decoded once.
struct Decoded {
  uint64_t offset = 0;
  unsigned id = 0;
  std::string mnemonic;
  SiteClass cls;
  bool ends_block = false;         // jump, call, ret, int, iret: not straight-line
  bool indirect_jump = false;      // jmp reg/mem: jump table or computed tail call
  std::optional<uint64_t> target;  // absolute target of a direct jmp/jcc/call
  // Canonical names of the registers written (canonical_register_names()); unknown effects
  // (`writes_unknown`) are never skippable past a read register.
  std::vector<const std::string*> writes;
  bool writes_unknown = false;
  std::optional<int64_t> rsp_step;  // known rsp change: push, sub/add rsp imm
  bool rbp_from_rsp = false;        // mov rbp, rsp
  struct Store {
    x86_reg base = X86_REG_INVALID;
    bool plain = false;  // no index, no segment: address is base + disp
    int64_t disp = 0;
    int size = 0;
  };
  std::vector<Store> stores;
};

// Instructions whose effects capstone reports completely enough to step over. Anything else
// (string ops, cpuid, pop, xchg, ...) ends the scan: a missed implicit write would silently make
// the probe read a clobbered argument.
bool skippable_kind(unsigned id) {
  switch (id) {
    case X86_INS_NOP:
    case X86_INS_ENDBR64:
    case X86_INS_PUSH:
    case X86_INS_MOV:
    case X86_INS_MOVABS:
    case X86_INS_MOVZX:
    case X86_INS_MOVSX:
    case X86_INS_MOVSXD:
    case X86_INS_LEA:
    case X86_INS_SUB:
    case X86_INS_ADD:
    case X86_INS_XOR:
    case X86_INS_AND:
    case X86_INS_OR:
    case X86_INS_TEST:
    case X86_INS_CMP:
    case X86_INS_MOVAPS:
    case X86_INS_MOVUPS:
    case X86_INS_MOVDQA:
    case X86_INS_MOVDQU:
    case X86_INS_MOVQ:
    case X86_INS_MOVD:
    case X86_INS_PXOR:
    case X86_INS_XORPS:
      return true;
    default:
      return false;
  }
}

// Where control goes from `insn`: all plan_swept needs of an instruction past the entry block.
Decoded decode_branch(const cs_insn& insn, uint64_t function_addr) {
  const cs_x86& x = insn.detail->x86;
  Decoded d;
  d.offset = insn.address - function_addr;
  d.id = insn.id;
  d.mnemonic = insn.mnemonic;
  d.ends_block = in_group(insn, X86_GRP_JUMP) || in_group(insn, X86_GRP_CALL) ||
                 in_group(insn, X86_GRP_RET) || in_group(insn, X86_GRP_INT) ||
                 in_group(insn, X86_GRP_IRET);
  if ((in_group(insn, X86_GRP_JUMP) || in_group(insn, X86_GRP_CALL)) && x.op_count == 1 &&
      x.operands[0].type == X86_OP_IMM) {
    d.target = static_cast<uint64_t>(x.operands[0].imm);
  }
  d.indirect_jump = insn.id == X86_INS_JMP && !d.target.has_value();
  return d;
}

// decode_branch() and the instruction's cost, registers written, rsp change and stores.
Decoded decode_detail(csh h, const cs_insn& insn, uint64_t function_addr) {
  const cs_x86& x = insn.detail->x86;
  Decoded d = decode_branch(insn, function_addr);
  d.cls = classify_insn(insn);

  cs_regs read, written;
  uint8_t n_read = 0, n_written = 0;
  if (capstone().regs_access(h, &insn, read, &n_read, written, &n_written) == CS_ERR_OK) {
    const auto& names = canonical_register_names(h);
    for (uint8_t i = 0; i < n_written; ++i)
      if (written[i] < names.size()) d.writes.push_back(&names[written[i]]);
  } else {
    d.writes_unknown = true;
  }

  auto is_reg = [&x](int i, x86_reg r) {
    return x.op_count > i && x.operands[i].type == X86_OP_REG && x.operands[i].reg == r;
  };
  if (insn.id == X86_INS_PUSH && x.prefix[2] != X86_PREFIX_OPSIZE) {
    d.rsp_step = -8;
    d.stores.push_back({X86_REG_RSP, true, -8, 8});  // relative to rsp before the push
  } else if ((insn.id == X86_INS_SUB || insn.id == X86_INS_ADD) && x.op_count == 2 &&
             is_reg(0, X86_REG_RSP) && x.operands[1].type == X86_OP_IMM) {
    d.rsp_step = insn.id == X86_INS_SUB ? -x.operands[1].imm : x.operands[1].imm;
  }
  d.rbp_from_rsp = insn.id == X86_INS_MOV && is_reg(0, X86_REG_RBP) && is_reg(1, X86_REG_RSP);
  // capstone 4 marks the memory operand of test/cmp as written; they only read it.
  const bool never_stores = insn.id == X86_INS_TEST || insn.id == X86_INS_CMP;
  for (uint8_t i = 0; i < x.op_count && !never_stores; ++i) {
    const cs_x86_op& op = x.operands[i];
    if (op.type != X86_OP_MEM || !(op.access & CS_AC_WRITE)) continue;
    bool plain = op.mem.index == X86_REG_INVALID && op.mem.segment == X86_REG_INVALID;
    d.stores.push_back({static_cast<x86_reg>(op.mem.base), plain, op.mem.disp, op.size});
  }
  return d;
}

struct Sweep {
  std::vector<Decoded> insns;
  bool complete = false;  // reached the end of the function
  uint64_t stopped_at = 0;
};

// Linear sweep over the function, every instruction in detail. Jump tables live in .rodata on
// x86-64, so the sweep stays in sync on compiler output; a decode failure is reported rather than
// guessed past.
Result<Sweep> sweep(std::span<const uint8_t> code, uint64_t addr) {
  auto cs = thread_capstone();
  if (!cs) return tl::unexpected(cs.error());
  csh h = *cs;
  InsnBuffer insn(capstone().malloc(h));
  if (!insn) return fail("capstone: cannot allocate an instruction buffer");
  Sweep s;
  s.insns.reserve(code.size() / 3 + 1);  // Go's average is ~4 bytes
  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t pc = addr;
  while (left > 0) {
    if (!capstone().disasm_iter(h, &p, &left, &pc, insn.get())) {
      s.stopped_at = pc - addr;
      return s;
    }
    s.insns.push_back(decode_detail(h, *insn, addr));
  }
  s.complete = left == 0;
  s.stopped_at = pc - addr;
  return s;
}

// A function's entry block: where its first kMaxScan instructions start and where they branch
// (instruction_sweep.h), each decoded in detail (capstone) only when the planner looks at it,
// which is most often at two or three of them (Go's stack check and its jbe; endbr64 and a push).
class EntryBlock {
 public:
  EntryBlock(std::span<const uint8_t> code, uint64_t addr) : code_(code), addr_(addr) {
    InstructionSweep sweep(code, addr);
    SweptInstruction insn;
    while (insns_.size() < kMaxScan && sweep.next(insn)) insns_.push_back(insn);
    complete_ = sweep.done();
    stopped_at_ = sweep.pc() - addr;
    detail_.resize(insns_.size());
  }
  size_t size() const { return insns_.size(); }
  bool complete() const { return complete_; }  // all of the function is in it
  uint64_t stopped_at() const { return stopped_at_; }
  const std::vector<SweptInstruction>& instructions() const { return insns_; }
  // The same bytes where they are now (kept_entry_block): the block may outlive the ones it was
  // made from, another object's code at the same address.
  void rebind(std::span<const uint8_t> code) { code_ = code; }
  // Instruction `i` in detail; null when capstone cannot decode it (an encoding capstone 4
  // lacks) or reads it as another length than Zydis does: the planner stops before it.
  const Decoded* detail(size_t i) {
    if (!detail_[i]) detail_[i] = decode(i);
    return *detail_[i] ? &**detail_[i] : nullptr;
  }

 private:
  std::optional<Decoded> decode(size_t i) const {
    auto cs = thread_capstone();
    if (!cs) return std::nullopt;
    thread_local InsnBuffer insn(capstone().malloc(*cs));
    if (!insn) return std::nullopt;
    const uint64_t offset = insns_[i].pc - addr_;
    const uint8_t* p = code_.data() + offset;
    size_t left = code_.size() - offset;
    uint64_t pc = insns_[i].pc;
    if (!capstone().disasm_iter(*cs, &p, &left, &pc, insn.get()) || insn->size != insns_[i].length)
      return std::nullopt;
    return decode_detail(*cs, *insn, addr_);
  }

  std::span<const uint8_t> code_;
  uint64_t addr_;
  std::vector<SweptInstruction> insns_;
  bool complete_ = false;
  uint64_t stopped_at_ = 0;
  std::vector<std::optional<std::optional<Decoded>>> detail_;  // unset: not decoded yet
};

std::string at(uint64_t offset) {
  return fmt::format("+{:#x}", offset);
}

}  // namespace

const HitCosts& measured_hit_costs() {
  // python3 bench/overhead.py --calibrate --runs 5, 2026-11-23 18:27 UTC, kernel 6.18.44, 2
  // shared CPUs (load ~10): medians; see docs/BENCHMARKS.md, "E. Probe overhead".
  static constexpr HitCosts kMeasured{
      .emulated_trap_ns = 470,
      .single_stepped_trap_ns = 16000,
      .return_ns = 280,
      .counter_program_ns = 66,
      .trace_program_ns = 190,
  };
  return kMeasured;
}

double trap_ns(SiteCost cost) {
  switch (cost) {
    case SiteCost::Emulated:
      return measured_hit_costs().emulated_trap_ns;
    case SiteCost::SingleStepped:
      return measured_hit_costs().single_stepped_trap_ns;
    case SiteCost::Unprobeable:
      return 0;
  }
  return 0;
}

const char* site_cost_name(SiteCost cost) {
  switch (cost) {
    case SiteCost::Emulated:
      return "emulated";
    case SiteCost::SingleStepped:
      return "single-stepped";
    case SiteCost::Unprobeable:
      return "unprobeable";
  }
  return "?";
}

std::string canonical_register(std::string_view name) {
  std::string n;
  for (char ch : name) {
    if (ch != '%') n += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  static const std::vector<std::vector<std::string_view>> families = {
      {"rax", "eax", "ax", "al", "ah"},
      {"rbx", "ebx", "bx", "bl", "bh"},
      {"rcx", "ecx", "cx", "cl", "ch"},
      {"rdx", "edx", "dx", "dl", "dh"},
      {"rsi", "esi", "si", "sil"},
      {"rdi", "edi", "di", "dil"},
      {"rbp", "ebp", "bp", "bpl"},
      {"rsp", "esp", "sp", "spl"},
      {"rip", "eip", "ip"},
  };
  for (const auto& family : families) {
    if (std::find(family.begin(), family.end(), n) != family.end()) return std::string(family[0]);
  }
  // r8..r15 with d/w/b (or l) suffixes.
  if (n.size() >= 2 && n[0] == 'r' && std::isdigit(static_cast<unsigned char>(n[1]))) {
    size_t digits = n.find_first_not_of("0123456789", 1);
    std::string base = n.substr(0, digits);
    std::string suffix = digits == std::string::npos ? "" : n.substr(digits);
    if (suffix.empty() || suffix == "d" || suffix == "w" || suffix == "b" || suffix == "l") {
      return base;
    }
  }
  return n;
}

Result<SiteClass> classify_site(std::span<const uint8_t> code, uint64_t addr) {
  auto cs = thread_capstone();
  if (!cs) return tl::unexpected(cs.error());
  csh h = *cs;
  InsnBuffer insn(capstone().malloc(h));
  if (!insn) return fail("capstone: cannot allocate an instruction buffer");
  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t pc = addr;
  if (code.empty() || !capstone().disasm_iter(h, &p, &left, &pc, insn.get())) {
    return fail("no decodable x86-64 instruction at {:#x} ({} bytes given)", addr, code.size());
  }
  return classify_insn(*insn);
}

namespace {

// Where control goes in a whole function, as far as plan_swept() needs it: whether all of it
// decoded, its first indirect jump, and the lowest offset above 0 that a direct branch of it
// lands on.
struct FunctionBranches {
  bool complete = false;
  uint64_t stopped_at = 0;  // offset of the first byte not decoded
  std::optional<uint64_t> indirect_jump;
  std::string indirect_mnemonic;
  std::optional<uint64_t> lowest_target;
  void add_target(uint64_t target, uint64_t function_addr, uint64_t size) {
    if (target > function_addr && target < function_addr + size &&
        (!lowest_target || target - function_addr < *lowest_target))
      lowest_target = target - function_addr;
  }

  void add(const SweptInstruction& insn, uint64_t function_addr, uint64_t size) {
    if (insn.indirect_jump && !indirect_jump) {
      indirect_jump = insn.pc - function_addr;
      indirect_mnemonic = insn.mnemonic;
    }
    if (insn.direct_branch) add_target(insn.target, function_addr, size);
  }
};

// The branches of the entry block's instructions, taken as all of the function when `complete`.
FunctionBranches entry_branches(const EntryBlock& entry, bool complete, uint64_t function_addr,
                                uint64_t size) {
  FunctionBranches b;
  b.complete = complete;
  b.stopped_at = entry.stopped_at();
  for (const SweptInstruction& insn : entry.instructions()) b.add(insn, function_addr, size);
  return b;
}

// The same of a sweep of the whole function; a decode failure ends it, as it ends sweep().
FunctionBranches whole_function_branches(std::span<const uint8_t> code, uint64_t addr) {
  FunctionBranches b;
  InstructionSweep sweep(code, addr);
  SweptInstruction insn;
  while (sweep.next(insn)) b.add(insn, addr, code.size());
  b.complete = sweep.done();
  b.stopped_at = sweep.pc() - addr;
  return b;
}

// canonical_register() of each of `names`, kept for the next call: a planner is handed the same
// reads for every function it plans, and naming them anew was 7% of `list`'s time on a big Go
// binary.
const std::vector<std::string>& canonical_registers(const std::vector<std::string>& names) {
  thread_local std::optional<std::pair<std::vector<std::string>, std::vector<std::string>>> last;
  if (!last || last->first != names) {
    std::vector<std::string> canonical;
    for (const std::string& n : names) canonical.push_back(canonical_register(n));
    last.emplace(names, std::move(canonical));
  }
  return last->second;
}

// plan_entry_site() on the entry block, with what `branches` says of the whole function;
// `examined` is set to the offset of the last instruction the choice looked at (left unset when
// the first one decided it).
Result<EntrySitePlan> plan_swept(EntryBlock& entry, const FunctionBranches& branches,
                                 std::span<const uint8_t> function_code, uint64_t function_addr,
                                 const std::vector<std::string>& reads,
                                 std::span<const uint64_t> external_targets, bool reads_memory,
                                 std::optional<uint64_t>& examined) {
  const Decoded* first = entry.size() > 0 ? entry.detail(0) : nullptr;
  if (!first) {
    return fail("no decodable x86-64 instruction at function start {:#x}", function_addr);
  }

  EntrySitePlan plan;
  plan.original = first->cls;
  plan.site = first->cls;
  auto keep = [&plan](std::string why) {
    plan.reason = fmt::format("kept at +0x0 ({}, {}): {}", plan.original.insn,
                              site_cost_name(plan.original.cost), why);
    return plan;
  };
  if (plan.original.cost == SiteCost::Emulated) {
    plan.reason = fmt::format("first instruction emulated ({})", plan.original.insn);
    return plan;
  }

  // A few names, looked up for each register an instruction writes: a vector, not a set (whose
  // nodes were a malloc each, twice for each of 63,000 functions `list` plans).
  const std::vector<std::string>& wanted = canonical_registers(reads);
  auto is_wanted = [&wanted](std::string_view reg) {
    return std::find(wanted.begin(), wanted.end(), reg) != wanted.end();
  };
  if (is_wanted("rip")) return keep("the probe reads rip, which differs at any other site");
  if (!branches.complete) {
    return keep(fmt::format("cannot decode the function past {}", at(branches.stopped_at)));
  }
  if (branches.indirect_jump) {
    return keep(fmt::format("indirect {} at {} (jump table?) could land inside the prologue",
                            branches.indirect_mnemonic, at(*branches.indirect_jump)));
  }

  // The first offset something in the function, or elsewhere, branches or calls to: control can
  // arrive there without passing through offset 0, so no instruction from there on may be
  // skipped or be the site.
  std::optional<uint64_t> first_target = branches.lowest_target;
  if (auto it = std::upper_bound(external_targets.begin(), external_targets.end(), function_addr);
      it != external_targets.end() && *it < function_addr + function_code.size() &&
      (!first_target || *it - function_addr < *first_target))
    first_target = *it - function_addr;

  int64_t sp_delta = 0;
  std::optional<int64_t> rbp_delta;  // rbp minus entry rsp, once `mov rbp, rsp` ran
  std::optional<size_t> fallback;    // first probeable site, when the original is not
  std::optional<int64_t> fallback_sp;
  std::string stop = fmt::format("no emulated instruction among the first {} of the entry block",
                                 std::min(kMaxScan, entry.size()));
  for (size_t i = 0; i < entry.size() && i < kMaxScan; ++i) {
    const Decoded* detail = entry.detail(i);
    if (!detail) {
      stop = fmt::format("cannot decode the instruction at {}",
                         at(entry.instructions()[i].pc - function_addr));
      break;
    }
    const Decoded& d = *detail;
    examined = d.offset;
    if (i > 0) {
      if (first_target && *first_target <= d.offset) {
        stop = fmt::format("branch target {} inside the entry block", at(*first_target));
        break;
      }
      if (d.cls.cost == SiteCost::Emulated) {
        plan.offset_in_function = d.offset;
        plan.sp_delta = sp_delta;
        plan.site = d.cls;
        plan.reason = fmt::format(
            "moved from +0x0 ({}, {}) to {} ({}, emulated), skipping {} "
            "instruction(s) that leave the read registers intact",
            plan.original.insn, site_cost_name(plan.original.cost), at(d.offset), d.cls.insn, i);
        return plan;
      }
      if (!fallback && d.cls.cost == SiteCost::SingleStepped) {
        fallback = i;
        fallback_sp = sp_delta;
      }
    }

    // Can the probe move past this instruction?
    if (d.ends_block) {
      stop = fmt::format("entry block ends at {} ({})", at(d.offset), d.cls.insn);
      break;
    }
    if (!skippable_kind(d.id)) {
      stop = fmt::format("{} at {} is not one the planner steps over", d.mnemonic, at(d.offset));
      break;
    }
    // Of several, the last in name order is named (as a sorted set of names gave it).
    std::string clobbered = d.writes_unknown ? "?" : "";
    for (const std::string* w : d.writes)
      if (!d.writes_unknown && *w != "rsp" && is_wanted(*w) && *w > clobbered) clobbered = *w;
    if (!clobbered.empty()) {
      stop = fmt::format("{} written by {} at {}", clobbered, d.mnemonic, at(d.offset));
      break;
    }
    auto writes = [&d](std::string_view reg) {
      return std::any_of(d.writes.begin(), d.writes.end(),
                         [reg](const std::string* w) { return *w == reg; });
    };
    if (writes("rsp") && !d.rsp_step) {
      stop = fmt::format("rsp changed by an unknown amount by {} at {}", d.mnemonic, at(d.offset));
      break;
    }
    if (reads_memory) {
      // Only stores into the callee's new frame (entirely below the entry rsp) are harmless:
      // nothing the caller can point to lives there.
      bool aliases = false;
      for (const Decoded::Store& s : d.stores) {
        std::optional<int64_t> base;
        if (s.base == X86_REG_RSP) base = sp_delta;
        if (s.base == X86_REG_RBP) base = rbp_delta;
        if (!s.plain || !base || *base + s.disp + s.size > 0) aliases = true;
      }
      if (aliases) {
        stop = fmt::format("store by {} at {} may alias memory the probe reads", d.mnemonic,
                           at(d.offset));
        break;
      }
    }
    if (d.rbp_from_rsp) {
      rbp_delta = sp_delta;
    } else if (writes("rbp")) {
      rbp_delta.reset();
    }
    if (d.rsp_step) sp_delta += *d.rsp_step;
    if (d.id != X86_INS_ENDBR64 && d.id != X86_INS_NOP) plan.skipped_only_landing_pads = false;
  }

  if (plan.original.cost == SiteCost::Unprobeable && fallback) {
    const Decoded& d = *entry.detail(*fallback);
    plan.offset_in_function = d.offset;
    plan.sp_delta = *fallback_sp;
    plan.site = d.cls;
    plan.reason = fmt::format("moved from unprobeable +0x0 ({}) to {} ({}, single-stepped); {}",
                              plan.original.insn, at(d.offset), d.cls.insn, stop);
    return plan;
  }
  return keep(stop);
}

// The entry block and the whole function's branches of plan_entry_site(), each kept for the
// next call: a planner that moves the site plans the same function again with the branches from
// other functions (plan_function_entry), and decoding it twice was a third of `list`'s time on a
// big Go binary. The bytes a result depends on are part of its key, so code from another object
// at the same address is not mistaken for it: the entry block's (and the longest instruction
// past them, where a decode failure would be) and the function's size, or all of the function's.
EntryBlock& kept_entry_block(std::span<const uint8_t> code, uint64_t addr) {
  struct Last {
    uint64_t addr = 0;
    size_t size = 0;
    std::vector<uint8_t> bytes;
    std::optional<EntryBlock> entry;
  };
  thread_local Last last;
  if (last.entry && last.addr == addr && last.size == code.size() &&
      std::ranges::equal(last.bytes, code.first(last.bytes.size()))) {
    last.entry->rebind(code);
    return *last.entry;
  }
  last.entry.emplace(code, addr);
  last.addr = addr;
  last.size = code.size();
  const auto key = code.first(std::min<size_t>(code.size(), last.entry->stopped_at() + 15));
  last.bytes.assign(key.begin(), key.end());
  return *last.entry;
}

const FunctionBranches& kept_function_branches(std::span<const uint8_t> code, uint64_t addr) {
  struct Last {
    uint64_t addr = 0;
    std::vector<uint8_t> bytes;
    std::optional<FunctionBranches> branches;
  };
  thread_local Last last;
  if (last.branches && last.addr == addr && std::ranges::equal(last.bytes, code))
    return *last.branches;
  last.addr = addr;
  last.bytes.assign(code.begin(), code.end());
  last.branches = whole_function_branches(code, addr);
  return *last.branches;
}

Result<EntrySitePlan> plan_uncached(std::span<const uint8_t> function_code, uint64_t function_addr,
                                    const std::vector<std::string>& reads, bool reads_memory,
                                    std::span<const uint64_t> external_targets) {
  // The entry block is at most kMaxScan instructions: plan on those first, as if nothing in the
  // rest of the function branched, and decode the whole function only when a byte of it could be
  // a branch into the instructions the choice looked at or an indirect jmp
  // (branch_candidates.h): a sweep of every function is what made `list` of a 60,000-function Go
  // binary take 20 s. That sweep decodes lengths and branches only (instruction_sweep.h).
  if (auto cs = thread_capstone(); !cs) return tl::unexpected(cs.error());
  EntryBlock& entry = kept_entry_block(function_code, function_addr);
  const uint64_t size = function_code.size();
  std::optional<uint64_t> examined;
  if (entry.complete() || entry.size() < kMaxScan)  // all of it, or a decode failure
    return plan_swept(entry, entry_branches(entry, entry.complete(), function_addr, size),
                      function_code, function_addr, reads, external_targets, reads_memory,
                      examined);
  auto plan = plan_swept(entry, entry_branches(entry, true, function_addr, size), function_code,
                         function_addr, reads, external_targets, reads_memory, examined);
  if (!plan || !examined) return plan;
  if (!may_jump_indirectly(function_code) &&
      !may_branch_into(function_code, function_addr, function_addr + 1, function_addr + *examined))
    return plan;
  return plan_swept(entry, kept_function_branches(function_code, function_addr), function_code,
                    function_addr, reads, external_targets, reads_memory, examined);
}

}  // namespace

Result<EntrySitePlan> plan_entry_site(std::span<const uint8_t> function_code,
                                      uint64_t function_addr, const std::vector<std::string>& reads,
                                      bool reads_memory,
                                      std::span<const uint64_t> external_targets) {
  // The plan depends on the bytes, the reads and the external targets inside the function only.
  // plan_function_entry plans a moved site again with the branches from elsewhere, which land
  // inside hardly any function: the last plan is kept, and that second planning (its scans of
  // the function for possible branches, its reasons' text) was a fifth of `list`'s time on a big
  // Go binary.
  const auto inside =
      std::span(std::upper_bound(external_targets.begin(), external_targets.end(), function_addr),
                std::lower_bound(external_targets.begin(), external_targets.end(),
                                 function_addr + function_code.size()));
  struct Last {
    uint64_t addr = 0;
    std::vector<uint8_t> bytes;
    std::vector<std::string> reads;
    bool reads_memory = false;
    std::vector<uint64_t> inside;
    std::optional<Result<EntrySitePlan>> plan;
  };
  thread_local Last last;
  if (last.plan && last.addr == function_addr && last.reads_memory == reads_memory &&
      std::ranges::equal(last.inside, inside) && last.reads == reads &&
      std::ranges::equal(last.bytes, function_code))
    return *last.plan;
  last.plan = plan_uncached(function_code, function_addr, reads, reads_memory, inside);
  last.addr = function_addr;
  last.bytes.assign(function_code.begin(), function_code.end());
  last.reads = reads;
  last.reads_memory = reads_memory;
  last.inside.assign(inside.begin(), inside.end());
  return *last.plan;
}

Result<std::vector<ReturnInstruction>> return_instructions(std::span<const uint8_t> code,
                                                           uint64_t addr) {
  auto s = sweep(code, addr);
  if (!s) return tl::unexpected(s.error());
  if (!s->complete)
    return fail("cannot decode the instruction at {}, so its return instructions are not all known",
                at(s->stopped_at));
  std::vector<ReturnInstruction> out;
  for (const auto& d : s->insns)
    if (d.id == X86_INS_RET) out.push_back({addr + d.offset, d.cls});
  return out;
}

namespace {

// Linear sweep over `code` (at `addr`), calling `fn` with each instruction and its address, up to
// the first instruction at or past `end`; returns its address (where the sweep stopped). Bytes that
// do not decode are stepped over one at a time.
uint64_t for_each_instruction(std::span<const uint8_t> code, uint64_t addr,
                              const std::function<void(const cs_insn&, uint64_t)>& fn,
                              uint64_t end = std::numeric_limits<uint64_t>::max()) {
  auto cs = thread_capstone();
  if (!cs) return addr;
  csh h = *cs;
  InsnBuffer insn(capstone().malloc(h));
  if (!insn) return addr;
  const uint8_t* p = code.data();
  size_t left = code.size();
  uint64_t pc = addr;
  while (left > 0 && pc < end) {
    const uint64_t at = pc;
    if (!capstone().disasm_iter(h, &p, &left, &pc, insn.get())) {
      ++p;  // data or an encoding capstone 4 lacks (EVEX): resynchronise on the next byte
      --left;
      ++pc;
      continue;
    }
    fn(*insn, at);
  }
  return pc;
}

}  // namespace

void for_each_direct_branch(std::span<const uint8_t> code, uint64_t addr,
                            const std::function<void(const DirectBranch&)>& fn) {
  for_each_direct_branch_before(code, addr, std::numeric_limits<uint64_t>::max(), fn);
}

uint64_t for_each_direct_branch_before(std::span<const uint8_t> code, uint64_t addr, uint64_t end,
                                       const std::function<void(const DirectBranch&)>& fn) {
  InstructionSweep sweep(code, addr);
  SweptInstruction insn;
  while (!sweep.done() && sweep.pc() < end) {
    if (!sweep.next(insn)) {
      sweep.skip_byte();  // data: resynchronise on the next byte
      continue;
    }
    if (insn.direct_branch) fn({insn.pc, insn.target, insn.call});
  }
  return sweep.pc();
}

std::vector<RipRelativeLoad> rip_relative_loads(std::span<const uint8_t> code, uint64_t addr) {
  std::vector<RipRelativeLoad> out;
  for_each_instruction(code, addr, [&](const cs_insn& insn, uint64_t at) {
    const cs_x86& x = insn.detail->x86;
    if (insn.id != X86_INS_MOV || x.op_count != 2 || x.operands[0].type != X86_OP_REG) return;
    const cs_x86_op& src = x.operands[1];
    if (src.type != X86_OP_MEM || src.mem.base != X86_REG_RIP || src.mem.index != X86_REG_INVALID ||
        src.mem.segment != X86_REG_INVALID)
      return;
    out.push_back({at, at + insn.size + static_cast<uint64_t>(src.mem.disp), src.size});
  });
  return out;
}

std::vector<uint64_t> direct_branch_targets(std::span<const uint8_t> code, uint64_t addr) {
  std::vector<uint64_t> out;
  for_each_direct_branch(code, addr, [&](const DirectBranch& b) { out.push_back(b.target); });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace uscope
