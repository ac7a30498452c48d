#pragma once
// A probe's printf-style format ("i=%d tag=%s") parsed once, then rendered per event straight into
// an output buffer with C printf's semantics for the conversions the spec parser accepts (flags
// - + space # 0, width, precision, hh h l ll z, d i u x X p c s), and bcc's %U and %K: the
// symbol the collecting side found for the address (DecodedValue::symbol). Hand-written instead of
// snprintf, which calls strlen/memcpy inside libc: an event must not trap on a user's probe of
// those.
#include <span>
#include <string>
#include <vector>

#include "model/decoded_event.h"
#include "plan/probe_spec.h"
#include "util/output_buffer.h"

namespace uscope {

class MessageFormat {
 public:
  explicit MessageFormat(const ProbeSpec& spec);
  // Missing values render as "?"; strings are made printable (\xNN) and a truncated one ends
  // with "…".
  void render(std::span<const DecodedValue> values, OutputBuffer& out) const;

 private:
  struct Piece {
    std::string literal;  // text before the conversion, "%%" already turned into "%"
    bool conversion = false;
    char conv = 'd';
    unsigned bits = 32;  // the length modifier's width: 8 hh, 16 h, 32 none, 64 l ll z
    bool left = false, plus = false, space = false, alt = false, zero = false;
    size_t width = 0;
    int precision = -1;
  };
  void render_number(const Piece& p, uint64_t v, OutputBuffer& out) const;
  std::vector<Piece> pieces_;
};

}  // namespace uscope
