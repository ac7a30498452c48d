#pragma once
// The vdso: code the kernel maps into every process, with no file behind it, so /proc/PID/maps
// gives nothing to open. Every process on a host maps the same image (it is part of the kernel),
// so uscope's own copy names the vdso frames of every target, read once (perf reads the target's
// from /proc/PID/mem; the bytes are the same).
#include <cstdint>
#include <memory>

#include "discover/object_store.h"

namespace uscope {

// uscope's vdso as an object to look symbols up in (its .dynsym: __vdso_gettimeofday, ...), or
// null when it cannot be read. Read on first call, then kept. A target's [vdso] mapping is this
// image only if it has the same size (`mapping_size`; an x32 or 32-bit process maps another).
std::shared_ptr<StoredObject> own_vdso(uint64_t mapping_size, const DebugSearchPaths& paths);

}  // namespace uscope
