// Names and members of a probe spec resolved to the argument registers and memory reads the
// recipe machine runs. Parameters: the declared list, checked against DWARF when both exist, else
// DWARF; their positions follow the SysV ABI (only integer-class arguments count). Members:
// offsets and widths from DWARF.
#include "plan/name_resolver.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/probe_parse.h"
#include "plan/return_sites.h"
#include "util/names.h"

namespace uscope {

namespace {

using probe_detail::spec_error;

constexpr int kIntRegisters = 6;
constexpr int kMaxPointerDepth = 16;

struct Param {
  std::string name;
  CType type;
  std::optional<DwarfType> dwarf;  // the parameter's type when DWARF describes it
  int position = 0;                // integer argument register 1..6; 0: not in one
  std::string why_not;             // when position is 0
};

// What is known of a resolved value's C type.
struct Typed {
  std::optional<CType> c;
  std::optional<DwarfType> dwarf;
  bool struct_address = false;  // the expression is a struct's address: a member must follow
};

bool is_aggregate(const DwarfType& t) {
  return t.kind == DwarfType::Kind::Struct || t.kind == DwarfType::Kind::Union;
}

bool is_aggregate_name(const std::string& name) {
  return name.starts_with("struct ") || name.starts_with("union ") || name.starts_with("class ");
}

bool is_float_name(const std::string& name) {
  return name == "float" || name == "double" || name == "long double";
}

std::string c_spelling(const CType& t) {
  if (t.pointers == 0) return t.name;
  return t.name + " " + std::string(static_cast<size_t>(t.pointers), '*');
}

// A name, argN or member chain as the user wrote it, for messages.
std::string spelling(const Expr& e) {
  switch (e.op) {
    case Expr::Op::Name:
      return e.text;
    case Expr::Op::Arg:
      return fmt::format("arg{}", e.index);
    case Expr::Op::Member:
      return spelling(e.children[0]) + (e.index ? "->" : ".") + e.text;
    default:
      return probe_detail::describe(e);
  }
}

Expr make_int(int64_t v, int column) {
  Expr e;
  e.op = Expr::Op::Int;
  e.value = v;
  e.column = column;
  return e;
}

// base + offset; a member of a member adds to the offset already there (req->hdr.len).
Expr add_offset(Expr base, uint64_t offset, int column) {
  if (offset == 0) return base;
  if (base.op == Expr::Op::Binary && base.op_text == "+" && base.children[1].op == Expr::Op::Int) {
    base.children[1].value += static_cast<int64_t>(offset);
    return base;
  }
  Expr e;
  e.op = Expr::Op::Binary;
  e.op_text = "+";
  e.column = column;
  e.children.push_back(std::move(base));
  e.children.push_back(make_int(static_cast<int64_t>(offset), column));
  return e;
}

Expr deref(Expr addr, int width, bool is_signed, int column) {
  Expr e;
  e.op = Expr::Op::Deref;
  e.width = width;
  e.is_signed = is_signed;
  e.column = column;
  e.children.push_back(std::move(addr));
  return e;
}

class Resolver {
 public:
  Resolver(const ProbeSpec& spec, const NameSite& site) : spec_(spec), site_(site) {}

  Result<ProbeSpec> run() {
    ProbeSpec out = spec_;
    if (out.predicate) {
      auto t = value(*out.predicate, 0);
      if (!t) return tl::unexpected(t.error());
    }
    for (size_t i = 0; i < out.args.size(); ++i) {
      auto t = value(out.args[i], 0);
      if (!t) return tl::unexpected(t.error());
      const bool string_conv = i < out.conversions.size() && out.conversions[i].conv == 's';
      if (string_conv && t->c && t->c->pointers == 0)
        return spec_error(out.args[i].column,
                          fmt::format("%s needs a string but {} is {}", spelling(spec_.args[i]),
                                      c_spelling(*t->c)),
                          "print it with %d, or name a char * or char array");
    }
    if (auto r = probe_detail::check_format_args(out); !r) return tl::unexpected(r.error());
    return out;
  }

