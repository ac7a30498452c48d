#include "plan/go_name_resolver.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/go_abi.h"
#include "plan/go_params.h"
#include "plan/name_resolver.h"
#include "plan/probe_parse.h"
#include "util/names.h"

namespace uscope {

namespace {

Expr make(Expr::Op op, int column, std::vector<Expr> children = {}) {
  Expr e;
  e.op = op;
  e.column = column;
  e.children = std::move(children);
  return e;
}

Expr int_expr(int64_t v, int column) {
  Expr e = make(Expr::Op::Int, column);
  e.value = v;
  return e;
}

Expr reg(std::string name, int column) {
  Expr e = make(Expr::Op::Reg, column);
  e.text = std::move(name);
  return e;
}

Expr plus(Expr base, int64_t offset, int column) {
  if (offset == 0) return base;
  Expr e = make(Expr::Op::Binary, column, {std::move(base), int_expr(offset, column)});
  e.op_text.push_back('+');  // not = "+": g++ 12 warns of a memcpy overlap it imagines there
  return e;
}

Expr load(Expr addr, uint64_t size, bool is_signed, int column) {
  Expr e = make(Expr::Op::Deref, column, {std::move(addr)});
  e.width = static_cast<int>(size == 0 || size > 8 ? 8 : size);
  e.is_signed = is_signed;
  return e;
}

bool is_parameter_ref(const Expr& e) {
  return e.op == Expr::Op::Name || e.op == Expr::Op::Member || e.op == Expr::Op::Arg ||
         (e.op == Expr::Op::Entry && e.children.empty());
}

bool mentions_parameters(const Expr& e) {
  if (is_parameter_ref(e)) return true;
  return std::any_of(e.children.begin(), e.children.end(), mentions_parameters);
}

// "an int", "a string": a type named in a sentence.
std::string a_type(std::string_view name) {
  const bool vowel =
      !name.empty() && std::string_view("aeiou").find(name[0]) != std::string_view::npos;
  return fmt::format("{} {}", vowel ? "an" : "a", name);
}

bool is_byte_slice(const GoType& t) {
  return t.kind == GoKind::Slice && (t.elem == "uint8" || t.elem == "byte");
}

// A Go value while names are resolved: its type and where its words are, in registers at the
// probe (the words) or in memory (`addr`).
struct GoValue {
  GoType type;
  std::vector<Expr> words;
  std::optional<Expr> addr;
};

class GoResolver {
 public:
  GoResolver(const ProbeSpec& spec, const GoTypesSource& types, GoParams params,
             const GoNameSite& site, std::vector<NameOrigin>* origins)
      : spec_(spec), types_(types), params_(std::move(params)), site_(site), origins_(origins) {}

  Result<ProbeSpec> run() {
    ProbeSpec out = spec_;
    if (out.predicate)
      if (auto r = rewrite(*out.predicate); !r) return tl::unexpected(r.error());
    for (size_t i = 0; i < out.args.size(); ++i) {
      // %s of a number would read memory at it: a parameter's type says what it is.
      const bool string_conv = i < out.conversions.size() && out.conversions[i].conv == 's';
      if (string_conv && is_parameter_ref(out.args[i]))
        if (auto r = check_string(out.args[i]); !r) return tl::unexpected(r.error());
      if (auto r = rewrite(out.args[i]); !r) return tl::unexpected(r.error());
    }
    if (auto r = probe_detail::check_format_args(out); !r) return tl::unexpected(r.error());
    return out;
  }

