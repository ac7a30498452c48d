#include "plan/recipe.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>
#include <utility>

namespace uscope {

namespace {

// Two expressions that compute the same value (one entry slot serves both).
bool same_expr(const Expr& a, const Expr& b) {
  if (a.op != b.op || a.index != b.index || a.value != b.value || a.text != b.text ||
      a.op_text != b.op_text || a.width != b.width || a.is_signed != b.is_signed ||
      a.children.size() != b.children.size())
    return false;
  for (size_t i = 0; i < a.children.size(); ++i)
    if (!same_expr(a.children[i], b.children[i])) return false;
  return true;
}

uint32_t call_key_flags(const CallingConvention& cc) {
  return cc.key == CallKey::Goroutine ? TRACE_F_GOROUTINE : 0u;
}

tl::unexpected<Error> at(const Expr& e, std::string_view what) {
  return fail("probe spec column {}: {}", e.column, what);
}

bool unsigned_64(const Expr& e) {
  return e.op == Expr::Op::Cast && e.width == 8 && !e.is_signed;
}

class RecipeBuilder {
 public:
  RecipeBuilder(uscope_recipe& r, const SiteContext& site) : r_(r), site_(site) {}

  Result<void> op(uint8_t code, uint8_t a = 0, uint16_t b = 0, int64_t imm = 0, int pushes = 0,
                  int pops = 0) {
    if (fold_constant(code, imm)) {
      depth_ += pushes - pops;
      return {};
    }
    if (r_.n_ops >= TRACE_MAX_OPS)
      return fail(
          "probe spec column 1: probe needs more than {} operations; simplify the "
          "predicate or print fewer arguments",
          TRACE_MAX_OPS);
    r_.ops[r_.n_ops++] = uscope_op{code, a, b, 0, imm};
    depth_ += pushes - pops;
    if (depth_ > TRACE_STACK)
      return fail("probe spec column 1: expression nests deeper than {} values; split it",
                  TRACE_STACK);
    return {};
  }

  // `x + k`, `x - k` and a read at `x + k` in one op where x's op takes an addend (bpf/trace.h):
  // every op costs each hit its interpretation. True when `code` was folded into the ops before
  // it; a DEREF after an ADDI takes the ADDI's constant as its offset (`imm`) instead.
  bool fold_constant(uint8_t code, int64_t& imm) {
    uscope_op* last = r_.n_ops ? &r_.ops[r_.n_ops - 1] : nullptr;
    if ((code == TOP_ADD || code == TOP_SUB) && last && last->code == TOP_CONST) {
      // The constant is the right operand: x's ops came before it.
      const uint64_t k =
          code == TOP_ADD ? static_cast<uint64_t>(last->imm) : 0 - static_cast<uint64_t>(last->imm);
      --r_.n_ops;
      uscope_op* x = r_.n_ops ? &r_.ops[r_.n_ops - 1] : nullptr;
      if (x && (x->code == TOP_REG || x->code == TOP_ENTRY || x->code == TOP_CONST ||
                x->code == TOP_ADDI)) {
        x->imm = static_cast<int64_t>(static_cast<uint64_t>(x->imm) + k);
      } else {
        r_.ops[r_.n_ops++] = uscope_op{TOP_ADDI, 0, 0, 0, static_cast<int64_t>(k)};
      }
      return true;
    }
    if (code == TOP_DEREF && imm == 0 && last && last->code == TOP_ADDI) {
      imm = last->imm;  // the read's offset; the ADDI goes
      --r_.n_ops;
    }
    return false;
  }

  Result<void> push_reg(int reg) { return op(TOP_REG, static_cast<uint8_t>(reg), 0, 0, 1); }

  // Adds a string constant to the recipe's pool; returns its offset.
  Result<uint8_t> pool(const Expr& e, const std::string& s) {
    // The BPF side reads the compared string, one byte more (a longer string must differ) and
    // a NUL into TRACE_POOL bytes.
    if (s.size() > TRACE_POOL - 3)
      return at(e, fmt::format("a compared string is at most {} bytes", TRACE_POOL - 3));
    if (pool_used_ + s.size() > TRACE_POOL - 1)
      return at(e, "string constants exceed 127 bytes in one probe");
    std::memcpy(r_.pool + pool_used_, s.data(), s.size());
    auto off = static_cast<uint8_t>(pool_used_);
    pool_used_ += s.size();
    return off;
  }

