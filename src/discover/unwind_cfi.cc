// Call-frame information to unwind spans, read with libdw: every FDE of .eh_frame (or
// .debug_frame) is listed with dwarf_next_cfi, then its rows are walked with dwarf_cfi_addrframe,
// which runs the CIE's and FDE's instructions up to an address and says how far the row it lands
// in reaches. Each row's CFA, return-address and rbp rules become one UnwindRule.
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>

#include "discover/unwind_spans.h"

namespace uscope {

namespace {

constexpr int kRegRbp = 6;
constexpr int kRegRsp = 7;
constexpr int kRegRa = 16;  // x86-64's DWARF number for the return address (rip)

template <typename T>
bool fits(int64_t v) {
  return v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max();
}

int64_t signed_word(Dwarf_Word w) {
  return static_cast<int64_t>(w);
}

UnwindRule unsupported() {
  return UnwindRule{.cfa = UNWIND_CFA_UNSUPPORTED};
}

// A register rule as "at CFA + offset": DW_OP_call_frame_cfa [DW_OP_plus_uconst N] (how libdw
// presents DW_CFA_offset); nullopt for any other rule.
std::optional<int64_t> cfa_relative(const Dwarf_Op* ops, size_t nops) {
  if (ops == nullptr || nops == 0 || ops[0].atom != DW_OP_call_frame_cfa) return std::nullopt;
  if (nops == 1) return 0;
  if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) return signed_word(ops[1].number);
  return std::nullopt;
}

// DW_OP_bregN off, or DW_OP_bregx N off (libdw's form of DW_CFA_def_cfa): register and offset.
std::optional<std::pair<int, int64_t>> register_plus(const Dwarf_Op& op) {
  if (op.atom >= DW_OP_breg0 && op.atom <= DW_OP_breg31)
    return std::pair{op.atom - DW_OP_breg0, signed_word(op.number)};
  if (op.atom == DW_OP_bregx && op.number <= 1024)
    return std::pair{static_cast<int>(op.number), signed_word(op.number2)};
  return std::nullopt;
}

// The expression binutils writes for lazy PLT entries (elf_x86_64_eh_frame_lazy_plt):
//   DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litT; DW_OP_ge; DW_OP_lit3;
//   DW_OP_shl; DW_OP_plus
// i.e. CFA = rsp + 8, + 8 once the entry's push has run ((rip & 15) >= T). T is 11 for the
// classic 16-byte entry (jmp *GOT: 6 bytes, push: 5), 10 for the IBT PLT (endbr64 first) and 5
// for the MPX one. Returns (rsp offset, T).
std::optional<std::pair<int64_t, int>> plt_expression(const Dwarf_Op* ops, size_t nops) {
  if (nops != 9) return std::nullopt;
  auto rsp = register_plus(ops[0]);
  auto rip = register_plus(ops[1]);
  if (!rsp || rsp->first != kRegRsp || !rip || rip->first != kRegRa || rip->second != 0)
    return std::nullopt;
  const uint8_t tail[] = {DW_OP_lit15, DW_OP_and, 0, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus};
  for (size_t i = 0; i < 7; ++i)
    if (i != 2 && ops[2 + i].atom != tail[i]) return std::nullopt;
  if (ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15) return std::nullopt;
  return std::pair{rsp->second, ops[4].atom - DW_OP_lit0};
}

// glibc's __restore_rt (sysdeps/unix/sysv/linux/x86_64/libc_sigaction.c): CFA is
// `DW_OP_breg7 N; DW_OP_deref` and each register `DW_CFA_expression: DW_OP_breg7 M`, offsets
// into the ucontext the kernel pushed. Returns M for `regno`. libdw hands a DW_CFA_expression
// over with the DW_OP_call_frame_cfa that DWARF pushes before it (unused by this one).
std::optional<int64_t> rsp_slot(Dwarf_Frame* frame, int regno) {
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_register(frame, regno, mem, &ops, &nops) != 0 || ops == nullptr)
    return std::nullopt;
  if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa) {
    ++ops;
    --nops;
  }
  if (nops != 1) return std::nullopt;
  auto r = register_plus(ops[0]);
  if (!r || r->first != kRegRsp) return std::nullopt;
  return r->second;
}