 private:
  Result<void> rewrite(Expr& e) {
    if (is_parameter_ref(e)) {
      auto v = resolve(e);
      if (!v) return tl::unexpected(v.error());
      auto scalar = to_scalar(*v, e);
      if (!scalar) return tl::unexpected(scalar.error());
      e = std::move(*scalar);
      return {};
    }
    // str(tag) and the parser's str() around a %s argN: a Go string is read by its length.
    if (e.op == Expr::Op::Str && e.children.size() == 1 && is_parameter_ref(e.children[0])) {
      auto v = resolve(e.children[0]);
      if (!v) return tl::unexpected(v.error());
      if (v->type.kind == GoKind::String || is_byte_slice(v->type)) {
        auto s = to_scalar(*v, e.children[0]);
        if (!s) return tl::unexpected(s.error());
        e = std::move(*s);
        return {};
      }
      if (auto r = check_string(e.children[0]); !r) return r;
      auto p = to_scalar(*v, e.children[0]);
      if (!p) return tl::unexpected(p.error());
      e.children[0] = std::move(*p);
      return {};
    }
    for (auto& c : e.children)
      if (auto r = rewrite(c); !r) return r;
    return {};
  }

  // A value printed with %s: a string, a []byte, or a pointer to the bytes of a C string.
  Result<void> check_string(const Expr& e) {
    auto v = resolve(e);
    if (!v) return tl::unexpected(v.error());
    const GoType& t = v->type;
    if (t.kind == GoKind::String || is_byte_slice(t) || t.kind == GoKind::Pointer ||
        t.kind == GoKind::UnsafePointer || t.kind == GoKind::Uintptr)
      return {};
    const bool go_value = t.kind == GoKind::Interface || t.kind == GoKind::Slice;
    return error(e, fmt::format("%s needs a string but '{}' is {}", spelling(e), a_type(t.name)),
                 go_value ? "print it with %v" : "print it with %d or %v");
  }

  tl::unexpected<Error> error(const Expr& e, const std::string& what, const std::string& hint) {
    return fail("probe spec column {}: {}; {}", e.column, what, hint);
  }

  void note(const Expr& e, std::string where, std::string source) {
    if (!origins_) return;
    const std::string name = spelling(e);
    for (const auto& o : *origins_)
      if (o.name == name) return;
    origins_->push_back({name, std::move(where), std::move(source)});
  }

  Result<GoValue> resolve(const Expr& e) {
    switch (e.op) {
      case Expr::Op::Name: {
        for (const auto& p : params_.params)
          if (p.name == e.text && !e.text.empty() && e.text != "_") return parameter(p, e);
        std::vector<std::string> names;
        for (const auto& p : params_.params) names.push_back(p.name);
        auto close = closest_names(e.text, names);
        return error(
            e, fmt::format("no parameter '{}' in {}({})", e.text, site_.function, join(names)),
            close.empty() ? "name one of its parameters" : fmt::format("closest: {}", join(close)));
      }
      case Expr::Op::Arg:
      case Expr::Op::Entry:
        if (e.index < 1 || static_cast<size_t>(e.index) > params_.params.size())
          return error(
              e,
              fmt::format("arg{} is out of range: {} has {} parameters", e.index,
                          go_signature(site_.function, params_.params), params_.params.size()),
              "on Go code argN is the Nth parameter; read a register with ctx->REG");
        return parameter(params_.params[static_cast<size_t>(e.index - 1)], e);
      case Expr::Op::Member:
        return member(e);
      default:
        return error(e, "expected a name", "name a parameter");
    }
  }

  // A parameter's value at the probe: its registers at entry, saved there for a return probe.
  Result<GoValue> parameter(const GoParam& p, const Expr& e) {
    if (!p.why_not.empty()) {
      if (site_.cc->int_args.empty())
        return error(e,
                     fmt::format("'{}' is on the stack: {} was built by {}, which passes "
                                 "arguments on the stack (Go's register ABI starts with Go 1.17)",
                                 spelling(e), site_.object,
                                 site_.go_version.empty() ? "an older Go" : site_.go_version),
                     "uscope places declared Go parameters in registers only; a build with "
                     "DWARF places them on the stack");
      return error(e, fmt::format("'{}' {}", spelling(e), p.why_not),
                   "read the register yourself with ctx->REG, or print another parameter");
    }
    GoValue v{p.type, {}, {}};
    if (p.stack_offset) {
      v.addr = plus(reg("rsp", e.column), *p.stack_offset, e.column);
      note(e, fmt::format("at rsp+{} ({})", *p.stack_offset, p.type.name), params_.source);
      return v;
    }
    for (const auto& r : p.regs) {
      Expr w = reg(r, e.column);
      if (site_.kind == ProbeKind::Return) w = make(Expr::Op::Entry, e.column, {std::move(w)});
      v.words.push_back(std::move(w));
    }
    note(e,
         fmt::format("{} {} ({})", site_.kind == ProbeKind::Return ? "saved at entry from" : "in",
                     join(p.regs), p.type.name),
         params_.source);
    return v;
  }

