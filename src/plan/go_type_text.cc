#include "plan/go_type_text.h"

namespace uscope {

namespace {

constexpr GoPredeclared kPredeclared[] = {
    {"bool", "bool", GoKind::Bool, 1},
    {"int", "int", GoKind::Int, 8},
    {"int8", "int8", GoKind::Int8, 1},
    {"int16", "int16", GoKind::Int16, 2},
    {"int32", "int32", GoKind::Int32, 4},
    {"int64", "int64", GoKind::Int64, 8},
    {"uint", "uint", GoKind::Uint, 8},
    {"uint8", "uint8", GoKind::Uint8, 1},
    {"uint16", "uint16", GoKind::Uint16, 2},
    {"uint32", "uint32", GoKind::Uint32, 4},
    {"uint64", "uint64", GoKind::Uint64, 8},
    {"uintptr", "uintptr", GoKind::Uintptr, 8},
    {"byte", "uint8", GoKind::Uint8, 1},
    {"rune", "int32", GoKind::Int32, 4},
    {"float32", "float32", GoKind::Float32, 4},
    {"float64", "float64", GoKind::Float64, 8},
    {"complex64", "complex64", GoKind::Complex64, 8},
    {"complex128", "complex128", GoKind::Complex128, 16},
    {"string", "string", GoKind::String, 16},
    {"error", "error", GoKind::Interface, 16},
    {"any", "interface {}", GoKind::Interface, 16},
    {"unsafe.Pointer", "unsafe.Pointer", GoKind::UnsafePointer, 8},
};

}  // namespace

std::span<const GoPredeclared> go_predeclared_types() {
  return kPredeclared;
}

const GoPredeclared* go_predeclared(std::string_view name) {
  for (const GoPredeclared& p : kPredeclared)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace uscope
