// C type names as bcc users write them in casts and declared parameter lists, and the x86-64
// register names of bcc's ctx->REG.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "plan/probe_parse.h"
#include "util/names.h"

namespace uscope::probe_detail {

namespace {

struct NamedType {
  std::string_view name;
  int width;  // 0: void
  bool is_signed;
};

// One-word types: kernel-style, <stdint.h>, and the common POSIX typedefs of x86-64 Linux.
constexpr NamedType kNamedTypes[] = {
    {"u8", 1, false},       {"u16", 2, false},      {"u32", 4, false},       {"u64", 8, false},
    {"s8", 1, true},        {"s16", 2, true},       {"s32", 4, true},        {"s64", 8, true},
    {"__u8", 1, false},     {"__u16", 2, false},    {"__u32", 4, false},     {"__u64", 8, false},
    {"__s8", 1, true},      {"__s16", 2, true},     {"__s32", 4, true},      {"__s64", 8, true},
    {"uint8_t", 1, false},  {"uint16_t", 2, false}, {"uint32_t", 4, false},  {"uint64_t", 8, false},
    {"int8_t", 1, true},    {"int16_t", 2, true},   {"int32_t", 4, true},    {"int64_t", 8, true},
    {"size_t", 8, false},   {"ssize_t", 8, true},   {"pid_t", 4, true},      {"uid_t", 4, false},
    {"gid_t", 4, false},    {"off_t", 8, true},     {"uintptr_t", 8, false}, {"intptr_t", 8, true},
    {"ptrdiff_t", 8, true}, {"bool", 1, false},     {"_Bool", 1, false},     {"void", 0, false},
};

// The words C combines into integer types ("unsigned long long int").
constexpr std::string_view kIntegerWords[] = {"signed", "unsigned", "char", "short", "int", "long"};
constexpr std::string_view kTagWords[] = {"struct", "union", "enum"};
constexpr std::string_view kQualifiers[] = {"const", "volatile"};

template <size_t N>
bool one_of(const std::string_view (&set)[N], std::string_view w) {
  return std::find(std::begin(set), std::end(set), w) != std::end(set);
}

const NamedType* named_type(std::string_view name) {
  for (const NamedType& t : kNamedTypes)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> known_type_names() {
  std::vector<std::string> out = {
      "char",          "short",          "int",          "long",          "long long",
      "unsigned char", "unsigned short", "unsigned int", "unsigned long", "unsigned long long",
      "signed char",   "struct NAME"};
  for (const NamedType& t : kNamedTypes) out.emplace_back(t.name);
  return out;
}

tl::unexpected<Error> unknown_type(std::string_view spelled, int column) {
  auto close = closest_names(spelled, known_type_names(), 3);
  return spec_error(column, fmt::format("unknown type '{}'", printable(spelled)),
                    close.empty() ? "use a C integer type (int, unsigned long, u32, size_t, ...) "
                                    "or struct NAME *"
                                  : fmt::format("did you mean {}?", join(close, " or ")));
}

// "unsigned long int", "long unsigned", "signed" -> canonical spelling and width.
Result<CType> integer_type(const std::vector<std::string>& words, int column) {
  int sign = 0, chars = 0, shorts = 0, ints = 0, longs = 0;  // sign: -1 signed, 1 unsigned
  for (const std::string& w : words) {
    if (w == "signed" || w == "unsigned") {
      int s = w == "signed" ? -1 : 1;
      if (sign != 0)
        return spec_error(column, "a type can be signed or unsigned once",
                          "write e.g. unsigned int");
      sign = s;
    }
    chars += w == "char";
    shorts += w == "short";
    ints += w == "int";
    longs += w == "long";
  }
  std::string spelled = join(words, " ");
  bool valid = chars + shorts <= 1 && ints <= 1 && longs <= 2 && !(chars && (ints || longs)) &&
               !(shorts && longs);
  if (!valid)
    return spec_error(column, fmt::format("'{}' is not a C type", printable(spelled)),
                      "write e.g. int, unsigned long, long long or short");
  CType t;
  std::string base;
  if (chars) {
    t.width = 1;
    base = "char";
  } else if (shorts) {
    t.width = 2;
    base = "short";
  } else if (longs) {
    t.width = 8;
    base = longs == 2 ? "long long" : "long";
  } else {
    t.width = 4;
    base = "int";
  }
  // Plain char is signed on x86-64, as the SysV ABI says.
  t.is_signed = sign <= 0;
  if (sign > 0)
    t.name = "unsigned " + base;
  else if (sign < 0 && chars)
    t.name = "signed char";
  else
    t.name = base;
  return t;
}

}  // namespace

bool is_type_word(std::string_view word) {
  return one_of(kIntegerWords, word) || one_of(kTagWords, word) || one_of(kQualifiers, word) ||
         named_type(word) != nullptr;
}

Result<CType> make_ctype(const std::vector<std::string>& words, int pointers, int column,
                         bool typedef_ok) {
  if (words.empty())
    return spec_error(column, "expected a type", "write e.g. int, char * or struct NAME *");
  CType t;
  if (one_of(kTagWords, words[0])) {
    if (words.size() != 2)
      return spec_error(column, fmt::format("expected one name after '{}'", words[0]),
                        fmt::format("write e.g. {} timespec *", words[0]));
    if (words[0] == "enum") {
      t = CType{.name = "enum " + words[1], .width = 4, .is_signed = false};
    } else {
      t.name = words[0] + " " + words[1];  // its layout comes from DWARF or a header
    }
  } else if (std::all_of(words.begin(), words.end(),
                         [](const std::string& w) { return one_of(kIntegerWords, w); })) {
    auto r = integer_type(words, column);
    if (!r) return r;
    t = *r;
  } else if (words.size() == 1) {
    if (const NamedType* n = named_type(words[0])) {
      t = CType{.name = words[0], .width = n->width, .is_signed = n->is_signed};
    } else if (typedef_ok) {
      t.name = words[0];
    } else {
      return unknown_type(words[0], column);
    }
  } else {
    return unknown_type(join(words, " "), column);
  }
  t.pointers = pointers;
  return t;
}

std::string type_text(const CType& t) {
  return t.pointers ? t.name + " " + std::string(static_cast<size_t>(t.pointers), '*') : t.name;
}

std::optional<std::string> register_of(std::string_view field) {
  // pt_regs spells the legacy registers without their 'r'/'e' (ax, di, ip), r8..r15 as is.
  static constexpr std::array<std::string_view, 9> kShort = {"ax", "bx", "cx", "dx", "si",
                                                             "di", "bp", "sp", "ip"};
  for (std::string_view s : kShort)
    if (field == s || (field.size() == 3 && field[0] == 'r' && field.substr(1) == s))
      return "r" + std::string(s);
  for (int n = 8; n <= 15; ++n)
    if (field == fmt::format("r{}", n)) return std::string(field);
  return std::nullopt;
}

}  // namespace uscope::probe_detail