  Result<GoValue> member(const Expr& e) {
    auto base = resolve(e.children[0]);
    if (!base) return base;
    // Go writes req.URL.Path through pointers as through values; `->` reads the same.
    const std::string written = spelling(e.children[0]);
    std::string struct_name;
    Expr struct_addr;
    if (base->type.kind == GoKind::Pointer) {
      struct_name = base->type.elem.empty() ? base->type.name.substr(1) : base->type.elem;
      // A predeclared or composite pointee has no fields.
      if (struct_name.empty() || declared_go_type(struct_name, nullptr))
        return error(e,
                     fmt::format("'{}' points to {}, not a struct", written, a_type(struct_name)),
                     "name a field of a struct pointer");
      auto p = to_scalar(*base, e.children[0]);
      if (!p) return tl::unexpected(p.error());
      struct_addr = std::move(*p);
    } else if (base->type.kind == GoKind::Struct && base->addr) {
      struct_name = base->type.name;
      struct_addr = *base->addr;
    } else if (base->type.kind == GoKind::Struct) {
      return error(e, fmt::format("'{}' is a struct passed in registers", written),
                   "read its fields with ctx->REG");
    } else {
      return error(e, fmt::format("'{}' is {}, not a struct", written, a_type(base->type.name)),
                   "name a field of a struct");
    }
    auto types = types_();
    if (!types) return error(e, types.error().message, "name a parameter instead");
    auto f = (*types)->field(struct_name, e.text);
    if (!f) return fail("probe spec column {}: {}", e.column, f.error().message);
    note(e, fmt::format("at offset {} in {} ({})", f->offset, struct_name, f->type.name),
         go_type_source_name(f->source));
    return GoValue{
        f->type, {}, plus(std::move(struct_addr), static_cast<int64_t>(f->offset), e.column)};
  }

  // The word at `i` of `v`: a register, or memory.
  Expr word(const GoValue& v, size_t i, uint64_t size, bool is_signed, int column) {
    if (v.addr)
      return load(plus(*v.addr, static_cast<int64_t>(8 * i), column), size, is_signed, column);
    return v.words.at(i);
  }

  Result<Expr> words_value(const GoValue& v, const Expr& at, Expr::Op op) {
    if (!v.addr && v.words.size() < 2)
      return error(
          at, fmt::format("'{}' is a {} whose words are not all placed", spelling(at), v.type.name),
          "read its registers with ctx->REG");
    return make(op, at.column, {word(v, 0, 8, false, at.column), word(v, 1, 8, false, at.column)});
  }

