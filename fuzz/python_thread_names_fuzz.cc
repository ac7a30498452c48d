// threading's thread names are read from a target's memory (sys.modules -> threading -> _active
// -> each Thread's _name): any bytes there must give names or an error, never a crash or an
// unbounded read. The input is the memory from 0x10000 on, _PyRuntime at its start, laid out by
// the 3.11 row; everything else is unmapped.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "discover/python_offsets.h"
#include "symbolize/python_thread_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint64_t kBase = 0x10000;
  static const auto layout = uscope::python_layout_for({3, 11, 2});
  if (!layout) __builtin_trap();
  uscope::PythonRuntime rt;
  rt.pid = 1;
  rt.object.version = {3, 11, 2};
  rt.layout = *layout;
  rt.proc.off = layout->bpf;
  rt.proc.runtime = kBase;
  uscope::TargetMemory mem = [&](uint64_t addr, std::span<uint8_t> out) {
    if (addr < kBase || addr - kBase > size || out.size() > size - (addr - kBase)) return false;
    std::memcpy(out.data(), data + (addr - kBase), out.size());
    return true;
  };
  auto names = uscope::python_thread_names(rt, mem);
  if (names && names->size() > size) __builtin_trap();  // each name comes from its own entry
  return 0;
}
