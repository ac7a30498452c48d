#pragma once
// libcapstone, loaded when uscope first decodes an instruction (planning a probe site), not when
// it starts: its ~77,000 relocations cost every start ~3 MiB of resident memory and milliseconds
// of the dynamic loader's time, which `profile`, `stat` and the other commands that decode nothing
// would pay for nothing. The library is the one the build found (its soname,
// USCOPE_CAPSTONE_SONAME).
#include <capstone/capstone.h>

#include "util/result.h"

namespace uscope {

// The functions of capstone's API that uscope calls.
struct CapstoneLib {
  decltype(&::cs_open) open;
  decltype(&::cs_close) close;
  decltype(&::cs_option) option;
  decltype(&::cs_strerror) strerror;
  decltype(&::cs_malloc) malloc;
  decltype(&::cs_free) free;
  decltype(&::cs_disasm_iter) disasm_iter;
  decltype(&::cs_regs_access) regs_access;
  decltype(&::cs_reg_name) reg_name;
};

// Loaded once (thread-safe); the error names the library and why the loader refused it.
Result<const CapstoneLib*> capstone_lib();

}  // namespace uscope
