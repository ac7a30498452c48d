// Interim: the lookups of discover/hotspot_vmstructs.h, for symbolize/hotspot_code.cc to link
// until discover/hotspot_vmstructs.cc (the reader of the JVM's tables) lands; CMake drops this
// file as soon as that one exists. read_vmstructs() is not here.
#include "discover/hotspot_vmstructs.h"

namespace uscope {

HotspotVmStructs::HotspotVmStructs(std::vector<VmStructField> fields,
                                   std::vector<VmStructType> types,
                                   std::map<std::string, int64_t> int_constants,
                                   std::map<std::string, int64_t> long_constants)
    : fields_(std::move(fields)),
      types_(std::move(types)),
      ints_(std::move(int_constants)),
      longs_(std::move(long_constants)) {
  for (size_t i = 0; i < fields_.size(); ++i)
    by_name_.emplace(std::pair{fields_[i].type, fields_[i].field}, i);
}

std::optional<uint64_t> HotspotVmStructs::offset(std::string_view type,
                                                 std::string_view field) const {
  auto it = by_name_.find(std::pair{std::string(type), std::string(field)});
  if (it == by_name_.end() || fields_[it->second].is_static) return std::nullopt;
  return fields_[it->second].offset;
}

std::optional<uint64_t> HotspotVmStructs::address(std::string_view type,
                                                  std::string_view field) const {
  auto it = by_name_.find(std::pair{std::string(type), std::string(field)});
  if (it == by_name_.end() || !fields_[it->second].is_static) return std::nullopt;
  return fields_[it->second].address;
}

std::optional<uint64_t> HotspotVmStructs::type_size(std::string_view type) const {
  for (const VmStructType& t : types_)
    if (t.name == type) return t.size;
  return std::nullopt;
}

std::optional<int64_t> HotspotVmStructs::int_constant(std::string_view name) const {
  auto it = ints_.find(std::string(name));
  if (it == ints_.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> HotspotVmStructs::long_constant(std::string_view name) const {
  auto it = longs_.find(std::string(name));
  if (it == longs_.end()) return std::nullopt;
  return it->second;
}

Result<uint64_t> HotspotVmStructs::need_offset(std::string_view type,
                                               std::string_view field) const {
  if (auto o = offset(type, field)) return *o;
  return fail("libjvm.so lists no {}::{}", type, field);
}

Result<uint64_t> HotspotVmStructs::need_address(std::string_view type,
                                                std::string_view field) const {
  if (auto a = address(type, field)) return *a;
  return fail("libjvm.so lists no static {}::{}", type, field);
}

Result<uint64_t> HotspotVmStructs::need_type_size(std::string_view type) const {
  if (auto s = type_size(type)) return *s;
  return fail("libjvm.so lists no type {}", type);
}

Result<int64_t> HotspotVmStructs::need_int_constant(std::string_view name) const {
  if (auto c = int_constant(name)) return *c;
  return fail("libjvm.so lists no int constant {}", name);
}

}  // namespace uscope