 private:
  bool has_dwarf() const { return site_.dwarf && site_.dwarf->has_dwarf(); }

  std::string no_dwarf_reason() const {
    if (site_.dwarf && !site_.dwarf->why_no_dwarf().empty()) return site_.dwarf->why_no_dwarf();
    return fmt::format("{} has no DWARF", site_.object);
  }

  // A value in an argument, predicate or operand: it must not be a bare struct.
  Result<Typed> value(Expr& e, int depth) {
    const std::string written = spelling(e);
    auto t = resolve(e, depth);
    if (!t) return t;
    if (t->struct_address) return struct_not_value(e, written, *t);
    return t;
  }

  tl::unexpected<Error> struct_not_value(const Expr& e, const std::string& written,
                                         const Typed& t) {
    std::vector<std::string> names;
    if (t.dwarf)
      if (auto ms = site_.dwarf->members(t.dwarf->ref))
        for (const auto& m : *ms)
          if (!m.name.empty()) names.push_back(m.name);
    return spec_error(e.column,
                      fmt::format("{} is a {}, not a value", written,
                                  t.dwarf ? t.dwarf->name : std::string("struct")),
                      names.empty() ? std::string("name one of its members")
                                    : fmt::format("name one of its members: {}", join(names)));
  }

  Result<Typed> resolve(Expr& e, int depth) {
    if (depth > probe_detail::kMaxDepth)
      return spec_error(e.column, "expression nests too deeply", "split it");
    switch (e.op) {
      case Expr::Op::Name:
        return name(e);
      case Expr::Op::Member:
        return member(e, depth);
      case Expr::Op::Cast:
        return cast(e, depth);
      case Expr::Op::Binary:
        return binary(e, depth);
      default:
        for (auto& c : e.children) {
          auto t = value(c, depth + 1);
          if (!t) return t;
        }
        return Typed{};
    }
  }

  Result<Typed> binary(Expr& e, int depth) {
    for (auto& c : e.children) {
      auto t = value(c, depth + 1);
      if (!t) return t;
      // `req->user == "alice"`: a char pointer compared with a literal is the string it points to.
      const bool compare = e.op_text == "==" || e.op_text == "!=";
      const bool other_is_literal =
          (&c == &e.children[0] ? e.children[1] : e.children[0]).op == Expr::Op::String;
      if (compare && other_is_literal && t->c && t->c->pointers > 0) {
        Expr s;
        s.op = Expr::Op::Str;
        s.column = c.column;
        s.children.push_back(std::move(c));
        c = std::move(s);
      }
    }
    return Typed{};
  }

  Result<Typed> cast(Expr& e, int depth) {
    auto inner = value(e.children[0], depth + 1);
    if (!inner) return inner;
    Typed t;
    t.c = e.type;  // a struct pointer's layout is looked up when a member is taken
    return t;
  }

  // ---- parameters ----

  Result<void> load_params(int column) {
    if (params_) return {};
    if (spec_.kind == ProbeKind::Usdt)
      return spec_error(column, "USDT probes have no parameter names",
                        "name their arguments arg1..argN");
    std::optional<DwarfFunction> fn;
    if (has_dwarf() && site_.function_addr) {
      auto f = site_.dwarf->function_at(site_.function_addr);
      if (!f) return spec_error(column, f.error().message, "declare the parameters instead");
      fn = std::move(*f);
    }
    params_.emplace();
    if (spec_.params) {
      declared_params(*spec_.params);
      if (fn) return check_against_dwarf(*spec_.params, *fn);
      return {};
    }
    if (!fn) {
      const std::string why = has_dwarf() ? fmt::format("the DWARF of {} does not describe {}",
                                                        site_.object, site_.function)
                                          : no_dwarf_reason();
      return spec_error(column, fmt::format("parameter names need DWARF, and {}", why),
                        fmt::format("declare them as in {}(char *name, int len), install the "
                                    "object's -dbg package, or use arg1..arg6",
                                    site_.function));
    }
    for (const auto& p : fn->params) {
      Param q;
      q.name = p.artificial && p.name.empty() ? "this" : p.name;
      q.dwarf = p.type;
      q.type = ctype_of(p.type);
      if (p.location.cls == ArgLocation::Class::IntegerRegister) {
        q.position = p.location.position;
      } else {
        q.why_not = p.location.reason;
      }
      if (p.type.kind == DwarfType::Kind::Struct || p.type.kind == DwarfType::Kind::Union)
        if (q.position) {
          q.position = 0;
          q.why_not = fmt::format("{} is passed by value in registers, not in memory", p.type.name);
        }
      params_->push_back(std::move(q));
    }
    return {};
  }

