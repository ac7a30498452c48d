#pragma once
// reflect.Kind, as the kind byte of a Go runtime type descriptor holds it (low 5 bits). Its own
// header so that the spec parser can name Go's predeclared types' kinds without the readers.
#include <cstdint>

namespace uscope {

enum class GoKind : uint8_t {
  Invalid = 0,
  Bool,
  Int,
  Int8,
  Int16,
  Int32,
  Int64,
  Uint,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Uintptr,
  Float32,
  Float64,
  Complex64,
  Complex128,
  Array,
  Chan,
  Func,
  Interface,
  Map,
  Pointer,
  Slice,
  String,
  Struct,
  UnsafePointer,
};
const char* go_kind_name(GoKind kind);  // "string", "ptr", ... (discover/go_types.cc)

// Integers and bool: a value of one integer register, read as a number.
inline bool go_kind_is_integer(GoKind k) {
  return (k >= GoKind::Bool && k <= GoKind::Uintptr);
}

// A value of one machine word that is not a number: pointers, and maps, chans and funcs (each a
// pointer to the runtime's own struct).
inline bool go_kind_is_pointer_word(GoKind k) {
  return k == GoKind::Pointer || k == GoKind::UnsafePointer || k == GoKind::Map ||
         k == GoKind::Chan || k == GoKind::Func;
}

inline bool go_kind_is_signed(GoKind k) {
  return k == GoKind::Int || k == GoKind::Int8 || k == GoKind::Int16 || k == GoKind::Int32 ||
         k == GoKind::Int64;
}

}  // namespace uscope
