// A JVM's VMStructs tables are read from the target's memory, which uscope does not trust: any
// bytes (taken as the memory at kBase, the table symbols and layout globals at its start) must give
// either an error or tables whose lookups hold; the runtime read from them likewise, and a blob
// looked up through its segment maps ends.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "discover/hotspot_runtime.h"
#include "discover/hotspot_vmstructs.h"

namespace {

constexpr uint64_t kBase = 0x10000;

// The layout globals, one word each after the four table symbols.
const char* const kLayout[] = {
    "gHotSpotVMStructEntryTypeNameOffset",     "gHotSpotVMStructEntryFieldNameOffset",
    "gHotSpotVMStructEntryTypeStringOffset",   "gHotSpotVMStructEntryIsStaticOffset",
    "gHotSpotVMStructEntryOffsetOffset",       "gHotSpotVMStructEntryAddressOffset",
    "gHotSpotVMStructEntryArrayStride",        "gHotSpotVMTypeEntryTypeNameOffset",
    "gHotSpotVMTypeEntrySuperclassNameOffset", "gHotSpotVMTypeEntryIsOopTypeOffset",
    "gHotSpotVMTypeEntryIsIntegerTypeOffset",  "gHotSpotVMTypeEntryIsUnsignedOffset",
    "gHotSpotVMTypeEntrySizeOffset",           "gHotSpotVMTypeEntryArrayStride",
    "gHotSpotVMIntConstantEntryNameOffset",    "gHotSpotVMIntConstantEntryValueOffset",
    "gHotSpotVMIntConstantEntryArrayStride",   "gHotSpotVMLongConstantEntryNameOffset",
    "gHotSpotVMLongConstantEntryValueOffset",  "gHotSpotVMLongConstantEntryArrayStride",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> image(data, size);
  uscope::TargetMemory mem = [image](uint64_t addr, std::span<uint8_t> out) {
    if (addr < kBase || addr - kBase > image.size() || out.size() > image.size() - (addr - kBase))
      return false;
    if (!out.empty()) std::memcpy(out.data(), image.data() + (addr - kBase), out.size());
    return true;
  };
  uscope::VmStructsSymbols symbols;
  symbols.structs = kBase;
  symbols.types = kBase + 8;
  symbols.int_constants = kBase + 16;
  symbols.long_constants = kBase + 24;
  uint64_t at = kBase + 32;
  for (const char* name : kLayout) {
    symbols.layout[name] = at;
    at += 8;
  }
  auto vm = uscope::read_vmstructs(symbols, mem);
  if (vm) {
    for (const auto& f : vm->fields()) {
      // The first entry listed for a name is the one looked up, through the same lookup.
      auto off = vm->offset(f.type, f.field);
      auto addr = vm->address(f.type, f.field);
      if (off.has_value() == addr.has_value()) __builtin_trap();
    }
    for (const auto& t : vm->types())
      if (!vm->type_size(t.name)) __builtin_trap();
  }
  auto rt = uscope::read_hotspot_runtime(1, "/jdk/lib/server/libjvm.so", 0, symbols, mem);
  if (!rt) return 0;
  for (const auto& h : rt->proc.heaps)
    if (h.high != 0) (void)uscope::hotspot_blob_at(*rt, mem, h.low + (h.high - h.low) / 2);
  return 0;
}
