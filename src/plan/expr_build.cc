#include "plan/expr_build.h"

#include <fmt/core.h>

#include <utility>

namespace uscope::expr {

namespace {

Expr leaf(Expr::Op op) {
  Expr e;
  e.op = op;
  return e;
}

}  // namespace

Expr reg(const char* name) {
  Expr e = leaf(Expr::Op::Reg);
  e.text = name;
  return e;
}

Expr integer(int64_t v) {
  Expr e = leaf(Expr::Op::Int);
  e.value = v;
  return e;
}

Expr retval() {
  return leaf(Expr::Op::Retval);
}

Expr binary(const char* op, Expr a, Expr b) {
  Expr e = leaf(Expr::Op::Binary);
  e.op_text = op;
  e.children = {std::move(a), std::move(b)};
  return e;
}

Expr at_entry(Expr child) {
  Expr e = leaf(Expr::Op::Entry);
  e.children = {std::move(child)};
  return e;
}

Expr load(Expr base, uint64_t offset, int width, bool is_signed) {
  Expr e = leaf(Expr::Op::Deref);
  e.width = width;
  e.is_signed = is_signed;
  e.children = {offset ? binary("+", std::move(base), integer(static_cast<int64_t>(offset)))
                       : std::move(base)};
  return e;
}

Expr signed_cast(Expr child, int width) {
  Expr e = leaf(Expr::Op::Cast);
  e.width = width;
  e.is_signed = true;
  e.type = CType{.name = fmt::format("s{}", width * 8), .width = width, .is_signed = true};
  e.children = {std::move(child)};
  return e;
}

Expr bytes_at(Expr ptr, Expr len) {
  Expr e = leaf(Expr::Op::Str);
  e.children = {std::move(ptr), std::move(len)};
  return e;
}

Expr go_string_at(const Expr& base, uint64_t offset) {
  return bytes_at(load(base, offset), load(base, offset + 8));
}

Expr or_minus_one(Expr when, Expr value) {
  return binary("-", binary("*", std::move(when), binary("+", std::move(value), integer(1))),
                integer(1));
}

Expr at_end(size_t index, Expr e) {
  Expr out = leaf(Expr::Op::AtEnd);
  out.index = static_cast<int>(index);
  out.children = {std::move(e)};
  return out;
}

Expr at_most(const Expr& e, int64_t cap) {
  // e - (e > cap) * (e - cap)
  return binary("-", e, binary("*", binary(">", e, integer(cap)), binary("-", e, integer(cap))));
}

void add_arg(ProbeSpec& spec, Expr e, char conv) {
  FormatConversion c;
  c.conv = conv;
  if (!spec.format.empty()) spec.format += ' ';
  c.format_pos = spec.format.size();
  c.format_len = 2;
  spec.format += fmt::format("%{}", conv);
  spec.conversions.push_back(c);
  spec.args.push_back(std::move(e));
}

}  // namespace uscope::expr
