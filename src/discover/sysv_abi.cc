// SysV x86-64 argument classification over DWARF types. Aggregates of up to 16 bytes are split
// into eightbytes, each INTEGER if any integer field touches it, else SSE; anything larger,
// unaligned, or holding a long double goes in memory.
#include "discover/sysv_abi.h"

#include <array>

namespace uscope {

namespace {

constexpr int kIntRegisters = 6;
constexpr int kSseRegisters = 8;
// Aggregates of at most 16 bytes cannot nest deeper than this in any sane program; deeper (or a
// cyclic DIE) is classified as memory, which only makes uscope refuse the parameter.
constexpr int kMaxNesting = 8;

enum class Eightbyte { None, Integer, Sse };

struct Classes {
  bool memory = false;
  std::string why;  // when memory
  std::array<Eightbyte, 2> parts{Eightbyte::None, Eightbyte::None};
};

void mark(Classes& c, uint64_t offset, uint64_t size, Eightbyte cls) {
  for (uint64_t b = offset / 8; b <= (offset + std::max<uint64_t>(size, 1) - 1) / 8 && b < 2; ++b)
    if (c.parts[b] != Eightbyte::Integer) c.parts[b] = cls;
}

void classify_into(DwarfTypes& types, const DwarfType& t, uint64_t offset, int depth, Classes& c) {
  if (c.memory) return;
  if (depth > kMaxNesting) {
    c.memory = true;
    c.why = "a type nested too deeply to classify";
    return;
  }
  switch (t.kind) {
    case DwarfType::Kind::Integer:
    case DwarfType::Kind::Pointer:
    case DwarfType::Kind::Enum:
      if (t.size && offset % t.size != 0 && t.size <= 8) {
        c.memory = true;
        c.why = "a packed struct";
        return;
      }
      mark(c, offset, t.size ? t.size : 8, Eightbyte::Integer);
      return;
    case DwarfType::Kind::Float:
      if (t.size == 16 || t.size > 16) {  // long double (x87) and its complex
        c.memory = true;
        c.why = "a long double";
        return;
      }
      mark(c, offset, t.size, Eightbyte::Sse);
      return;
    case DwarfType::Kind::Array: {
      if (!t.target || !t.count) return;
      auto elem = types.type(*t.target);
      if (!elem || elem->size == 0) {
        c.memory = true;
        c.why = "an array of unknown size";
        return;
      }
      for (uint64_t i = 0; i < t.count && i * elem->size < 16; ++i)
        classify_into(types, *elem, offset + i * elem->size, depth + 1, c);
      return;
    }
    case DwarfType::Kind::Struct:
    case DwarfType::Kind::Union: {
      auto ms = types.members(t.ref);
      if (!ms) {
        c.memory = true;
        c.why = ms.error().message;
        return;
      }
      for (const auto& m : *ms) {
        if (m.bit_size) {
          mark(c, offset + m.offset, (m.bit_size + 7) / 8, Eightbyte::Integer);
          continue;
        }
        classify_into(types, m.type, offset + m.offset, depth + 1, c);
      }
      return;
    }
    default:
      c.memory = true;
      c.why = "a type uscope cannot classify (" + t.name + ")";
      return;
  }
}

Classes classify(DwarfTypes& types, const DwarfType& t) {
  Classes c;
  const bool aggregate = t.kind == DwarfType::Kind::Struct || t.kind == DwarfType::Kind::Union;
  if (aggregate && t.pass_by_reference) {  // non-trivial C++ class: its address is passed
    c.parts[0] = Eightbyte::Integer;
    return c;
  }
  if (t.kind == DwarfType::Kind::Integer && t.size == 16) {  // __int128: two integer registers
    c.parts = {Eightbyte::Integer, Eightbyte::Integer};
    return c;
  }
  if (t.size > 16) {
    c.memory = true;
    c.why = fmt::format("{} of {} bytes, passed in memory", t.name, t.size);
    return c;
  }
  classify_into(types, t, 0, 0, c);
  if (c.memory && c.why.find("passed") == std::string::npos)
    c.why = fmt::format("{} ({}), passed in memory", t.name, c.why);
  return c;
}

}  // namespace

Result<void> assign_sysv_locations(DwarfTypes& types, DwarfFunction& fn,
                                   const std::optional<DwarfType>& ret) {
  int ints = 0, sses = 0;
  if (ret && (ret->kind == DwarfType::Kind::Struct || ret->kind == DwarfType::Kind::Union)) {
    Classes rc = classify(types, *ret);
    if (rc.memory || ret->pass_by_reference) ints = 1;  // rdi holds where the result goes
  }
  std::string lost;  // a parameter of unknown type: every later position would be a guess
  for (auto& p : fn.params) {
    ArgLocation& loc = p.location;
    if (!lost.empty()) {
      loc.cls = ArgLocation::Class::Unknown;
      loc.reason = fmt::format("it follows '{}', whose type the DWARF does not describe", lost);
      continue;
    }
    if (p.type.kind == DwarfType::Kind::Other || p.type.name == "?") {
      loc.cls = ArgLocation::Class::Unknown;
      loc.reason = "its type is not described in the DWARF";
      lost = p.name.empty() ? "an unnamed parameter" : p.name;
      continue;
    }
    Classes c = classify(types, p.type);
    if (c.memory) {
      loc.cls = ArgLocation::Class::Stack;
      loc.reason = c.why;
      continue;
    }
    int need_int = 0, need_sse = 0;
    for (Eightbyte e : c.parts) {
      need_int += e == Eightbyte::Integer;
      need_sse += e == Eightbyte::Sse;
    }
    if (ints + need_int > kIntRegisters || sses + need_sse > kSseRegisters) {
      // The whole argument goes on the stack; later, smaller ones may still get registers.
      loc.cls = ArgLocation::Class::Stack;
      loc.reason = need_sse && !need_int ? "past the eight SSE registers, on the stack"
                                         : "past the six integer registers, on the stack";
      continue;
    }
    if (!need_int && !need_sse) {
      loc.cls = ArgLocation::Class::Unknown;
      loc.reason = fmt::format("{} is empty and passed in no register", p.type.name);
    } else if (need_int && !need_sse) {
      loc.cls = ArgLocation::Class::IntegerRegister;
      loc.position = ints + 1;
    } else {
      loc.cls = ArgLocation::Class::SseRegister;
      loc.reason = need_int
                       ? fmt::format("{} is split between integer and SSE registers", p.type.name)
                       : fmt::format("{} is passed in an SSE (xmm) register", p.type.name);
    }
    ints += need_int;
    sses += need_sse;
  }
  return {};
}

}  // namespace uscope
