#include "plan/instruction_sweep.h"

#include <Zydis/Zydis.h>

namespace uscope {

namespace {

// Minimal mode: lengths, mnemonics, categories and raw immediates, no operands.
const ZydisDecoder& decoder() {
  static const ZydisDecoder d = [] {
    ZydisDecoder init;
    ZydisDecoderInit(&init, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    ZydisDecoderEnableMode(&init, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE);
    return init;
  }();
  return d;
}

}  // namespace

bool InstructionSweep::next(SweptInstruction& out) {
  if (done()) return false;
  ZydisDecoderContext ctx;
  ZydisDecodedInstruction insn;
  if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder(), &ctx, code_.data() + at_,
                                                  code_.size() - at_, &insn)))
    return false;
  out = SweptInstruction{};
  out.pc = pc();
  out.length = insn.length;
  const ZydisInstructionCategory c = insn.meta.category;
  const bool branch =
      c == ZYDIS_CATEGORY_COND_BR || c == ZYDIS_CATEGORY_UNCOND_BR || c == ZYDIS_CATEGORY_CALL;
  if (branch && insn.raw.imm[0].is_relative) {
    out.direct_branch = true;
    out.call = c == ZYDIS_CATEGORY_CALL;
    out.target = out.pc + insn.length + static_cast<uint64_t>(insn.raw.imm[0].value.s);
  }
  out.indirect_jump = insn.mnemonic == ZYDIS_MNEMONIC_JMP && !out.direct_branch;
  if (out.indirect_jump)
    out.mnemonic = (insn.attributes & ZYDIS_ATTRIB_HAS_BND) ? "bnd jmp" : "jmp";
  at_ += insn.length;
  return true;
}

}  // namespace uscope
