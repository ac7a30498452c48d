#include "symbolize/vdso_image.h"

#include <sys/auxv.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "discover/process.h"

namespace uscope {

namespace {

struct OwnVdso {
  std::shared_ptr<StoredObject> object;
  uint64_t size = 0;
};

OwnVdso read_own_vdso(const DebugSearchPaths& paths) {
  const auto base = static_cast<uint64_t>(getauxval(AT_SYSINFO_EHDR));
  if (base == 0) return {};
  std::ifstream in("/proc/self/maps");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto maps = parse_proc_maps(text);
  if (!maps) return {};
  for (const Mapping& m : *maps) {
    if (m.path != "[vdso]" || m.start != base) continue;
    // Our own memory, mapped readable: copied out so that the object owns its bytes.
    std::vector<uint8_t> bytes(m.end - m.start);
    std::memcpy(bytes.data(), reinterpret_cast<const void*>(base), bytes.size());
    auto elf = ElfFile::from_memory(std::move(bytes), "[vdso]");
    if (!elf) return {};
    std::string key = "vdso:" + elf->build_id().value_or("");
    return {std::make_shared<StoredObject>(std::move(key), std::move(*elf), paths),
            m.end - m.start};
  }
  return {};
}

}  // namespace

std::shared_ptr<StoredObject> own_vdso(uint64_t mapping_size, const DebugSearchPaths& paths) {
  static const OwnVdso vdso = read_own_vdso(paths);
  return vdso.size == mapping_size ? vdso.object : nullptr;
}

}  // namespace uscope
