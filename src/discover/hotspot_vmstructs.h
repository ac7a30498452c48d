#pragma once
// A HotSpot JVM's description of itself: the tables libjvm.so exports for the Serviceability
// Agent (gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMIntConstants, gHotSpotVMLongConstants, and
// the gHotSpotVM*Entry*Offset/Stride globals that say how their entries are laid out). Every
// layout uscope reads in a JVM (code heaps, code blobs, methods, threads) comes from here, so no
// per-JDK table is kept: a field the JVM does not list is an error that names it.
//
// The tables are arrays of structs in the process's memory, ended by an entry whose name is null;
// their strings are pointers to C strings. They are read once per process at attach.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "discover/python_runtime.h"  // TargetMemory
#include "util/result.h"

namespace uscope {

struct VmStructField {
  std::string type;         // "CodeBlob"
  std::string field;        // "_frame_size"
  std::string type_string;  // "int", "address", "CodeHeap*" ("" when the JVM gives none)
  bool is_static = false;
  uint64_t offset = 0;   // of a non-static field in its type
  uint64_t address = 0;  // of a static field, in the process
};

struct VmStructType {
  std::string name;        // "HeapBlock"
  std::string superclass;  // "" when none
  uint64_t size = 0;
  bool is_oop = false, is_integer = false, is_unsigned = false;
};

class HotspotVmStructs {
 public:
  HotspotVmStructs() = default;
  // From parsed entries (tests build one by hand).
  HotspotVmStructs(std::vector<VmStructField> fields, std::vector<VmStructType> types,
                   std::map<std::string, int64_t> int_constants,
                   std::map<std::string, int64_t> long_constants);

  // Offset of a non-static field; nullopt when the JVM does not list it (or lists it static). A
  // field is listed under the class that declares it, so a type's superclasses are looked in too
  // (JavaThread's _osthread is Thread's in JDK 17).
  std::optional<uint64_t> offset(std::string_view type, std::string_view field) const;
  // Address of a static field; nullopt when not listed (or not static).
  std::optional<uint64_t> address(std::string_view type, std::string_view field) const;
  std::optional<uint64_t> type_size(std::string_view type) const;
  std::optional<int64_t> int_constant(std::string_view name) const;
  std::optional<int64_t> long_constant(std::string_view name) const;
  // The same, failing with "libjvm.so lists no CodeBlob::_frame_size" (what was looked for).
  Result<uint64_t> need_offset(std::string_view type, std::string_view field) const;
  Result<uint64_t> need_address(std::string_view type, std::string_view field) const;
  Result<uint64_t> need_type_size(std::string_view type) const;
  Result<int64_t> need_int_constant(std::string_view name) const;

  const std::vector<VmStructField>& fields() const { return fields_; }
  const std::vector<VmStructType>& types() const { return types_; }
  const std::map<std::string, int64_t>& int_constants() const { return ints_; }
  const std::map<std::string, int64_t>& long_constants() const { return longs_; }

 private:
  std::vector<VmStructField> fields_;
  std::vector<VmStructType> types_;
  std::map<std::string, int64_t> ints_, longs_;
  std::map<std::pair<std::string, std::string>, size_t, std::less<>> by_name_;
  std::map<std::string, size_t, std::less<>> types_by_name_;

  const VmStructField* find_field(std::string_view type, std::string_view field) const;
  const VmStructType* find_type(std::string_view type) const;
};

// The addresses of the exported gHotSpotVM* globals in the process (libjvm.so's .dynsym plus its
// load bias); 0 for one not found.
struct VmStructsSymbols {
  uint64_t structs = 0, types = 0, int_constants = 0, long_constants = 0;
  // The layout globals: gHotSpotVMStructEntryTypeNameOffset, ...ArrayStride, and so on.
  std::map<std::string, uint64_t, std::less<>> layout;
};

// Reads the four tables from the process (every pointer followed through `mem`). Bounded: at most
// 100,000 entries per table and 1 KiB per string; an entry array with no end, a stride or offset
// that makes no sense, or an unreadable string is an error naming the table and entry index. A JVM
// that has not filled its layout globals yet (early in its start) fails with errnum EAGAIN.
Result<HotspotVmStructs> read_vmstructs(const VmStructsSymbols& symbols, const TargetMemory& mem);

}  // namespace uscope
