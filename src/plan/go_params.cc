#include "plan/go_params.h"

#include <fmt/format.h>

#include "plan/go_abi.h"
#include "plan/probe_parse.h"
#include "util/names.h"

namespace uscope {

namespace {

// DWARF register numbers of x86-64 (System V psABI, figure 3.36), as uscope names registers;
// 17..32 are xmm0..xmm15.
const char* dwarf_register(int reg) {
  static constexpr const char* kNames[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                                           "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
  return reg >= 0 && reg < 16 ? kNames[reg] : nullptr;
}

constexpr int kDwarfXmm0 = 17;
constexpr int kDwarfXmm15 = 32;

std::string float_registers_note(std::string_view type) {
  return fmt::format(
      "is a {}, passed in Go's floating-point registers (X0..X14), which a uprobe cannot read",
      type);
}

// The kinds a declared type and DWARF's must share to be the same parameter.
enum class Shape { Integer, Word, String, Slice, Interface, Float, Struct, Array, Other };

Shape shape_of(GoKind k) {
  // DWARF shows a map or chan as a pointer to the runtime's struct.
  if (go_kind_is_integer(k)) return Shape::Integer;
  if (go_kind_is_pointer_word(k)) return Shape::Word;
  switch (k) {
    case GoKind::String:
      return Shape::String;
    case GoKind::Slice:
      return Shape::Slice;
    case GoKind::Interface:
      return Shape::Interface;
    case GoKind::Float32:
    case GoKind::Float64:
    case GoKind::Complex64:
    case GoKind::Complex128:
      return Shape::Float;
    case GoKind::Struct:
      return Shape::Struct;
    case GoKind::Array:
      return Shape::Array;
    default:  // Invalid; the one-word kinds are taken above
      break;
  }
  return Shape::Other;
}

bool same_type(const GoType& declared, const GoType& dwarf) {
  Shape s = shape_of(declared.kind);
  if (s != shape_of(dwarf.kind)) return false;
  switch (s) {
    case Shape::Integer:  // int64 and int are one type to DWARF: compare what decodes them
      return declared.size == dwarf.size &&
             go_kind_is_signed(declared.kind) == go_kind_is_signed(dwarf.kind) &&
             (declared.kind == GoKind::Bool) == (dwarf.kind == GoKind::Bool);
    case Shape::Float:
      return declared.size == dwarf.size;
    case Shape::Word:
      // Both pointers: to the same type (a map or chan declared is a pointer in DWARF).
      return declared.kind != GoKind::Pointer || dwarf.kind != GoKind::Pointer ||
             declared.elem == dwarf.elem;
    case Shape::Slice:
      return declared.elem == dwarf.elem;
    case Shape::Struct:
    case Shape::Array:
      return declared.name == dwarf.name;
    default:
      return true;
  }
}

}  // namespace

GoParams go_params_from_dwarf(const DwarfFunction& fn, bool inlined_copy) {
  GoParams out;
  out.source = "DWARF";
  for (const auto& p : fn.params) {
    if (p.is_result) continue;
    GoParam q;
    q.name = p.name;
    q.type = go_type_of(p.type);
    if (p.entry_pieces.empty())
      q.why_not = inlined_copy ? "has no location at the inlined copy's first instruction in its "
                                 "DWARF (the caller has not built it yet): probe a function the "
                                 "copy calls, where it is an argument"
                               : "has no location at the function's entry in its DWARF";
    for (const auto& piece : p.entry_pieces) {
      if (piece.reg < 0) {
        // A stack slot: the caller's frame, at CFA + offset; rsp at entry is CFA - 8.
        if (p.entry_pieces.size() != 1) {
          q.why_not = "is split between registers and the stack";
          break;
        }
        q.stack_offset = piece.cfa_offset + 8;
        break;
      }
      if (const char* reg = dwarf_register(piece.reg)) {
        q.regs.emplace_back(reg);
      } else if (piece.reg >= kDwarfXmm0 && piece.reg <= kDwarfXmm15) {
        q.why_not = float_registers_note(q.type.name);
        break;
      } else {
        q.why_not = fmt::format("is in a register uscope cannot read (DWARF {})", piece.reg);
        break;
      }
    }
    if (!q.why_not.empty()) q.regs.clear();
    out.params.push_back(std::move(q));
  }
  return out;
}

Result<GoParams> go_params_from_declared(const std::vector<DeclaredParam>& declared, GoTypes* types,
                                         const CallingConvention& cc) {
  GoParams out;
  out.source = fmt::format("the declared list and the {}", cc.name);
  std::vector<GoType> typed;
  for (const auto& d : declared) {
    auto t = declared_go_type(d.go_type, types);
    if (!t)
      return probe_detail::spec_error(
          d.column,
          fmt::format("uscope cannot tell how '{}' is passed: {}", d.name, t.error().message),
          "declare it by its shape: any for an interface, uintptr for a pointer, map, chan or "
          "func, or a pointer type");
    typed.push_back(std::move(*t));
  }
  auto slots = assign_go_args(typed, types, cc);
  if (!slots) {
    // Which parameter: the first whose own assignment fails.
    for (size_t i = 0; i < typed.size(); ++i)
      if (!assign_go_args(std::span(typed).subspan(i, 1), types, cc))
        return probe_detail::spec_error(
            declared[i].column,
            fmt::format("uscope cannot tell how '{}' is passed: {}", declared[i].name,
                        slots.error().message),
            "declare it by its shape: a pointer type, uintptr for one word, any for two");
    return tl::unexpected(slots.error());
  }
  for (size_t i = 0; i < declared.size(); ++i) {
    GoParam q;
    q.name = declared[i].name;
    q.type = typed[i];
    q.column = declared[i].column;
    const GoArgSlot& s = (*slots)[i];
    if (s.on_stack) {
      q.why_not = cc.int_args.empty()
                      ? fmt::format("is on the stack: the {} passes every argument there", cc.name)
                      : fmt::format(
                            "is passed on the stack: its words do not fit in what is left "
                            "of Go's {} integer argument registers",
                            cc.int_args.size());
    } else if (s.floats > 0) {
      q.why_not = float_registers_note(q.type.name);
    }
    for (uscope_reg r : s.ints) q.regs.emplace_back(register_name(r));
    out.params.push_back(std::move(q));
  }
  return out;
}

Result<GoParams> go_params_checked(const std::vector<DeclaredParam>& declared, GoParams dwarf,
                                   GoTypes* types, std::string_view function) {
  const std::string says = go_signature(function, dwarf.params);
  const std::string fix =
      fmt::format("declare the list as DWARF has it, {}, or drop it and let DWARF name them", says);
  if (declared.size() != dwarf.params.size()) {
    const DeclaredParam& at =
        declared.size() > dwarf.params.size() ? declared[dwarf.params.size()] : declared.back();
    return probe_detail::spec_error(
        at.column,
        fmt::format("{} parameters declared, but the DWARF of {} has {}", declared.size(), function,
                    dwarf.params.size()),
        fix);
  }
  for (size_t i = 0; i < declared.size(); ++i) {
    const DeclaredParam& d = declared[i];
    GoParam& q = dwarf.params[i];
    auto t = declared_go_type(d.go_type, types);
    if (!t || !same_type(*t, q.type))
      return probe_detail::spec_error(
          d.column,
          fmt::format("'{}' is declared {} but the DWARF of {} says {}", d.name,
                      probe_detail::printable(d.go_type), function, q.type.name),
          fix);
    q.name = d.name;
    q.column = d.column;
  }
  dwarf.source = "DWARF (the declared list agrees with it)";
  return dwarf;
}

std::string go_signature(std::string_view function, const std::vector<GoParam>& params) {
  std::vector<std::string> parts;
  for (const auto& p : params)
    parts.push_back(fmt::format("{} {}", p.name.empty() ? "_" : p.name, p.type.name));
  return fmt::format("{}({})", function, join(parts));
}

}  // namespace uscope
