// An nmethod's debug info (PcDescs and the scopes data they point into) is read from a JVM's
// memory, so its decoders must survive any bytes: a chain is bounded, every method in it is one
// of the metadata's, a failure is an error, never a crash or a loop. Input: one byte picks the
// UNSIGNED5 flavour, one the number of metadata entries (0-15), two bytes the decode offset
// (little-endian, signed), then the PcDesc section's first 64 bytes, then the scopes data.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "symbolize/hotspot_streams.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4 + 64) return 0;
  const uint8_t excluded = data[0] & 1;
  std::vector<uint64_t> metadata(data[1] & 15);
  for (size_t i = 0; i < metadata.size(); ++i) metadata[i] = 0x1000 + 8 * i;
  int16_t offset = 0;
  std::memcpy(&offset, data + 2, 2);
  auto descs = uscope::parse_hotspot_pc_descs({data + 4, 64}, 16, 0, 4);
  if (descs.size() != 4) __builtin_trap();
  std::span<const uint8_t> scopes(data + 4 + 64, size - 4 - 64);
  std::vector<int32_t> starts = {offset};
  for (int32_t pc : {-1, 0, 0x10, 0x7fffffff})
    for (bool exact : {true, false})
      if (const auto* d = uscope::find_hotspot_pc_desc(descs, pc, exact)) {
        if (exact && d->pc_offset != pc) __builtin_trap();
        if (!exact && d->pc_offset < pc) __builtin_trap();
        starts.push_back(d->scope_decode_offset);
      }
  for (int32_t at : starts) {
    auto chain = uscope::decode_hotspot_scopes(scopes, metadata, at, excluded);
    if (!chain) continue;
    if (chain->size() > 256) __builtin_trap();
    for (const auto& s : *chain) {
      if (s.method < 0x1000 || s.method >= 0x1000 + 8 * metadata.size()) __builtin_trap();
      if (s.bci < -5 || s.bci > 65535) __builtin_trap();
    }
  }
  return 0;
}