  void declared_params(const std::vector<DeclaredParam>& declared) {
    int ints = 0;
    std::string lost;
    for (const auto& d : declared) {
      Param q;
      q.name = d.name;
      q.type = d.type;
      if (!lost.empty()) {
        q.why_not =
            fmt::format("it follows {}, whose registers uscope cannot tell without DWARF", lost);
      } else if (d.type.pointers == 0 && is_aggregate_name(d.type.name)) {
        q.why_not = fmt::format("{} is passed by value", d.type.name);
        lost = "'" + d.name + "'";
      } else if (d.type.pointers == 0 && is_float_name(d.type.name)) {
        q.why_not = fmt::format("{} is passed in an SSE (xmm) register", d.type.name);
      } else if (ints == kIntRegisters) {
        q.why_not = "past the six integer registers, on the stack";
      } else {
        q.position = ++ints;
      }
      params_->push_back(std::move(q));
    }
  }

  // The names are the user's own (bcc's `open(char *filename)` where glibc says `file`); what
  // must agree is where each one is: its register and whether it holds a pointer.
  Result<void> check_against_dwarf(const std::vector<DeclaredParam>& declared,
                                   const DwarfFunction& fn) {
    std::vector<const DwarfParam*> dwarf_ints;
    for (const auto& p : fn.params)
      if (p.location.cls == ArgLocation::Class::IntegerRegister) dwarf_ints.push_back(&p);
    auto says = [&](const DwarfParam& p) {
      return fmt::format("DWARF of {} says {}", site_.function, declaration(p));
    };
    const std::string fix = fmt::format(
        "declare the list as DWARF has it ({}), or drop it and "
        "let DWARF name the parameters",
        signature(fn));
    for (size_t i = 0; i < declared.size(); ++i) {
      const DeclaredParam& d = declared[i];
      const Param& q = (*params_)[i];
      for (size_t j = 0; j < fn.params.size(); ++j)
        if (j != i && fn.params[j].name == d.name && !d.name.empty())
          return spec_error(d.column,
                            fmt::format("'{}' is parameter {} here but {} in DWARF of {}", d.name,
                                        i + 1, j + 1, site_.function),
                            fix);
      if (!q.position) continue;
      if (static_cast<size_t>(q.position) > dwarf_ints.size()) {
        if (fn.varargs) continue;
        return spec_error(d.column,
                          fmt::format("'{}' is integer argument {} but DWARF of {} has {}", d.name,
                                      q.position, site_.function, dwarf_ints.size()),
                          fix);
      }
      const DwarfParam& p = *dwarf_ints[static_cast<size_t>(q.position - 1)];
      const bool dwarf_pointer = p.type.kind == DwarfType::Kind::Pointer;
      if ((d.type.pointers > 0) != dwarf_pointer)
        return spec_error(
            d.column,
            fmt::format("'{}' is declared {} but {}", d.name, c_spelling(d.type), says(p)), fix);
    }
    return {};
  }

  // "struct request *req", "int len".
  static std::string declaration(const DwarfParam& p) {
    const std::string n = p.name.empty() ? std::string("(unnamed)") : p.name;
    return p.type.name + (p.type.name.ends_with('*') ? n : " " + n);
  }

  std::string signature(const DwarfFunction& fn) const {
    std::vector<std::string> parts;
    for (const auto& p : fn.params)
      if (!p.artificial) parts.push_back(declaration(p));
    if (fn.varargs) parts.push_back("...");
    return fmt::format("{}({})", site_.function, join(parts));
  }

