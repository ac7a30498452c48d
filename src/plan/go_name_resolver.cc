#include "plan/go_name_resolver.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/probe_parse.h"
#include "util/names.h"

namespace uscope {

namespace {

// DWARF register numbers of x86-64 (System V psABI, figure 3.36), as uscope names registers.
const char* dwarf_register(int reg) {
  static constexpr const char* kNames[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
                                           "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
  return reg >= 0 && reg < 16 ? kNames[reg] : nullptr;
}

Expr make(Expr::Op op, int column, std::vector<Expr> children = {}) {
  Expr e;
  e.op = op;
  e.column = column;
  e.children = std::move(children);
  return e;
}

Expr make_int(int64_t v, int column) {
  Expr e = make(Expr::Op::Int, column);
  e.value = v;
  return e;
}

Expr plus(Expr base, int64_t offset, int column) {
  if (offset == 0) return base;
  Expr e = make(Expr::Op::Binary, column, {std::move(base), make_int(offset, column)});
  e.op_text = "+";
  return e;
}

Expr load(Expr addr, uint64_t size, bool is_signed, int column) {
  Expr e = make(Expr::Op::Deref, column, {std::move(addr)});
  e.width = static_cast<int>(size == 0 || size > 8 ? 8 : size);
  e.is_signed = is_signed;
  return e;
}

// A type's Go name: DwarfType spells structs the C way ("struct string").
std::string go_name(const DwarfType& t) {
  std::string_view n = t.name;
  for (std::string_view prefix : {"struct ", "union "})
    if (n.starts_with(prefix)) n.remove_prefix(prefix.size());
  return std::string(n);
}
bool is_go_string(const DwarfType& t) {
  return t.kind == DwarfType::Kind::Struct && go_name(t) == "string";
}
bool is_byte_slice(const DwarfType& t) {
  return t.kind == DwarfType::Kind::Struct && (go_name(t) == "[]uint8" || go_name(t) == "[]byte");
}
bool is_interface(const DwarfType& t) {
  const std::string n = go_name(t);
  return n == "interface {}" || n == "error" || n.starts_with("interface {") ||
         n == "runtime.eface" || n == "runtime.iface";
}

// A Go value while names are resolved: its DWARF type and where its words are, in registers at
// the probe (the words) or in memory (`addr`).
struct GoValue {
  DwarfType type;
  std::vector<Expr> words;
  std::optional<Expr> addr;
};

class GoResolver {
 public:
  GoResolver(const ProbeSpec& spec, DwarfTypes& dwarf, const DwarfFunction& fn,
             const GoNameSite& site)
      : spec_(spec), dwarf_(dwarf), fn_(fn), site_(site) {}

  Result<ProbeSpec> run() {
    ProbeSpec out = spec_;
    if (out.predicate)
      if (auto r = rewrite(*out.predicate); !r) return tl::unexpected(r.error());
    for (auto& a : out.args)
      if (auto r = rewrite(a); !r) return tl::unexpected(r.error());
    if (auto r = probe_detail::check_format_args(out); !r) return tl::unexpected(r.error());
    return out;
  }

 private:
  Result<void> rewrite(Expr& e) {
    if (e.op == Expr::Op::Name || e.op == Expr::Op::Member) {
      auto v = resolve(e);
      if (!v) return tl::unexpected(v.error());
      auto scalar = to_scalar(*v, e);
      if (!scalar) return tl::unexpected(scalar.error());
      e = std::move(*scalar);
      return {};
    }
    for (auto& c : e.children)
      if (auto r = rewrite(c); !r) return r;
    return {};
  }

  tl::unexpected<Error> error(const Expr& e, const std::string& what, const std::string& hint) {
    return fail("probe spec column {}: {}; {}", e.column, what, hint);
  }

  // A parameter's value at the probe: its registers at entry, saved there for a return probe.
  Result<GoValue> parameter(const Expr& e) {
    std::vector<std::string> names;
    for (const auto& p : fn_.params) {
      if (p.is_result) continue;
      names.push_back(p.name);
      if (p.name != e.text) continue;
      GoValue v{p.type, {}, {}};
      if (p.entry_pieces.empty() && site_.inlined_pc)
        return error(e,
                     fmt::format("the DWARF of the copy of {} inlined at {:#x} gives no location "
                                 "of '{}' at its first instruction (the caller has not built it yet)",
                                 site_.function, site_.inlined_pc, e.text),
                     "probe a function the copy calls, where it is an argument");
      if (p.entry_pieces.empty())
        return error(e,
                     fmt::format("the DWARF of {} gives no location of '{}' at its entry",
                                 site_.function, e.text),
                     "read the register yourself with ctx->REG or arg1..arg9");
      for (const auto& piece : p.entry_pieces) {
        if (piece.reg < 0) {
          // A stack slot: the caller's frame, at CFA + offset; rsp at entry is CFA - 8, and at a
          // RET site rsp is the entry rsp again.
          if (p.entry_pieces.size() != 1)
            return error(e, fmt::format("'{}' is split between registers and the stack", e.text),
                         "read its parts with ctx->REG");
          Expr rsp = make(Expr::Op::Reg, e.column);
          rsp.text = "rsp";
          v.addr = plus(std::move(rsp), piece.cfa_offset + 8, e.column);
          break;
        }
        const char* reg = dwarf_register(piece.reg);
        if (!reg)
          return error(
              e,
              fmt::format("'{}' is in a register uscope cannot read (DWARF {})", e.text, piece.reg),
              "print another parameter");
        Expr r = make(Expr::Op::Reg, e.column);
        r.text = reg;
        if (site_.kind == ProbeKind::Return) r = make(Expr::Op::Entry, e.column, {std::move(r)});
        v.words.push_back(std::move(r));
      }
      return v;
    }
    auto close = closest_names(e.text, names);
    return error(
        e, fmt::format("no parameter '{}' in {}({})", e.text, site_.function, join(names)),
        close.empty() ? "name one of its parameters" : fmt::format("closest: {}", join(close)));
  }

  Result<GoValue> resolve(const Expr& e) {
    if (e.op == Expr::Op::Name) return parameter(e);
    if (e.op != Expr::Op::Member) return error(e, "expected a name", "name a parameter");
    auto base = resolve(e.children[0]);
    if (!base) return base;
    // Go writes req.URL.Path through pointers as through values; `->` reads the same.
    std::optional<Expr> struct_addr;
    DwarfType st = base->type;
    if (st.kind == DwarfType::Kind::Pointer) {
      if (!st.target)
        return error(e, fmt::format("'{}' points to nothing uscope can name", spelling(e)),
                     "read it at an explicit offset");
      auto target = dwarf_.type(*st.target);
      if (!target) return tl::unexpected(target.error());
      auto p = to_scalar(*base, e.children[0]);
      if (!p) return tl::unexpected(p.error());
      struct_addr = std::move(*p);
      st = *target;
    } else if (base->addr) {
      struct_addr = base->addr;
    } else {
      return error(e, fmt::format("'{}' is a struct passed in registers", spelling(e.children[0])),
                   "read its fields with ctx->REG");
    }
    if (st.kind != DwarfType::Kind::Struct)
      return error(e, fmt::format("'{}' is a {}, not a struct", spelling(e.children[0]), st.name),
                   "name a field of a struct");
    auto m = dwarf_.member(st.ref, e.text);
    if (!m) return tl::unexpected(m.error());
    if (!*m) {
      std::vector<std::string> names;
      if (auto all = dwarf_.members(st.ref))
        for (const auto& x : *all) names.push_back(x.name);
      auto close = closest_names(e.text, names);
      return error(
          e, fmt::format("{} has no field '{}'", st.name, e.text),
          close.empty() ? "name one of its fields" : fmt::format("closest: {}", join(close)));
    }
    return GoValue{(*m)->type,
                   {},
                   plus(std::move(*struct_addr), static_cast<int64_t>((*m)->offset), e.column)};
  }

  // The word at `i` of `v`: a register, or memory.
  Expr word(const GoValue& v, size_t i, uint64_t size, bool is_signed, int column) {
    if (v.addr)
      return load(plus(*v.addr, static_cast<int64_t>(8 * i), column), size, is_signed, column);
    return v.words.at(i);
  }

  Result<Expr> to_scalar(const GoValue& v, const Expr& at) {
    const DwarfType& t = v.type;
    const size_t words = v.addr ? 3 : v.words.size();
    if (is_go_string(t) || is_byte_slice(t)) {
      if (words < 2)
        return error(
            at, fmt::format("'{}' is a {} whose length DWARF does not place", spelling(at), t.name),
            "read it with str(ctx->REG, ctx->REG)");
      Expr s = make(Expr::Op::Str, at.column,
                    {word(v, 0, 8, false, at.column), word(v, 1, 8, false, at.column)});
      return s;
    }
    if (go_name(t).starts_with("[]interface {")) {  // fmt.Println's `a ...any`
      if (words < 2)
        return error(at, fmt::format("'{}' is a slice split oddly", spelling(at)), "read ctx->REG");
      Expr g = make(Expr::Op::GoValue, at.column,
                    {word(v, 0, 8, false, at.column), word(v, 1, 8, false, at.column)});
      g.text = go_name(t);
      return g;
    }
    if (is_interface(t)) {
      if (words < 2)
        return error(at, fmt::format("'{}' is an interface split oddly", spelling(at)),
                     "read ctx->REG");
      Expr g = make(Expr::Op::GoValue, at.column,
                    {word(v, 0, 8, false, at.column), word(v, 1, 8, false, at.column)});
      g.text = go_name(t);
      return g;
    }
    switch (t.kind) {
      case DwarfType::Kind::Integer:
      case DwarfType::Kind::Pointer:
      case DwarfType::Kind::Enum: {
        Expr w = word(v, 0, t.size, t.is_signed, at.column);
        if (!v.addr && t.size > 0 && t.size < 8) {
          Expr c = make(Expr::Op::Cast, at.column, {std::move(w)});
          c.width = static_cast<int>(t.size);
          c.is_signed = t.is_signed;
          return c;
        }
        return w;
      }
      default:
        return error(at,
                     fmt::format("'{}' is a {} ({}), which uscope prints only by its fields",
                                 spelling(at), t.name, t.size),
                     "name one of its fields");
    }
  }

  static std::string spelling(const Expr& e) {
    if (e.op == Expr::Op::Name) return e.text;
    if (e.op == Expr::Op::Member && !e.children.empty())
      return spelling(e.children[0]) + "." + e.text;
    return probe_detail::describe(e);
  }

  const ProbeSpec& spec_;
  DwarfTypes& dwarf_;
  const DwarfFunction& fn_;
  const GoNameSite& site_;
};

}  // namespace

Result<ProbeSpec> resolve_go_names(const ProbeSpec& spec, DwarfTypes& dwarf,
                                   const GoNameSite& site) {
  if (!dwarf.has_dwarf())
    return fail(
        "probe spec: {} has no DWARF, so the parameters of {} have no names; read them with "
        "arg1..arg9 (Go's argument registers) or ctx->REG",
        site.object, site.function);
  auto fn = site.inlined_pc ? dwarf.inlined_at(site.inlined_pc, site.function)
                           : dwarf.function_at(site.function_addr);
  if (!fn) return tl::unexpected(fn.error());
  if (!*fn && site.inlined_pc)
    return fail(
        "probe spec: the DWARF of {} does not describe the copy of {} inlined at {:#x}, so its "
        "parameters cannot be read there",
        site.object, site.function, site.inlined_pc);
  if (!*fn)
    return fail(
        "probe spec: the DWARF of {} does not describe {}; read its arguments with "
        "arg1..arg9",
        site.object, site.function);
  return GoResolver(spec, dwarf, **fn, site).run();
}

}  // namespace uscope