  Result<void> usdt_arg(const Expr& e) {
    const auto* loc = site_.usdt;
    if (loc->args_error)
      return at(e, fmt::format("this USDT probe's argument spec '{}' is unreadable: {}",
                               loc->args_text, loc->args_error->message));
    if (e.index < 1 || static_cast<size_t>(e.index) > loc->args.size())
      return at(e, fmt::format("this USDT probe has {} argument{}; arg{} does not exist",
                               loc->args.size(), loc->args.size() == 1 ? "" : "s", e.index));
    const UsdtArg& a = loc->args[static_cast<size_t>(e.index - 1)];
    auto reg = [&](const std::string& name) -> Result<void> {
      int r = trace_register(name);
      if (r < 0)
        return at(e, fmt::format("USDT operand '{}' uses register {}, unknown", a.text, name));
      return push_reg(r);
    };
    auto sized = static_cast<uint8_t>(a.size);
    auto sign = static_cast<uint16_t>(a.is_signed);
    // A symbolic displacement ("table(,%rcx,8)", "foo(%rip)") is the symbol's link-time address.
    std::optional<uint64_t> sym = a.symbol.empty()       ? std::optional<uint64_t>(0)
                                  : site_.symbol_address ? site_.symbol_address(a.symbol)
                                                         : std::nullopt;
    if (!sym)
      return at(e, fmt::format("USDT operand '{}' names symbol '{}', not found in the object's "
                               "symbol table",
                               a.text, a.symbol));
    // Without a base register a displacement is an absolute address: position-dependent code,
    // where link-time and run-time addresses agree.
    const int64_t displacement = a.offset + static_cast<int64_t>(*sym);
    switch (a.kind) {
      case UsdtArg::Kind::Constant:
        return op(TOP_CONST, 0, 0, a.constant, 1);
      case UsdtArg::Kind::Register:
        if (auto r = reg(a.base_reg); !r) return r;
        return a.size < 8 ? op(TOP_EXT, sized, sign) : Result<void>{};
      case UsdtArg::Kind::Memory:
        if (auto r = reg(a.base_reg); !r) return r;
        if (displacement) {
          if (auto r = op(TOP_CONST, 0, 0, displacement, 1); !r) return r;
          if (auto r = op(TOP_ADD, 0, 0, 0, 1, 2); !r) return r;
        }
        return op(TOP_DEREF, sized, sign, 0, 1, 1);
      case UsdtArg::Kind::Indexed:
        if (!a.base_reg.empty()) {
          if (auto r = reg(a.base_reg); !r) return r;
        } else if (auto r = op(TOP_CONST, 0, 0, 0, 1); !r) {
          return r;
        }
        if (auto r = reg(a.index_reg); !r) return r;
        if (auto r = op(TOP_CONST, 0, 0, a.scale, 1); !r) return r;
        if (auto r = op(TOP_MUL, 0, 0, 0, 1, 2); !r) return r;
        if (auto r = op(TOP_ADD, 0, 0, 0, 1, 2); !r) return r;
        if (auto r = op(TOP_CONST, 0, 0, displacement, 1); !r) return r;
        if (auto r = op(TOP_ADD, 0, 0, 0, 1, 2); !r) return r;
        return op(TOP_DEREF, sized, sign, 0, 1, 1);
      case UsdtArg::Kind::Absolute: {
        // foo(%rip): the runtime address is the probe's runtime ip plus the link-time distance
        // from the probe to foo, which needs no load bias.
        if (a.base_reg == "rip") {
          if (auto r = push_reg(UREG_RIP); !r) return r;
          int64_t delta =
              static_cast<int64_t>(*sym + static_cast<uint64_t>(a.offset) - site_.site_addr);
          if (auto r = op(TOP_CONST, 0, 0, delta, 1); !r) return r;
          if (auto r = op(TOP_ADD, 0, 0, 0, 1, 2); !r) return r;
        } else {
          if (auto r = op(TOP_CONST, 0, 0, displacement, 1); !r) return r;
        }
        return op(TOP_DEREF, sized, sign, 0, 1, 1);
      }
    }
    return at(e, "unsupported USDT operand");
  }