  std::string param_list() const {
    std::vector<std::string> names;
    for (const auto& p : *params_) names.push_back(p.name);
    return fmt::format("{}({})", site_.function, join(names));
  }

  Result<Typed> name(Expr& e) {
    if (auto r = load_params(e.column); !r) return tl::unexpected(r.error());
    const Param* found = nullptr;
    for (const auto& p : *params_)
      if (p.name == e.text) found = &p;
    if (!found) {
      std::vector<std::string> names;
      for (const auto& p : *params_)
        if (!p.name.empty()) names.push_back(p.name);
      auto close = closest_names(e.text, names, 3);
      std::string what = fmt::format("no parameter '{}' in {}", e.text, param_list());
      if (e.text == "this")
        return spec_error(e.column, what,
                          "'this' is arg1 of a C++ member function; use arg1 or install DWARF");
      return spec_error(
          e.column, what,
          close.empty() ? std::string("use arg1..arg6") : fmt::format("closest: {}", join(close)));
    }
    if (!found->position)
      return spec_error(
          e.column,
          fmt::format("'{}' is not in an integer register at entry: {}", e.text, found->why_not),
          "uscope reads arguments from rdi, rsi, rdx, rcx, r8, r9");
    Typed t;
    t.c = found->type;
    t.dwarf = found->dwarf;
    const int column = e.column;
    Expr arg;
    arg.op = spec_.kind == ProbeKind::Return ? Expr::Op::Entry : Expr::Op::Arg;
    arg.index = found->position;
    arg.column = column;
    arg.type = found->type;
    const CType& c = found->type;
    if (c.pointers == 0 && c.width > 0 && c.width < 8) {
      Expr narrow;
      narrow.op = Expr::Op::Cast;
      narrow.width = c.width;
      narrow.is_signed = c.is_signed;
      narrow.type = c;
      narrow.column = column;
      narrow.children.push_back(std::move(arg));
      e = std::move(narrow);
    } else {
      e = std::move(arg);
    }
    return t;
  }

  // ---- types ----

  CType ctype_of(DwarfType t) {
    CType c;
    for (int i = 0; i < kMaxPointerDepth && t.kind == DwarfType::Kind::Pointer; ++i) {
      ++c.pointers;
      if (!t.target) {
        c.name = "void";
        return c;
      }
      auto next = site_.dwarf->type(*t.target);
      if (!next) {
        c.name = "?";
        return c;
      }
      t = std::move(*next);
    }
    if (t.kind == DwarfType::Kind::Array) {  // as a value, an array is its address
      ++c.pointers;
      if (t.target)
        if (auto elem = site_.dwarf->type(*t.target)) t = std::move(*elem);
    }
    c.name = t.name;
    if (t.kind == DwarfType::Kind::Integer || t.kind == DwarfType::Kind::Enum) {
      c.width = static_cast<int>(t.size);
      c.is_signed = t.is_signed;
    }
    return c;
  }

  // The DWARF type of a declared `struct X *`: a pointer to the struct found in any CU.
  Result<DwarfType> pointer_to_struct(const CType& c, const std::string& ptr, int column) {
    const std::string fix = fmt::format(
        "struct members need DWARF: install the object's -dbg package, or read at an explicit "
        "offset such as *(u64*)({} + 8)",
        ptr);
    if (!has_dwarf())
      return spec_error(column, fmt::format("no layout of {}: {}", c.name, no_dwarf_reason()), fix);
    auto found = site_.dwarf->find_type(c.name);
    if (!found) return spec_error(column, found.error().message, fix);
    if (!*found)
      return spec_error(column, fmt::format("no {} in the DWARF of {}", c.name, site_.object), fix);
    DwarfType p;
    p.kind = DwarfType::Kind::Pointer;
    p.size = 8;
    p.name = c.name + " *";
    p.base_name = c.name;
    p.target = (*found)->ref;
    return p;
  }

