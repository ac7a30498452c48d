#pragma once
// Go's predeclared types as a spec's declared parameter list writes them (`main.work(i int, tag
// string)`), with the layout the language gives each, and the name Go itself uses for it (its
// DWARF and runtime type descriptors say uint8 for byte, interface {} for any).
#include <cstdint>
#include <span>
#include <string_view>

#include "discover/go_kind.h"

namespace uscope {

struct GoPredeclared {
  std::string_view name;     // as written: "byte", "any", "unsafe.Pointer"
  std::string_view go_name;  // as Go names it: "uint8", "interface {}"
  GoKind kind;
  uint8_t size;  // bytes
};

std::span<const GoPredeclared> go_predeclared_types();
// nullptr for a name that is not predeclared.
const GoPredeclared* go_predeclared(std::string_view name);

}  // namespace uscope
