// The argument string of a SystemTap SDT probe: one `N@OPERAND` per argument, where the operand is
// whatever the compiler substituted for an asm "nor" constraint, in the assembler's own syntax
// (AT&T on x86_64, GNU as on aarch64). Written by hand rather than with sscanf patterns, as libbpf
// does, so that each error names its column and untrusted notes cannot steer us off the string.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/usdt.h"

namespace uscope {
namespace {

// Long enough for any real spec (libjvm's longest is ~120 characters); a hostile one is cut so the
// error stays one readable line.
constexpr size_t kMaxQuoted = 200;

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_alnum(char c) {
  return is_alpha(c) || is_digit(c);
}
// '.' because gcc names function-local statics "counter.0".
bool is_ident_start(char c) {
  return is_alpha(c) || c == '_' || c == '.';
}
bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
char to_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// An unknown register's name comes from the note: cut so a hostile one cannot bloat the error.
std::string clipped(std::string_view name) {
  return name.size() > 16 ? std::string(name.substr(0, 16)) + "..." : std::string(name);
}

std::string lowered(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = to_lower(c);
  return out;
}

// Parses a small unsigned decimal (register numbers, sizes, scales); nullopt if not all digits or
// too large to matter.
std::optional<int> small_number(std::string_view s) {
  if (s.empty() || s.size() > 3) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (!is_digit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// A register name with its number appended. Not `"x" + std::to_string(n)`: that inserts at the
// front of the temporary, where g++ 12 at -O3 reports a false -Wrestrict overlap (a g++ 12 bug);
// appending into a fresh string has no overlapping copy to misjudge.
std::string numbered(std::string_view prefix, int n) {
  std::string name(prefix);
  name += std::to_string(n);
  return name;
}

struct RegInfo {
  std::string canonical;
  int width = 8;        // bytes the name itself denotes; the size of a bare (no `N@`) argument
  bool general = true;  // usable as a base or index register
};

std::optional<RegInfo> x86_register(std::string_view raw) {
  const std::string name = lowered(raw);
  // Legacy registers: 64-bit name, then its 32-, 16- and 8-bit aliases. The high-byte registers
  // (%ah...) are left out on purpose: canonicalising them to rax would lose the shift.
  static constexpr std::array<std::array<std::string_view, 4>, 9> kLegacy = {{
      {"rax", "eax", "ax", "al"},
      {"rbx", "ebx", "bx", "bl"},
      {"rcx", "ecx", "cx", "cl"},
      {"rdx", "edx", "dx", "dl"},
      {"rsi", "esi", "si", "sil"},
      {"rdi", "edi", "di", "dil"},
      {"rbp", "ebp", "bp", "bpl"},
      {"rsp", "esp", "sp", "spl"},
      {"rip", "eip", "ip", ""},
  }};
  static constexpr std::array<int, 4> kWidths = {8, 4, 2, 1};
  for (const auto& row : kLegacy) {
    for (size_t i = 0; i < row.size(); ++i) {
      if (!row[i].empty() && name == row[i]) return RegInfo{std::string(row[0]), kWidths[i], true};
    }
  }
  // r8..r15 with the d/w/b suffixes (and GAS's l as another spelling of b).
  if (name.size() >= 2 && name[0] == 'r') {
    size_t digits_end = 1;
    while (digits_end < name.size() && is_digit(name[digits_end])) ++digits_end;
    auto n = small_number(std::string_view(name).substr(1, digits_end - 1));
    const std::string_view suffix = std::string_view(name).substr(digits_end);
    if (n && *n >= 8 && *n <= 15) {
      const std::string canonical = numbered("r", *n);
      if (suffix.empty()) return RegInfo{canonical, 8, true};
      if (suffix == "d") return RegInfo{canonical, 4, true};
      if (suffix == "w") return RegInfo{canonical, 2, true};
      if (suffix == "b" || suffix == "l") return RegInfo{canonical, 1, true};
    }
  }
  // sys/sdt.h marks float arguments "8f@"; gcc then names an SSE register.
  if (name.size() > 3 && name.starts_with("xmm")) {
    auto n = small_number(std::string_view(name).substr(3));
    if (n && *n <= 15) return RegInfo{numbered("xmm", *n), 8, false};
  }
  return std::nullopt;
}

// aarch64: xN/wN, sp/wsp, the fp/lr aliases, and the d/s views of the vector registers. xzr/wzr
// come back with an empty canonical name: they read as the constant 0.
std::optional<RegInfo> a64_register(std::string_view raw) {
  const std::string name = lowered(raw);
  if (name == "sp") return RegInfo{"sp", 8, true};
  if (name == "wsp") return RegInfo{"sp", 4, true};
  if (name == "fp") return RegInfo{"x29", 8, true};
  if (name == "lr") return RegInfo{"x30", 8, true};
  if (name == "xzr") return RegInfo{"", 8, false};
  if (name == "wzr") return RegInfo{"", 4, false};
  if (name.size() < 2) return std::nullopt;
  auto n = small_number(std::string_view(name).substr(1));
  if (!n) return std::nullopt;
  switch (name[0]) {
    case 'x':
      if (*n <= 30) return RegInfo{numbered("x", *n), 8, true};
      break;
    case 'w':
      if (*n <= 30) return RegInfo{numbered("x", *n), 4, true};
      break;
    case 'd':
      if (*n <= 31) return RegInfo{numbered("v", *n), 8, false};
      break;
    case 's':
      if (*n <= 31) return RegInfo{numbered("v", *n), 4, false};
      break;
    default:
      break;
  }
  return std::nullopt;
}

// A displacement as GNU as writes it: a number, a symbol, or a symbol plus/minus a number.
struct Disp {
  bool present = false;
  std::string symbol;
  int64_t offset = 0;
};

class Parser {
 public:
  Parser(std::string_view spec, UsdtArch arch) : s_(spec), arch_(arch) {}

  Result<std::vector<UsdtArg>> run() {
    std::vector<UsdtArg> args;
    skip_spaces();
    while (!at_end()) {
      const size_t start = pos_;
      UsdtArg arg;
      if (auto r = parse_arg(arg); !r) return tl::unexpected(r.error());
      if (!at_end() && !is_space(peek())) {
        return error(pos_, "expected a space or the end of the spec after the argument");
      }
      arg.text = std::string(s_.substr(start, pos_ - start));
      args.push_back(std::move(arg));
      skip_spaces();
    }
    return args;
  }

 private:
  bool at_end() const { return pos_ >= s_.size(); }
  // '\0' past the end; callers never treat it as a terminator, only as "not what I wanted".
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  void skip_spaces() {
    while (!at_end() && is_space(peek())) ++pos_;
  }
  // Spaces inside brackets: GNU as writes "[sp, 16]" and tolerates "( %rax , %rbx )".
  void skip_blanks() {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  }

  tl::unexpected<Error> error(size_t pos, std::string_view what) const {
    std::string shown(s_.substr(0, kMaxQuoted));
    for (char& c : shown) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
    }
    if (s_.size() > kMaxQuoted) shown += "...";
    return fail("usdt arg spec '{}' column {}: {}", shown, pos + 1, what);
  }

  // [+-] then decimal or 0x hex. Positive values up to 2^64-1 wrap into int64 (an all-ones
  // constant is legitimate); negative magnitudes stop at 2^63.
  Result<int64_t> parse_number() {
    const size_t start = pos_;
    bool negative = false;
    if (peek() == '+' || peek() == '-') {
      negative = peek() == '-';
      ++pos_;
    }
    uint64_t base = 10;
    if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
      base = 16;
      pos_ += 2;
    }
    const size_t digits_start = pos_;
    uint64_t value = 0;
    while (!at_end()) {
      const char c = to_lower(peek());
      uint64_t d;
      if (is_digit(c)) {
        d = static_cast<uint64_t>(c - '0');
      } else if (base == 16 && c >= 'a' && c <= 'f') {
        d = static_cast<uint64_t>(c - 'a' + 10);
      } else {
        break;
      }
      if (value > (UINT64_MAX - d) / base) return error(start, "number does not fit in 64 bits");
      value = value * base + d;
      ++pos_;
    }
    if (pos_ == digits_start) {
      return error(pos_, base == 16 ? "expected hex digits after '0x'" : "expected a number");
    }
    if (negative) {
      if (value > (uint64_t{1} << 63)) return error(start, "number does not fit in 64 bits");
      return static_cast<int64_t>(~value + 1);
    }
    return static_cast<int64_t>(value);
  }

  std::string parse_ident() {
    const size_t start = pos_;
    while (!at_end() && is_ident_char(peek())) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  std::string_view scan_alnum() {
    const size_t start = pos_;
    while (!at_end() && is_alnum(peek())) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  Result<Disp> parse_disp() {
    Disp d;
    const char c = peek();
    if (is_digit(c) || c == '-' || c == '+') {
      auto n = parse_number();
      if (!n) return tl::unexpected(n.error());
      d.present = true;
      d.offset = *n;
      if (peek() == '+' && is_ident_start(peek(1))) {
        ++pos_;
        d.symbol = parse_ident();
      }
    } else if (is_ident_start(c)) {
      d.present = true;
      d.symbol = parse_ident();
      if ((peek() == '+' || peek() == '-') && is_digit(peek(1))) {
        auto n = parse_number();
        if (!n) return tl::unexpected(n.error());
        d.offset = *n;
      }
    }
    return d;
  }

  // `N@` or `Nf@`, when present; a bare operand keeps size 0 for the operand parser to fill.
  Result<void> parse_size(UsdtArg& arg) {
    size_t i = pos_;
    if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) ++i;
    const size_t digits = i;
    while (i < s_.size() && is_digit(s_[i]) && i - digits < 4) ++i;
    if (i == digits) return {};
    size_t at = i;
    const bool is_float = at < s_.size() && s_[at] == 'f';
    if (is_float) ++at;
    if (at >= s_.size() || s_[at] != '@') return {};
    const auto n = small_number(s_.substr(digits, i - digits));
    if (!n || (*n != 1 && *n != 2 && *n != 4 && *n != 8)) {
      return error(pos_, "expected an argument size of 1, 2, 4 or 8 (negative for signed)");
    }
    arg.size = *n;
    arg.is_signed = s_[pos_] == '-';
    arg.is_float = is_float;
    pos_ = at + 1;
    if (at_end() || is_space(peek())) return error(pos_, "expected an operand after '@'");
    return {};
  }

  Result<void> parse_arg(UsdtArg& arg) {
    arg.size = 0;
    if (auto r = parse_size(arg); !r) return r;
    const bool bare = arg.size == 0;
    int implied_width = 8;
    auto r =
        arch_ == UsdtArch::X86_64 ? parse_x86(arg, implied_width) : parse_a64(arg, implied_width);
    if (!r) return r;
    // Without `N@` (pre-2010 notes) the value is unsigned and as wide as a named register, else a
    // machine word: what bcc and SystemTap assume.
    if (bare) arg.size = implied_width;
    return {};
  }

  // x86 register after '%'; `pos_` is at the '%'.
  Result<RegInfo> x86_reg(bool need_general) {
    const size_t start = pos_;
    ++pos_;
    const std::string_view name = scan_alnum();
    if (name.empty()) return error(start + 1, "expected a register name after '%'");
    if (peek() == ':') return error(pos_, "segment-prefixed operands are not supported");
    auto reg = x86_register(name);
    if (!reg) return error(start, fmt::format("unknown x86_64 register '%{}'", clipped(name)));
    if (need_general && !reg->general) {
      return error(start, fmt::format("'%{}' cannot address memory", name));
    }
    return *reg;
  }

  Result<void> parse_x86(UsdtArg& arg, int& implied_width) {
    if (peek() == '$') {
      ++pos_;
      arg.kind = UsdtArg::Kind::Constant;
      const size_t at = pos_;
      auto d = parse_disp();
      if (!d) return tl::unexpected(d.error());
      if (!d->present) return error(at, "expected a number or symbol after '$'");
      arg.constant = d->offset;
      arg.symbol = std::move(d->symbol);
      return {};
    }
    if (peek() == '%') {
      auto reg = x86_reg(false);
      if (!reg) return tl::unexpected(reg.error());
      arg.kind = UsdtArg::Kind::Register;
      arg.base_reg = reg->canonical;
      implied_width = reg->width;
      return {};
    }
    const size_t disp_at = pos_;
    auto d = parse_disp();
    if (!d) return tl::unexpected(d.error());
    arg.offset = d->offset;
    arg.symbol = std::move(d->symbol);
    if (peek() != '(') {
      if (!d->present) return error(disp_at, "expected '$', '%', a displacement or '('");
      // AT&T: a displacement without a register is an absolute memory address.
      arg.kind = UsdtArg::Kind::Absolute;
      return {};
    }
    ++pos_;
    skip_blanks();
    if (peek() == '%') {
      auto base = x86_reg(true);
      if (!base) return tl::unexpected(base.error());
      arg.base_reg = base->canonical;
      skip_blanks();
    } else if (peek() != ',') {
      return error(pos_, "expected a base register or ','");
    }
    if (peek() == ',') {
      ++pos_;
      skip_blanks();
      const size_t index_at = pos_;
      if (peek() != '%') return error(pos_, "expected an index register");
      auto index = x86_reg(true);
      if (!index) return tl::unexpected(index.error());
      if (index->canonical == "rip" || index->canonical == "rsp") {
        return error(index_at, fmt::format("%{} cannot be an index register", index->canonical));
      }
      if (arg.base_reg == "rip") return error(index_at, "a %rip-relative operand takes no index");
      arg.index_reg = index->canonical;
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
        skip_blanks();
        const size_t scale_at = pos_;
        while (!at_end() && is_digit(peek()) && pos_ - scale_at < 4) ++pos_;
        const auto scale = small_number(s_.substr(scale_at, pos_ - scale_at));
        if (!scale || (*scale != 1 && *scale != 2 && *scale != 4 && *scale != 8)) {
          return error(scale_at, "expected a scale of 1, 2, 4 or 8");
        }
        arg.scale = *scale;
        skip_blanks();
      }
    }
    if (peek() != ')') return error(pos_, "expected ')'");
    ++pos_;
    if (!arg.index_reg.empty()) {
      arg.kind = UsdtArg::Kind::Indexed;
    } else if (arg.base_reg == "rip") {
      arg.kind = UsdtArg::Kind::Absolute;
    } else {
      arg.kind = UsdtArg::Kind::Memory;
    }
    return {};
  }

  Result<RegInfo> a64_reg() {
    const size_t start = pos_;
    const std::string_view name = scan_alnum();
    auto reg = a64_register(name);
    if (!reg) return error(start, fmt::format("unknown aarch64 register '{}'", clipped(name)));
    return *reg;
  }

  Result<void> parse_a64(UsdtArg& arg, int& implied_width) {
    if (peek() == '[') {
      ++pos_;
      skip_blanks();
      const size_t base_at = pos_;
      if (!is_alpha(peek())) return error(pos_, "expected a base register");
      auto base = a64_reg();
      if (!base) return tl::unexpected(base.error());
      if (!base->general || base->width != 8) {
        return error(base_at, "expected a 64-bit base register (xN or sp)");
      }
      arg.kind = UsdtArg::Kind::Memory;
      arg.base_reg = base->canonical;
      skip_blanks();
      if (peek() == ',') {
        ++pos_;
        skip_blanks();
        if (peek() == '#') ++pos_;
        const char c = peek();
        if (!is_digit(c) && c != '-' && c != '+') return error(pos_, "expected an offset");
        auto off = parse_number();
        if (!off) return tl::unexpected(off.error());
        arg.offset = *off;
        skip_blanks();
      }
      if (peek() != ']') return error(pos_, "expected ']'");
      ++pos_;
      return {};
    }
    if (is_alpha(peek())) {
      auto reg = a64_reg();
      if (!reg) return tl::unexpected(reg.error());
      implied_width = reg->width;
      if (reg->canonical.empty()) {
        arg.kind = UsdtArg::Kind::Constant;
        arg.constant = 0;
        return {};
      }
      arg.kind = UsdtArg::Kind::Register;
      arg.base_reg = reg->canonical;
      return {};
    }
    if (peek() == '#') ++pos_;
    const char c = peek();
    if (!is_digit(c) && c != '-' && c != '+') {
      return error(pos_, "expected a register, '[' or a constant");
    }
    auto n = parse_number();
    if (!n) return tl::unexpected(n.error());
    arg.kind = UsdtArg::Kind::Constant;
    arg.constant = *n;
    return {};
  }

  std::string_view s_;
  UsdtArch arch_;
  size_t pos_ = 0;
};

}  // namespace

Result<std::vector<UsdtArg>> parse_usdt_args(std::string_view spec, UsdtArch arch) {
  return Parser(spec, arch).run();
}

}  // namespace uscope