  Result<void> function_arg(const Expr& e) {
    if (site_.kind == ProbeKind::Return)
      return at(
          e, fmt::format("arg{} is not preserved at return; use $entry(arg{})", e.index, e.index));
    if (!site_.go_stack_abi.empty())
      return at(e, fmt::format("this program was built by {}, which passes arguments on the "
                               "stack (register arguments start with Go 1.17); argN is not "
                               "supported for it",
                               site_.go_stack_abi));
    const auto regs = site_.cc->int_args;
    if (e.index < 1 || static_cast<size_t>(e.index) > regs.size())
      return at(e, fmt::format("arg1..arg{} are the register arguments of a function ({})",
                               regs.size(), site_.cc->name));
    return push_reg(regs[static_cast<size_t>(e.index - 1)]);
  }

  Result<void> arg(const Expr& e) {
    return site_.kind == ProbeKind::Usdt ? usdt_arg(e) : function_arg(e);
  }

  // String comparison: `$comm == "x"` or `str(p) == "x"`, either side.
  Result<void> string_compare(const Expr& e) {
    const Expr* lit = &e.children[1];
    const Expr* other = &e.children[0];
    if (other->op == Expr::Op::String) std::swap(lit, other);
    if (lit->op != Expr::Op::String || (other->op != Expr::Op::Comm && other->op != Expr::Op::Str))
      return at(e, "strings compare only as $comm or str(...) against a \"literal\"");
    auto off = pool(*lit, lit->text);
    if (!off) return tl::unexpected(off.error());
    auto len = static_cast<uint16_t>(lit->text.size());
    if (other->op == Expr::Op::Comm) {
      if (auto r = op(TOP_COMMEQ, *off, len, 0, 1); !r) return r;
    } else {
      if (auto r = value(other->children[0]); !r) return r;
      if (auto r = op(TOP_STREQ, *off, len, 0, 1, 1); !r) return r;
    }
    return e.op_text == "!=" ? op(TOP_NOT, 0, 0, 0, 1, 1) : Result<void>{};
  }

