#include "plan/capstone_lib.h"

#include <dlfcn.h>

#include <string>

namespace uscope {

namespace {

Result<CapstoneLib> load() {
  void* h = dlopen(USCOPE_CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    return fail("cannot load {} (Debian's libcapstone4): {}", USCOPE_CAPSTONE_SONAME, dlerror());
  std::string missing;
  auto sym = [&]<class F>(F& fn, const char* name) {
    fn = reinterpret_cast<F>(dlsym(h, name));
    if (fn == nullptr) missing += missing.empty() ? name : std::string(", ") + name;
  };
  CapstoneLib lib{};
  sym(lib.open, "cs_open");
  sym(lib.close, "cs_close");
  sym(lib.option, "cs_option");
  sym(lib.strerror, "cs_strerror");
  sym(lib.malloc, "cs_malloc");
  sym(lib.free, "cs_free");
  sym(lib.disasm_iter, "cs_disasm_iter");
  sym(lib.regs_access, "cs_regs_access");
  sym(lib.reg_name, "cs_reg_name");
  if (!missing.empty()) {
    dlclose(h);
    return fail("{} has no {}: not the capstone 4 uscope was built with", USCOPE_CAPSTONE_SONAME,
                missing);
  }
  return lib;  // never unloaded: disassemblers live in thread_local handles until exit
}

}  // namespace

Result<const CapstoneLib*> capstone_lib() {
  static const Result<CapstoneLib> lib = load();
  if (!lib) return tl::unexpected(lib.error());
  return &*lib;
}

}  // namespace uscope