UnwindRule signal_rule(Dwarf_Frame* frame, const Dwarf_Op* cfa, size_t ncfa) {
  if (ncfa != 2 || cfa[1].atom != DW_OP_deref) return unsupported();
  auto sp = register_plus(cfa[0]);
  auto bp = rsp_slot(frame, kRegRbp);
  auto ra = rsp_slot(frame, kRegRa);
  if (!sp || sp->first != kRegRsp || !bp || !ra || !fits<int32_t>(sp->second) ||
      !fits<int32_t>(*bp) || !fits<int16_t>(*ra))
    return unsupported();
  // rbp_kind says it was saved; the SIGNAL kind says where (rsp + rbp_offset).
  return UnwindRule{.cfa = UNWIND_CFA_SIGNAL,
                    .rbp = UNWIND_RBP_AT_CFA,
                    .ra_offset = static_cast<int16_t>(*ra),
                    .cfa_offset = static_cast<int32_t>(sp->second),
                    .rbp_offset = static_cast<int32_t>(*bp)};
}

UnwindRule rule_of(Dwarf_Frame* frame, bool signal) {
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_register(frame, kRegRa, mem, &ops, &nops) != 0) return unsupported();
  // glibc's _start and clone3's child say "cfi_undefined (rip)": a thread's first frame (what
  // the CFA is there does not matter).
  if (nops == 0 && ops == mem && !signal) return UnwindRule{.cfa = UNWIND_CFA_END};

  Dwarf_Op* cfa = nullptr;
  size_t ncfa = 0;
  if (dwarf_frame_cfa(frame, &cfa, &ncfa) != 0 || ncfa == 0) return unsupported();
  if (signal) return signal_rule(frame, cfa, ncfa);
  auto ra = cfa_relative(ops, nops);
  if (!ra || !fits<int16_t>(*ra)) return unsupported();

  UnwindRule rule{.ra_offset = static_cast<int16_t>(*ra)};
  if (auto plt = plt_expression(cfa, ncfa)) {
    if (!fits<int32_t>(plt->first)) return unsupported();
    rule.cfa = UNWIND_CFA_PLT;
    rule.cfa_offset = static_cast<int32_t>(plt->first);
    rule.rbp_offset = plt->second;  // the threshold: bpf/unwind.h's UNWIND_CFA_PLT
    return rule;
  }
  auto base = ncfa == 1 ? register_plus(cfa[0]) : std::nullopt;
  if (!base || !fits<int32_t>(base->second)) return unsupported();
  if (base->first == kRegRsp)
    rule.cfa = UNWIND_CFA_RSP;
  else if (base->first == kRegRbp)
    rule.cfa = UNWIND_CFA_RBP;
  else
    return unsupported();  // CFA from another register (a realigned stack's DRAP in r10)
  rule.cfa_offset = static_cast<int32_t>(base->second);

  if (dwarf_frame_register(frame, kRegRbp, mem, &ops, &nops) != 0) {
    rule.rbp = UNWIND_RBP_UNDEFINED;
  } else if (nops == 0) {
    rule.rbp = ops == nullptr ? UNWIND_RBP_SAME : UNWIND_RBP_UNDEFINED;
  } else if (auto bp = cfa_relative(ops, nops); bp && fits<int32_t>(*bp)) {
    rule.rbp = UNWIND_RBP_AT_CFA;
    rule.rbp_offset = static_cast<int32_t>(*bp);
  } else {
    // Kept in another register or computed: the frames above can still unwind by rsp.
    rule.rbp = UNWIND_RBP_UNDEFINED;
  }
  return rule;
}

struct CfiDeleter {
  void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};
struct DwarfDeleter {
  void operator()(Dwarf* d) const { dwarf_end(d); }
};

std::string dw_error() {
  return dwarf_errmsg(-1);
}

// Every FDE's range in `data` (a .eh_frame or .debug_frame at `section_addr`).
std::vector<FdeRange> fde_ranges(Elf* elf, std::span<const uint8_t> data, uint64_t section_addr,
                                 bool eh_frame, bool is_64bit) {
  Elf_Data d{};
  d.d_buf = const_cast<uint8_t*>(data.data());
  d.d_size = data.size();
  d.d_type = ELF_T_BYTE;
  const auto* ident = reinterpret_cast<const unsigned char*>(elf_getident(elf, nullptr));
  std::map<Dwarf_Off, std::optional<uint8_t>> cies;
  std::vector<Dwarf_CFI_Entry> fdes;
  for (Dwarf_Off off = 0, next = 0; ident != nullptr && off < data.size(); off = next) {
    Dwarf_CFI_Entry e;
    if (dwarf_next_cfi(ident, &d, eh_frame, off, &next, &e) != 0 || next <= off) break;
    if (dwarf_cfi_cie_p(&e)) {
      std::span<const uint8_t> aug;
      if (e.cie.augmentation_data != nullptr)
        aug = {e.cie.augmentation_data, e.cie.augmentation_data_size};
      cies[off] = cie_fde_encoding(e.cie.augmentation, aug, is_64bit);
    } else {
      fdes.push_back(e);
    }
  }
  std::vector<FdeRange> out;
  const auto* base = static_cast<const uint8_t*>(d.d_buf);
  for (const auto& e : fdes) {
    auto cie = cies.find(e.fde.CIE_pointer);
    if (cie == cies.end() || !cie->second) continue;
    if (e.fde.start < base || e.fde.end < e.fde.start || e.fde.end > base + data.size()) continue;
    auto r = decode_fde_range({e.fde.start, e.fde.end},
                              section_addr + static_cast<uint64_t>(e.fde.start - base),
                              *cie->second, is_64bit);
    if (r && r->end > r->start) out.push_back(*r);
  }
  return out;
}