  Result<void> value(const Expr& e) {
    switch (e.op) {
      case Expr::Op::Arg:
        return arg(e);
      case Expr::Op::Retval:
        if (site_.kind != ProbeKind::Return) return at(e, "retval needs a return probe (r:)");
        if (site_.cc->int_results.empty())
          return at(e, fmt::format("retval: {} returns results on the stack", site_.cc->name));
        return push_reg(site_.cc->int_results[0]);
      case Expr::Op::Entry: {
        if (site_.kind != ProbeKind::Return) return at(e, "$entry() needs a return probe (r:)");
        // What the entry half saves: argN, or the expression the planner gave (a Go parameter).
        Expr saved;
        if (!e.children.empty()) {
          saved = e.children[0];
        } else {
          const size_t n = site_.cc->int_args.size();
          if (e.index < 1 || static_cast<size_t>(e.index) > n)
            return at(e, fmt::format("$entry() takes arg1..arg{} ({})", n, site_.cc->name));
          saved.op = Expr::Op::Arg;
          saved.index = e.index;
          saved.column = e.column;
        }
        int slot = -1;
        for (size_t i = 0; i < entry_values.size(); ++i)
          if (same_expr(entry_values[i], saved)) slot = static_cast<int>(i);
        if (slot < 0) {
          if (entry_values.size() == TRACE_ENTRY_SLOTS)
            return at(e, fmt::format("at most {} $entry() values per probe", TRACE_ENTRY_SLOTS));
          slot = static_cast<int>(entry_values.size());
          entry_values.push_back(std::move(saved));
        }
        return op(TOP_ENTRY, static_cast<uint8_t>(slot), 0, 0, 1);
      }
      case Expr::Op::Pid:
        return op(TOP_PID, 0, 0, 0, 1);
      case Expr::Op::Tid:
        return op(TOP_TID, 0, 0, 0, 1);
      case Expr::Op::Cpu:
        return op(TOP_CPU, 0, 0, 0, 1);
      case Expr::Op::Uid:
        return op(TOP_UID, 0, 0, 0, 1);
      case Expr::Op::Int:
        return op(TOP_CONST, 0, 0, e.value, 1);
      case Expr::Op::Comm:
        return at(e, "$comm is a string: print it with %s or compare it");
      case Expr::Op::String:
        return at(e, "a string literal can only be compared with ==/!=");
      case Expr::Op::Str:
        return at(e, "str() is a string: print it with %s or compare it");
      case Expr::Op::Deref:
        if (auto r = value(e.children[0]); !r) return r;
        return op(TOP_DEREF, static_cast<uint8_t>(e.width), static_cast<uint16_t>(e.is_signed), 0,
                  1, 1);
      case Expr::Op::Unary: {
        if (auto r = value(e.children[0]); !r) return r;
        uint8_t code = e.op_text == "-" ? TOP_NEG : e.op_text == "!" ? TOP_NOT : TOP_BITNOT;
        return op(code, 0, 0, 0, 1, 1);
      }
      case Expr::Op::Binary:
        return binary(e);
      case Expr::Op::Cast:
        if (auto r = value(e.children[0]); !r) return r;
        if (e.width == 0 || e.width == 8) return {};  // a pointer or 64-bit cast changes no bits
        return op(TOP_EXT, static_cast<uint8_t>(e.width), static_cast<uint16_t>(e.is_signed), 0, 1,
                  1);
      case Expr::Op::Reg: {
        int reg = trace_register(e.text);
        if (reg < 0) return at(e, fmt::format("no register '{}'", e.text));
        return push_reg(static_cast<uint8_t>(reg));
      }
      case Expr::Op::Name:
      case Expr::Op::Member:
        // The planner resolves names and members (DWARF, declared parameters) before compiling.
        return at(e, fmt::format("'{}' was not resolved to an argument or a member", e.text));
      case Expr::Op::GoValue:
        return at(e, fmt::format("a Go {} is printed only with %v", e.text));
      case Expr::Op::AtEnd: {
        if (site_.end_index < 0 || site_.end_index == e.index) return value(e.children[0]);
        // Another end's value: -1 here. What it saves at entry still takes its slots, so that
        // every end's recipe numbers the entry values alike (one entry half serves them all).
        uscope_recipe unused{};
        RecipeBuilder other(unused, site_);
        other.entry_values = std::move(entry_values);
        auto r = other.value(e.children[0]);
        entry_values = std::move(other.entry_values);
        if (!r) return r;
        return op(TOP_CONST, 0, 0, -1, 1);
      }
    }
    return at(e, "unsupported expression");
  }

  Result<void> binary(const Expr& e) {
    bool strings = e.children[0].op == Expr::Op::String || e.children[1].op == Expr::Op::String;
    if (strings && (e.op_text == "==" || e.op_text == "!=")) return string_compare(e);
    static constexpr std::pair<std::string_view, uint8_t> kOps[] = {
        {"+", TOP_ADD},  {"-", TOP_SUB},   {"*", TOP_MUL}, {"/", TOP_DIV},  {"%", TOP_MOD},
        {"&", TOP_AND},  {"|", TOP_OR},    {"^", TOP_XOR}, {"<<", TOP_SHL}, {">>", TOP_SHR},
        {"==", TOP_EQ},  {"!=", TOP_NE},   {"<", TOP_SLT}, {"<=", TOP_SLE}, {">", TOP_SGT},
        {">=", TOP_SGE}, {"&&", TOP_LAND}, {"||", TOP_LOR}};
    // argN and retval compare signed, so `retval < 0` sees a 64-bit -1; as in C, an operand
    // cast to an unsigned 64-bit type (or a pointer) makes the comparison unsigned.
    static constexpr std::pair<uint8_t, uint8_t> kUnsigned[] = {
        {TOP_SLT, TOP_LT}, {TOP_SLE, TOP_LE}, {TOP_SGT, TOP_GT}, {TOP_SGE, TOP_GE}};
    bool is_unsigned = unsigned_64(e.children[0]) || unsigned_64(e.children[1]);
    for (auto [text, code] : kOps) {
      if (text != e.op_text) continue;
      for (auto [s, u] : kUnsigned)
        if (is_unsigned && code == s) code = u;
      if (auto r = value(e.children[0]); !r) return r;
      if (auto r = value(e.children[1]); !r) return r;
      return op(code, 0, 0, 0, 1, 2);
    }
    return at(e, fmt::format("operator {} is not supported", e.op_text));
  }

