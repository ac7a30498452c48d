#include "plan/go_abi.h"

#include <fmt/format.h>

#include <charconv>

#include "plan/go_type_text.h"

namespace uscope {

namespace {

constexpr int kMaxNesting = 16;  // structs in structs: a hostile layout costs bounded work

GoType declared(std::string_view name, GoKind kind, uint64_t size, std::string_view elem = {}) {
  return GoType{std::string(name), kind, size, std::string(elem), GoTypeSource::Declared};
}

// "[4]int" -> 4 and "int"; nullopt for anything else.
std::optional<std::pair<uint64_t, std::string_view>> array_of(std::string_view name) {
  if (!name.starts_with('[')) return std::nullopt;
  size_t close = name.find(']');
  if (close == std::string_view::npos || close == 1) return std::nullopt;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(name.data() + 1, name.data() + close, n);
  if (ec != std::errc() || end != name.data() + close) return std::nullopt;
  return std::pair{n, name.substr(close + 1)};
}

class Assigner {
 public:
  Assigner(GoTypes* types, const CallingConvention& cc)
      : types_(types), cc_(cc), float_registers_(cc.int_args.empty() ? 0 : kGoFloatRegisters) {}

  Result<GoArgSlot> slot(const GoType& t) {
    const size_t ints = ints_;
    const int floats = floats_;
    auto fits = assign(t, 0);
    if (!fits) return tl::unexpected(fits.error());
    GoArgSlot s;
    if (!*fits) {  // the whole value goes on the stack; what it took is given back
      ints_ = ints;
      floats_ = floats;
      s.on_stack = true;
      return s;
    }
    s.ints.assign(cc_.int_args.begin() + static_cast<ptrdiff_t>(ints),
                  cc_.int_args.begin() + static_cast<ptrdiff_t>(ints_));
    s.floats = floats_ - floats;
    return s;
  }

 private:
  bool take_ints(size_t n) {
    ints_ += n;
    return ints_ <= cc_.int_args.size();
  }
  bool take_floats(int n) {
    floats_ += n;
    return floats_ <= float_registers_;
  }

  Result<bool> assign(const GoType& t, int depth) {
    if (depth > kMaxNesting)
      return fail("{} nests more than {} structs or arrays deep", t.name, kMaxNesting);
    if (go_kind_is_integer(t.kind) || go_kind_is_pointer_word(t.kind)) return take_ints(1);
    switch (t.kind) {
      case GoKind::String:
      case GoKind::Interface:
        return take_ints(2);
      case GoKind::Slice:
        return take_ints(3);
      case GoKind::Float32:
      case GoKind::Float64:
        return take_floats(1);
      case GoKind::Complex64:
      case GoKind::Complex128:
        return take_floats(2);
      case GoKind::Array: {
        auto a = array_of(t.name);
        if (!a) return fail("the length of the array type {} is not known", t.name);
        if (a->first == 0) return true;
        if (a->first > 1) return false;  // arrays of more than one element go on the stack
        auto elem = declared_go_type(a->second, types_);
        if (!elem) return tl::unexpected(elem.error());
        return assign(*elem, depth + 1);
      }
      case GoKind::Struct: {
        if (!types_) return fail("the fields of {} are not known", t.name);
        auto fields = types_->fields(t.name);
        if (!fields) return tl::unexpected(fields.error());
        for (const GoField& f : *fields) {
          auto fits = assign(f.type, depth + 1);
          if (!fits || !*fits) return fits;
        }
        return true;
      }
      default:  // Invalid; the one-word kinds are taken above
        break;
    }
    return fail("the layout of {} is not known", t.name);
  }

  GoTypes* types_;
  const CallingConvention& cc_;
  const int float_registers_;  // none under the stack ABI
  size_t ints_ = 0;
  int floats_ = 0;
};

}  // namespace

Result<GoType> declared_go_type(std::string_view name, GoTypes* types) {
  if (name.starts_with('*')) return declared(name, GoKind::Pointer, 8, name.substr(1));
  if (name.starts_with("[]")) return declared(name, GoKind::Slice, 24, name.substr(2));
  if (auto a = array_of(name)) {
    auto elem = declared_go_type(a->second, types);
    if (!elem) return elem;
    return declared(name, GoKind::Array, a->first * elem->size, a->second);
  }
  if (name.starts_with("map[")) return declared(name, GoKind::Map, 8);
  if (name.starts_with("chan ") || name.starts_with("chan<- ") || name.starts_with("<-chan "))
    return declared(name, GoKind::Chan, 8);
  if (name.starts_with("func(")) return declared(name, GoKind::Func, 8);
  if (name.starts_with("interface {")) return declared(name, GoKind::Interface, 16);
  if (const GoPredeclared* p = go_predeclared(name)) return declared(p->go_name, p->kind, p->size);
  if (!types) return fail("the layout of the named type {} is not known here", name);
  return types->type(name);
}

Result<std::vector<GoArgSlot>> assign_go_args(std::span<const GoType> params, GoTypes* types,
                                              const CallingConvention& cc) {
  Assigner a(types, cc);
  std::vector<GoArgSlot> out;
  for (const GoType& t : params) {
    auto s = a.slot(t);
    if (!s) return tl::unexpected(s.error());
    out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace uscope