  // The complete definition of a struct a pointer points at: a CU that only declares it
  // (`struct request;`) leaves the layout to another CU.
  Result<DwarfType> complete(const DwarfType& t, int column) {
    if (!t.declaration_only) return t;
    auto found = site_.dwarf->find_type(t.name);
    if (found && *found) return **found;
    return spec_error(column,
                      fmt::format("{} is only declared in the DWARF of {}", t.name, site_.object),
                      "read at an explicit offset such as *(u64*)(ptr + 8)");
  }

  Result<Typed> member(Expr& e, int depth) {
    Expr& base_expr = e.children[0];
    const std::string base_text = spelling(base_expr);
    const std::string written = spelling(e);
    const bool arrow = e.index == 1;
    auto base = resolve(base_expr, depth + 1);
    if (!base) return base;
    // A declared `struct X *` parameter gets its layout now.
    if (!base->dwarf && base->c && base->c->pointers == 1 && is_aggregate_name(base->c->name)) {
      auto d = pointer_to_struct(*base->c, base_text, base_expr.column);
      if (!d) return tl::unexpected(d.error());
      base->dwarf = *d;
    }
    const char* op = arrow ? "->" : ".";
    if (!base->c && !base->dwarf)
      return spec_error(
          base_expr.column,
          fmt::format("{} has no C type, so '{}' cannot find a member", base_text, op),
          fmt::format("cast it: (({} *){}){}{}", "struct name", base_text, op, e.text));
    std::optional<DwarfType> agg;
    if (arrow) {
      const bool ok = !base->struct_address && base->dwarf &&
                      base->dwarf->kind == DwarfType::Kind::Pointer && base->dwarf->target;
      if (ok) {
        auto pointee = site_.dwarf->type(*base->dwarf->target);
        if (!pointee) return spec_error(base_expr.column, pointee.error().message, "");
        if (is_aggregate(*pointee)) agg = *pointee;
      }
      if (!agg)
        return spec_error(
            e.column,
            fmt::format("'->' needs a pointer to a struct but {} is {}", base_text,
                        base->struct_address ? base->dwarf->name
                                             : (base->c ? c_spelling(*base->c) : "untyped")),
            base->struct_address ? fmt::format("write {}.{}", base_text, e.text)
                                 : std::string("use '.' for a member of a struct member"));
    } else {
      if (!base->struct_address || !base->dwarf)
        return spec_error(e.column,
                          fmt::format("'.' needs a struct but {} is {}", base_text,
                                      base->c ? c_spelling(*base->c) : "untyped"),
                          base->c && base->c->pointers
                              ? fmt::format("write {}->{}", base_text, e.text)
                              : std::string("'.' follows a struct member, as in req->hdr.len"));
      agg = *base->dwarf;
    }
    auto full = complete(*agg, e.column);
    if (!full) return tl::unexpected(full.error());
    auto m = site_.dwarf->member(full->ref, e.text);
    if (!m) return spec_error(e.column, m.error().message, "");
    if (!*m) {
      std::vector<std::string> names;
      if (auto ms = site_.dwarf->members(full->ref))
        for (const auto& x : *ms)
          if (!x.name.empty()) names.push_back(x.name);
      auto close = closest_names(e.text, names, 3);
      return spec_error(e.column, fmt::format("{} has no member '{}'", full->name, e.text),
                        close.empty() ? fmt::format("its members: {}", join(names))
                                      : fmt::format("closest: {}", join(close)));
    }
    const DwarfMember& mem = **m;
    const int column = e.column;
    if (mem.bit_size)
      return spec_error(column,
                        fmt::format("{} is a bitfield ({} bits); uscope reads whole bytes", written,
                                    mem.bit_size),
                        fmt::format("read the word holding it, *(u32*)({} + {}), and mask it",
                                    arrow ? base_text : "&" + base_text, mem.offset));
    Expr addr = add_offset(std::move(base_expr), mem.offset, column);
    Typed t;
    t.dwarf = mem.type;
    const DwarfType& mt = mem.type;
    switch (mt.kind) {
      case DwarfType::Kind::Struct:
      case DwarfType::Kind::Union:
        t.struct_address = true;
        e = std::move(addr);
        return t;
      case DwarfType::Kind::Array: {
        // As in C, the array is its address: %s prints it as a string.
        t.c = ctype_of(mt);
        DwarfType p;
        p.kind = DwarfType::Kind::Pointer;
        p.size = 8;
        p.target = mt.target;
        p.name = t.c->name + " *";
        p.base_name = t.c->name;
        t.dwarf = p;
        addr.type = t.c;
        e = std::move(addr);
        return t;
      }
      case DwarfType::Kind::Pointer:
      case DwarfType::Kind::Integer:
      case DwarfType::Kind::Enum: {
        const uint64_t w = mt.size;
        if (w != 1 && w != 2 && w != 4 && w != 8)
          return spec_error(
              column,
              fmt::format("{} is {} of {} bytes; uscope reads 1, 2, 4 or 8", written, mt.name, w),
              "read part of it with *(u64*)(...) at an explicit offset");
        t.c = ctype_of(mt);
        Expr d = deref(std::move(addr), static_cast<int>(w),
                       mt.kind != DwarfType::Kind::Pointer && mt.is_signed, column);
        d.type = t.c;
        e = std::move(d);
        return t;
      }
      case DwarfType::Kind::Float:
        return spec_error(
            column, fmt::format("{} is a {}; uscope prints integers", written, mt.name),
            fmt::format("read its bits with *(u{}*)(...) at offset {}", mt.size * 8, mem.offset));
      default:
        return spec_error(column,
                          fmt::format("{} has type {}, which uscope cannot read", written, mt.name),
                          "read it at an explicit offset");
    }
  }