  Result<void> emit(const Expr& e, const FormatConversion& conv) {
    if (e.op == Expr::Op::GoValue) {
      if (conv.conv != 'v') return at(e, fmt::format("a Go {} is printed only with %v", e.text));
      if (e.children.size() != 2) return at(e, "a Go value needs its two words");
      const bool slice = e.text.starts_with("[]");
      // Any interface but interface {} starts with an itab, which holds the type.
      const bool itab = !slice && e.text != "interface {}";
      if (auto r = value(e.children[0]); !r) return r;
      if (auto r = value(e.children[1]); !r) return r;
      fields.push_back({slice ? OutputField::Kind::GoValues : OutputField::Kind::GoValue, conv});
      return op(TOP_EMIT_GOIFACE, slice ? 1 : 0,
                slice ? TRACE_GO_VALUES : (itab ? TRACE_GO_ITAB : 0), 0, 0, 2);
    }
    const bool as_string =
        conv.conv == 's' || (conv.conv == 'v' && (e.op == Expr::Op::Str || e.op == Expr::Op::Comm));
    if (!as_string) {
      if (auto r = value(e); !r) return r;
      fields.push_back({OutputField::Kind::Value, conv});
      return op(TOP_EMIT, 0, 0, 0, 0, 1);
    }
    fields.push_back({OutputField::Kind::String, conv});
    if (e.op == Expr::Op::Comm) return op(TOP_EMIT_COMM);
    if (e.op != Expr::Op::Str) return at(e, "%s needs a string: str(ptr), str(ptr, len) or $comm");
    if (auto r = value(e.children[0]); !r) return r;
    if (e.children.size() < 2) return op(TOP_EMIT_STR, 0, 0, kDefaultStringBytes, 0, 1);
    const Expr& len = e.children[1];
    if (len.op == Expr::Op::Int) {  // str(p, 32): NUL-terminated, at most 32 bytes
      int64_t n = std::clamp<int64_t>(len.value, 0, kMaxStringBytes);
      return op(TOP_EMIT_STR, 0, 0, n, 0, 1);
    }
    // str(p, arg2): exactly arg2 bytes (capped), for pointer + length strings.
    if (auto r = value(len); !r) return r;
    return op(TOP_EMIT_STR, 1, 0, kMaxStringBytes, 0, 2);
  }

  std::vector<Expr> entry_values;  // what the entry half saves, by slot (evaluated at entry)
  std::vector<OutputField> fields;

