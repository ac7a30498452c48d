#pragma once
// A JVM's memory for tests of the VMStructs reader and the HotSpot runtime: the four tables laid
// out as the gHotSpotVM*Entry*Offset/Stride globals say (the x86_64 layout of JDK 17 unless a test
// changes it), their strings, and whatever blocks a test adds.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "discover/hotspot_vmstructs.h"
#include "python_fake_target.h"

namespace uscope::test {

struct FakeJvm {
  FakePythonTarget mem;  // blocks of bytes at addresses
  VmStructsSymbols symbols;

  // Entry layouts: member -> offset, and the stride.
  std::map<std::string, uint64_t> struct_layout{{"TypeName", 0},    {"FieldName", 8},
                                                {"TypeString", 16}, {"IsStatic", 24},
                                                {"Offset", 32},     {"Address", 40}};
  uint64_t struct_stride = 48;
  std::map<std::string, uint64_t> type_layout{{"TypeName", 0},    {"SuperclassName", 8},
                                              {"IsOopType", 16},  {"IsIntegerType", 20},
                                              {"IsUnsigned", 24}, {"Size", 32}};
  uint64_t type_stride = 40;

  std::vector<VmStructField> fields;
  std::vector<VmStructType> types;
  std::vector<std::pair<std::string, int64_t>> ints, longs;

  void field(std::string type, std::string name, uint64_t offset, std::string type_string = "") {
    fields.push_back({std::move(type), std::move(name), std::move(type_string), false, offset, 0});
  }
  void static_field(std::string type, std::string name, uint64_t address) {
    fields.push_back({std::move(type), std::move(name), "", true, 0, address});
  }
  void type(std::string name, uint64_t size, std::string super = "") {
    types.push_back({std::move(name), std::move(super), size});
  }

  // Writes the tables at `base` (strings after them) and fills `symbols`.
  void write(uint64_t base = 0x10000000) {
    uint64_t strings = base + 0x800000;
    mem.zeros(strings, 0x100000);
    uint64_t next_string = strings;
    std::map<std::string, uint64_t> interned;
    auto str = [&](const std::string& s) -> uint64_t {
      if (s.empty()) return 0;
      if (auto it = interned.find(s); it != interned.end()) return it->second;
      uint64_t at = next_string;
      for (size_t i = 0; i < s.size(); ++i) mem.word(at + i, static_cast<uint8_t>(s[i]), 1);
      next_string += s.size() + 1;
      return interned[s] = at;
    };
    uint64_t globals = base;  // the exported globals
    mem.zeros(globals, 0x1000);
    uint64_t next_global = globals;
    auto global = [&](const std::string& name, uint64_t value) {
      mem.word(next_global, value);
      symbols.layout[name] = next_global;
      next_global += 8;
    };
    // A table: its entries and the end entry (zeros), and the global holding its address.
    auto table = [&](uint64_t& symbol_addr, uint64_t at, uint64_t stride, size_t n) {
      mem.zeros(at, stride * (n + 1));
      symbol_addr = next_global;
      mem.word(next_global, at);
      next_global += 8;
    };

    uint64_t at = base + 0x1000;
    table(symbols.structs, at, struct_stride, fields.size());
    for (const auto& [m, off] : struct_layout) global("gHotSpotVMStructEntry" + m + "Offset", off);
    global("gHotSpotVMStructEntryArrayStride", struct_stride);
    for (size_t i = 0; i < fields.size(); ++i) {
      uint64_t e = at + i * struct_stride;
      const auto& f = fields[i];
      mem.word(e + struct_layout["TypeName"], str(f.type));
      mem.word(e + struct_layout["FieldName"], str(f.field));
      mem.word(e + struct_layout["TypeString"], str(f.type_string));
      mem.word(e + struct_layout["IsStatic"], f.is_static, 4);
      mem.word(e + struct_layout["Offset"], f.offset);
      mem.word(e + struct_layout["Address"], f.address);
    }
    at += 0x100000;
    table(symbols.types, at, type_stride, types.size());
    for (const auto& [m, off] : type_layout) global("gHotSpotVMTypeEntry" + m + "Offset", off);
    global("gHotSpotVMTypeEntryArrayStride", type_stride);
    for (size_t i = 0; i < types.size(); ++i) {
      uint64_t e = at + i * type_stride;
      mem.word(e + type_layout["TypeName"], str(types[i].name));
      mem.word(e + type_layout["SuperclassName"], str(types[i].superclass));
      mem.word(e + type_layout["Size"], types[i].size);
    }
    at += 0x100000;
    auto constants = [&](const char* entry, uint64_t& symbol, const auto& values, int width) {
      table(symbol, at, 16, values.size());
      global(fmt::format("gHotSpotVM{}EntryNameOffset", entry), 0);
      global(fmt::format("gHotSpotVM{}EntryValueOffset", entry), 8);
      global(fmt::format("gHotSpotVM{}EntryArrayStride", entry), 16);
      for (size_t i = 0; i < values.size(); ++i) {
        mem.word(at + 16 * i, str(values[i].first));
        mem.word(at + 16 * i + 8, static_cast<uint64_t>(values[i].second), width);
      }
      at += 0x100000;
    };
    constants("IntConstant", symbols.int_constants, ints, 4);
    constants("LongConstant", symbols.long_constants, longs, 8);
  }
};

}  // namespace uscope::test