  const ProbeSpec& spec_;
  const NameSite& site_;
  std::optional<std::vector<Param>> params_;
};

bool mentions_names(const Expr& e) {
  if (e.op == Expr::Op::Name || e.op == Expr::Op::Member) return true;
  return std::any_of(e.children.begin(), e.children.end(), mentions_names);
}

}  // namespace

bool has_names(const ProbeSpec& spec) {
  if (spec.predicate && mentions_names(*spec.predicate)) return true;
  return std::any_of(spec.args.begin(), spec.args.end(), mentions_names);
}

Result<ProbeSpec> resolve_names(const ProbeSpec& spec, const NameSite& site) {
  if (!has_names(spec)) return spec;
  return Resolver(spec, site).run();
}

Result<ProbeSpec> resolve_names(const ProbeSpec& spec, PlannedObject& object,
                                uint64_t function_addr, const std::string& function,
                                std::vector<NameOrigin>* origins, uint64_t inlined_pc) {
  const bool go_list = spec.params && is_go_declared(*spec.params);
  const bool go_code = object.is_go;
  const std::string& where = object.ref.display_path;
  if (spec.params && !spec.params->empty() && go_list != go_code)
    return spec_error(
        spec.params->front().column,
        go_code ? fmt::format("{} in {} is Go code, and its parameters are declared C's way",
                              function, where)
                : fmt::format("{} in {} is not Go code, and its parameters are declared Go's way",
                              function, where),
        go_code ? fmt::format("declare them as Go writes them, name then type: {}(i int, tag "
                              "string)",
                              spec.function)
                : fmt::format("declare them as C writes them, type then name: {}(int fd, char "
                              "*path)",
                              spec.function));
  if (go_code ? !needs_go_resolver(spec) : !has_names(spec)) return spec;
  if (auto opened = dwarf_of(object); !opened)
    return with_context(object.elf.display_path(), opened.error());
  // Go code: its own ABI and its own DWARF conventions (plan/go_name_resolver.h).
  if (go_code) {
    GoNameSite go;
    go.function_addr = function_addr;
    go.function = function;
    go.object = where;
    go.kind = spec.kind;
    go.inlined_pc = inlined_pc;
    go.cc = &convention_of(object);
    if (object.go) go.go_version = object.go->version;
    GoTypesSource types = [&object] { return go_types_of(object); };
    return resolve_go_names(spec, *object.dwarf, types, go, origins);
  }
  NameSite site;
  site.dwarf = object.dwarf.get();
  site.function_addr = function_addr;
  site.function = function;
  site.object = object.elf.display_path();
  return resolve_names(spec, site);
}

}  // namespace uscope