 private:
  uscope_recipe& r_;
  const SiteContext& site_;
  int depth_ = 0;
  size_t pool_used_ = 0;
};

// Lowers the largest string read sizes to one common cap, the highest that lets the largest
// payload the recipe can write fit TRACE_MAX_DATA. The BPF side drops an event as malformed when
// a field finds no room left, so without this a probe printing several long strings would lose
// exactly its biggest events; a shortened string is marked truncated instead.
void fit_payload(uscope_recipe& r) {
  int64_t fixed = 0;
  std::vector<uscope_op*> strings;
  for (uint32_t i = 0; i < r.n_ops; ++i) {
    uscope_op& o = r.ops[i];
    if (o.code == TOP_EMIT) fixed += 8;
    if (o.code == TOP_EMIT_COMM) fixed += 4 + TRACE_COMM_LEN;  // the room emit_comm() checks for
    if (o.code == TOP_EMIT_STR) strings.push_back(&o);
  }
  // A string the BPF side cannot read takes TRACE_STR_DEFERRED_BYTES instead of its bytes.
  auto worst = [&](int64_t cap) {
    int64_t total = fixed;
    for (const uscope_op* o : strings)
      total += std::max<int64_t>(4 + std::min<int64_t>(o->imm, cap), TRACE_STR_DEFERRED_BYTES);
    return total;
  };
  if (worst(kMaxStringBytes) <= TRACE_MAX_DATA) return;
  int64_t lo = 0, hi = kMaxStringBytes;  // worst(lo) fits: at most 64 fields of 20 bytes
  while (lo + 1 < hi) {
    int64_t mid = (lo + hi) / 2;
    (worst(mid) <= TRACE_MAX_DATA ? lo : hi) = mid;
  }
  for (uscope_op* o : strings) o->imm = std::min<int64_t>(o->imm, lo);
}

}  // namespace

int trace_register(const std::string& name) {
  static constexpr std::pair<std::string_view, uscope_reg> kRegs[] = {
      {"r15", UREG_R15}, {"r14", UREG_R14}, {"r13", UREG_R13}, {"r12", UREG_R12}, {"rbp", UREG_RBP},
      {"rbx", UREG_RBX}, {"r11", UREG_R11}, {"r10", UREG_R10}, {"r9", UREG_R9},   {"r8", UREG_R8},
      {"rax", UREG_RAX}, {"rcx", UREG_RCX}, {"rdx", UREG_RDX}, {"rsi", UREG_RSI}, {"rdi", UREG_RDI},
      {"rip", UREG_RIP}, {"rsp", UREG_RSP}};
  for (const auto& [n, r] : kRegs)
    if (n == name) return r;
  return -1;
}

Result<CompiledProbe> compile_probe(const ProbeSpec& spec, const SiteContext& site,
                                    uint32_t probe_id) {
  CompiledProbe out;
  out.main.probe_id = probe_id;
  out.main.sp_delta = site.sp_delta;
  RecipeBuilder b(out.main, site);
  if (spec.predicate) {
    if (auto r = b.value(*spec.predicate); !r) return tl::unexpected(r.error());
    if (auto r = b.op(TOP_FILTER, 0, 0, 0, 0, 1); !r) return tl::unexpected(r.error());
  }
  for (size_t i = 0; i < spec.args.size() && i < spec.conversions.size(); ++i)
    if (auto r = b.emit(spec.args[i], spec.conversions[i]); !r) return tl::unexpected(r.error());
  fit_payload(out.main);
  out.fields = std::move(b.fields);
  if (site.capture_stack) out.main.flags |= TRACE_F_STACK;
  if (site.kind == ProbeKind::Entry && spec.offset == 0) out.main.flags |= TRACE_F_AT_ENTRY;
  if (site.kind == ProbeKind::Return) out.main.flags |= TRACE_F_RETURN;
  if (site.kind == ProbeKind::Return) out.main.flags |= call_key_flags(*site.cc);
  if (!b.entry_values.empty()) {
    out.main.flags |= TRACE_F_NEEDS_ENTRY;
    uscope_recipe entry{};
    entry.probe_id = probe_id;
    entry.sp_delta = site.sp_delta;
    entry.flags = TRACE_F_SAVE_ENTRY | call_key_flags(*site.cc);
    SiteContext at_entry = site;
    at_entry.kind = ProbeKind::Entry;
    RecipeBuilder eb(entry, at_entry);
    for (size_t slot = 0; slot < b.entry_values.size(); ++slot) {
      if (auto r = eb.value(b.entry_values[slot]); !r) return tl::unexpected(r.error());
      if (auto r = eb.op(TOP_SAVE, static_cast<uint8_t>(slot), 0, 0, 0, 1); !r)
        return tl::unexpected(r.error());
    }
    out.entry = entry;
  }
  return out;
}

uscope_recipe latency_entry_recipe(uint32_t probe_id, int32_t sp_delta,
                                   const CallingConvention& cc) {
  uscope_recipe r{};
  r.probe_id = probe_id;
  r.sp_delta = sp_delta;
  r.flags = TRACE_F_SAVE_ENTRY | call_key_flags(cc);
  return r;
}

uscope_recipe latency_return_recipe(uint32_t probe_id, const CallingConvention& cc) {
  uscope_recipe r{};
  r.probe_id = probe_id;
  r.flags = TRACE_F_RETURN | TRACE_F_NEEDS_ENTRY | TRACE_F_HISTOGRAM | call_key_flags(cc);
  return r;
}

}  // namespace uscope
