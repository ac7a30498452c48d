// _Py_DebugOffsets is read from the start of a target's _PyRuntime: any bytes must give either an
// error or a layout whose frame fields fit in the bytes the walker reads per frame.
#include <cstddef>
#include <cstdint>
#include <span>

#include "discover/python_offsets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  (void)uscope::python_debug_offsets_version(bytes);
  auto layout = uscope::parse_python_debug_offsets(bytes);
  if (!layout) return 0;
  const auto& b = layout->bpf;
  if (b.frame_model != PY_FRAMES_OWNER) __builtin_trap();
  if (b.frame_read_size > 512) __builtin_trap();
  return 0;
}