  Result<Expr> to_scalar(const GoValue& v, const Expr& at) {
    const GoType& t = v.type;
    if (t.kind == GoKind::String || is_byte_slice(t)) return words_value(v, at, Expr::Op::Str);
    if (t.kind == GoKind::Interface || (t.kind == GoKind::Slice && t.elem == "interface {}")) {
      auto g = words_value(v, at, Expr::Op::GoValue);
      if (g) g->text = t.kind == GoKind::Slice ? "[]" + t.elem : t.name;  // "[]..." is a slice
      return g;
    }
    if (go_kind_is_integer(t.kind) || go_kind_is_pointer_word(t.kind)) {
      const bool is_signed = go_kind_is_signed(t.kind);
      if (!v.addr && v.words.empty())
        return error(at, fmt::format("'{}' has no register placed", spelling(at)),
                     "read its register with ctx->REG");
      Expr w = word(v, 0, t.size, is_signed, at.column);
      if (!v.addr && t.size > 0 && t.size < 8) {
        Expr c = make(Expr::Op::Cast, at.column, {std::move(w)});
        c.width = static_cast<int>(t.size);
        c.is_signed = is_signed;
        return c;
      }
      return w;
    }
    switch (t.kind) {
      case GoKind::Float32:
      case GoKind::Float64:
      case GoKind::Complex64:
      case GoKind::Complex128:
        return error(at,
                     fmt::format("'{}' is {}, and uscope prints integers and strings", spelling(at),
                                 a_type(t.name)),
                     "print another field or parameter");
      case GoKind::Slice:
        return error(at, fmt::format("'{}' is {}", spelling(at), a_type(t.name)),
                     "uscope prints a []byte as a string and a []any with %v, other slices not");
      default:
        return error(at,
                     fmt::format("'{}' is {} ({} bytes), which uscope prints only by its fields",
                                 spelling(at), a_type(t.name), t.size),
                     "name one of its fields");
    }
  }

  static std::string spelling(const Expr& e) {
    switch (e.op) {
      case Expr::Op::Name:
        return e.text;
      case Expr::Op::Arg:
        return fmt::format("arg{}", e.index);
      case Expr::Op::Entry:
        return fmt::format("$entry(arg{})", e.index);
      case Expr::Op::Member:
        return e.children.empty() ? e.text : spelling(e.children[0]) + "." + e.text;
      default:
        return probe_detail::describe(e);
    }
  }

  const ProbeSpec& spec_;
  const GoTypesSource& types_;
  GoParams params_;
  const GoNameSite& site_;
  std::vector<NameOrigin>* origins_;
};

}  // namespace

bool needs_go_resolver(const ProbeSpec& spec) {
  if (spec.predicate && mentions_parameters(*spec.predicate)) return true;
  return std::any_of(spec.args.begin(), spec.args.end(), mentions_parameters);
}

Result<ProbeSpec> resolve_go_names(const ProbeSpec& spec, DwarfTypes& dwarf,
                                   const GoTypesSource& types, const GoNameSite& site,
                                   std::vector<NameOrigin>* origins) {
  if (!needs_go_resolver(spec)) return spec;
  std::optional<DwarfFunction> fn;
  if (dwarf.has_dwarf()) {
    auto f = site.inlined_pc ? dwarf.inlined_at(site.inlined_pc, site.function)
                             : dwarf.function_at(site.function_addr);
    if (!f) return tl::unexpected(f.error());
    fn = std::move(*f);
  }
  if (!fn && site.inlined_pc)
    return fail(
        "probe spec column {}: the DWARF of {} does not describe the copy of {} inlined at {:#x}, "
        "so its parameters cannot be read there",
        spec.function_column, site.object, site.function, site.inlined_pc);
  const bool declared = spec.params && is_go_declared(*spec.params);
  GoParams params;
  if (declared) {
    auto t = types();
    GoTypes* go_types = t ? *t : nullptr;
    auto p =
        fn ? go_params_checked(*spec.params, go_params_from_dwarf(*fn), go_types, site.function)
           : go_params_from_declared(*spec.params, go_types, *site.cc);
    if (!p) return tl::unexpected(p.error());
    params = std::move(*p);
  } else if (fn) {
    params = go_params_from_dwarf(*fn, site.inlined_pc != 0);
  } else if (!has_names(spec)) {
    return spec;  // argN: the registers of Go's ABI
  } else {
    return fail(
        "probe spec column {}: {} {}, so the parameters of {} have no names; declare them as Go "
        "writes them, e.g. {}(i int, s string), or read arg1..arg9 (Go's argument registers) or "
        "ctx->REG",
        spec.function_column, site.object,
        dwarf.has_dwarf() ? "has DWARF that does not describe the function" : "has no DWARF",
        site.function, spec.function);
  }
  return GoResolver(spec, types, std::move(params), site, origins).run();
}

}  // namespace uscope
