// A V8 function is read from the target's memory (symbolize/v8_code.h): whatever the bytes, the
// reader returns a function or an error, never reads outside what it is given, never loops, and
// keeps its bounds (a name of at most 1024 bytes). Input: two bytes pick the SharedFunctionInfo's
// offset in the rest, which is the heap, mapped at 0x10000; the layout is node 18's (V8 10.2).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "symbolize/v8_code.h"

namespace {

uscope::V8Layout layout() {
  uscope::V8Constants c = {{"off_fp_context_or_frame_type", -8},
                           {"off_fp_function", -16},
                           {"off_fp_bytecode_offset", -40},
                           {"off_fp_bytecode_array", -32},
                           {"type_BytecodeArray__BYTECODE_ARRAY_TYPE", 195},
                           {"class_HeapObject__map__Map", 0},
                           {"class_Map__instance_type__uint16_t", 12},
                           {"class_JSFunction__shared__SharedFunctionInfo", 24},
                           {"class_BytecodeArray__data__uintptr_t", 56},
                           {"type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", 257},
                           {"class_SharedFunctionInfo__name_or_scope_info__Object", 16},
                           {"class_SharedFunctionInfo__script_or_debug_info__HeapObject", 32},
                           {"class_Script__name__Object", 16},
                           {"class_Script__source__Object", 8},
                           {"class_Script__line_ends__Object", 56},
                           {"class_FixedArrayBase__length__SMI", 8},
                           {"class_FixedArray__data__uintptr_t", 16},
                           {"scopeinfo_idx_first_vars", 3},
                           {"scopeinfo_idx_ncontextlocals", 2},
                           {"type_Script__SCRIPT_TYPE", 170},
                           {"type_ScopeInfo__SCOPE_INFO_TYPE", 256},
                           {"type_FixedArray__FIXED_ARRAY_TYPE", 179},
                           {"FirstNonstringType", 128},
                           {"class_String__length__int32_t", 12},
                           {"class_SeqOneByteString__chars__char", 16},
                           {"class_SeqTwoByteString__chars__char", 16},
                           {"class_ConsString__first__String", 16},
                           {"class_ConsString__second__String", 24},
                           {"class_ThinString__actual__String", 16},
                           {"class_SlicedString__parent__String", 16},
                           {"class_SlicedString__offset__SMI", 24},
                           {"StringRepresentationMask", 7},
                           {"StringEncodingMask", 8},
                           {"OneByteStringTag", 8},
                           {"SeqStringTag", 0},
                           {"ConsStringTag", 1},
                           {"ExternalStringTag", 2},
                           {"SlicedStringTag", 3},
                           {"ThinStringTag", 5},
                           {"HeapObjectTag", 1},
                           {"HeapObjectTagMask", 3},
                           {"SmiTagMask", 1},
                           {"SmiShiftSize", 31}};
  return *uscope::v8_layout(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const uscope::V8Layout l = layout();
  if (size < 2) return 0;
  constexpr uint64_t kBase = 0x10000;
  const uint64_t at = kBase + ((data[0] | data[1] << 8) & ~7u);
  std::span<const uint8_t> heap(data + 2, size - 2);
  uscope::TargetMemory mem = [&](uint64_t addr, std::span<uint8_t> out) {
    if (addr < kBase || addr - kBase > heap.size() || out.size() > heap.size() - (addr - kBase))
      return false;
    std::memcpy(out.data(), heap.data() + (addr - kBase), out.size());
    return true;
  };
  auto f = uscope::read_v8_function(l, mem, at);
  if (f && (f->name.size() > 2048 || f->line < 0)) __builtin_trap();
  auto s = uscope::read_v8_string(l, mem, at + 1, 64);
  if (s && s->size() > 128) __builtin_trap();
  return 0;
}