bool in_executable_segment(const ElfFile& elf, const FdeRange& r) {
  for (const auto& s : elf.segments())
    if (s.type == PT_LOAD && (s.flags & PF_X) && r.start >= s.vaddr && r.start < s.vaddr + s.memsz)
      return true;
  return false;
}

// Walks the rows of each range; a range whose CFI libdw cannot run becomes UNSUPPORTED rather
// than failing the table (one bad FDE should not cost the object's other functions).
std::vector<UnwindSpan> walk_rows(Dwarf_CFI* cfi, std::vector<FdeRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const FdeRange& a, const FdeRange& b) { return a.start < b.start; });
  std::vector<UnwindSpan> out;
  uint64_t covered = 0;  // overlapping FDEs: the first by address keeps what it covers
  for (const auto& r : ranges) {
    for (uint64_t addr = std::max(r.start, covered); addr < r.end;) {
      Dwarf_Frame* frame = nullptr;
      Dwarf_Addr start = 0, end = 0;
      bool signal = false;
      if (dwarf_cfi_addrframe(cfi, addr, &frame) != 0 ||
          dwarf_frame_info(frame, &start, &end, &signal) < 0 || end <= addr) {
        std::free(frame);
        out.push_back({addr, r.end, unsupported()});
        break;
      }
      end = std::min<uint64_t>(end, r.end);
      out.push_back({addr, end, rule_of(frame, signal)});
      std::free(frame);
      addr = end;
    }
    covered = std::max(covered, r.end);
  }
  return out;
}

}  // namespace

Result<CfiSpans> cfi_spans(const ElfFile& elf, const std::string& debug_file, bool eh_frame_only) {
  CfiSpans out;
  if (auto eh = elf.section(".eh_frame"); eh && eh->type == SHT_PROGBITS && eh->size > 0) {
    auto data = elf.section_data(*eh);
    if (!data) return tl::unexpected(data.error());
    std::unique_ptr<Dwarf_CFI, CfiDeleter> cfi(dwarf_getcfi_elf(elf.libelf()));
    if (!cfi) return fail("{}: cannot read .eh_frame: {}", elf.display_path(), dw_error());
    auto ranges = fde_ranges(elf.libelf(), *data, eh->addr, true, elf.is_64bit());
    std::erase_if(ranges, [&](const FdeRange& r) { return !in_executable_segment(elf, r); });
    out.fdes = ranges.size();
    out.spans = walk_rows(cfi.get(), std::move(ranges));
    out.source = ".eh_frame";
    return out;
  }
  if (eh_frame_only) return out;

  // .debug_frame: a separate debug file's, else the object's own.
  std::optional<ElfFile> opened;
  if (!debug_file.empty()) {
    auto f = ElfFile::open(debug_file);
    if (!f) return tl::unexpected(f.error());
    opened = std::move(*f);
  }
  const ElfFile& holder = opened ? *opened : elf;
  auto df = holder.section(".debug_frame");
  if (!df || df->type != SHT_PROGBITS || df->size == 0) return out;
  // Decompressed in place first, so that libdw finds it plain.
  auto data = holder.section_data(*df);
  if (!data) return tl::unexpected(data.error());
  std::unique_ptr<Dwarf, DwarfDeleter> dw(dwarf_begin_elf(holder.libelf(), DWARF_C_READ, nullptr));
  Dwarf_CFI* cfi = dw ? dwarf_getcfi(dw.get()) : nullptr;  // owned by dw
  if (cfi == nullptr)
    return fail("{}: cannot read .debug_frame: {}", holder.display_path(), dw_error());
  auto ranges = fde_ranges(holder.libelf(), *data, 0, false, holder.is_64bit());
  std::erase_if(ranges, [&](const FdeRange& r) { return !in_executable_segment(elf, r); });
  out.fdes = ranges.size();
  out.spans = walk_rows(cfi, std::move(ranges));
  out.source = ".debug_frame in " + holder.display_path();
  return out;
}

}  // namespace uscope
