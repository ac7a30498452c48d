#include "symbolize/symbolizer.h"
#include "reaped_pid.h"
#include "temp_dir.h"
#include "tool_output.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace uscope;

// Functions of this test binary, found through its .symtab (it is not stripped). extern "C" keeps
// the names unmangled; noinline+used keeps a body at a known address.
extern "C" __attribute__((noinline, used)) int uscope_symtest_target(int x) {
  volatile int acc = x;
  for (int i = 0; i < x; ++i) acc = acc * 3 + i;
  return acc;
}

// Throws instead of returning, so that its caller's call is the caller's last instruction and the
// return address lies past the caller's end.
extern "C" [[noreturn]] __attribute__((noinline, used)) void uscope_symtest_noreturn(
    uint64_t* ret) {
  *ret = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  throw 1;
}

extern "C" __attribute__((noinline, used)) void uscope_symtest_calls_noreturn(uint64_t* ret) {
  uscope_symtest_noreturn(ret);
}

// Hand-written assembly without a .size directive: a size-0 symbol in .symtab.
asm(R"(
  .text
  .globl uscope_symtest_nosize
  .type uscope_symtest_nosize, @function
uscope_symtest_nosize:
  nop
  nop
  nop
  nop
  ret
)");
extern "C" void uscope_symtest_nosize();

namespace {

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}
template <class F>
uint64_t fn_addr(F* f) {
  return reinterpret_cast<uint64_t>(f);
}

using test::TempDir;

// dlopen()s a private copy of a fixture library, so the mapping is new to this process even if
// another test already loaded the fixture.
struct LoadedCopy {
  TempDir dir;
  fs::path path;
  void* handle = nullptr;
  LoadedCopy(const std::string& fixture, const std::string& name) {
    path = dir.path() / name;
    fs::copy_file(fixture, path);
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  ~LoadedCopy() {
    if (handle) dlclose(handle);
  }
  uint64_t symbol(const char* name) const { return addr_of(dlsym(handle, name)); }
};

// Whether /proc/self/map_files/START-END of the mapping holding `addr` can be opened.
bool map_files_link_opens(uint64_t addr) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64, &start, &end) != 2) continue;
    if (addr < start || addr >= end) continue;
    const std::string link = "/proc/self/map_files/" + line.substr(0, line.find(' '));
    const int fd = ::open(link.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    return fd >= 0;
  }
  return false;
}

}  // namespace

TEST(symbolizer, resolves_own_function_from_symtab) {
  Symbolizer s;
  Frame f = s.symbolize(getpid(), fn_addr(&uscope_symtest_target));
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.function, "uscope_symtest_target");
  EXPECT_EQ(f.function_offset, 0u);
  EXPECT_EQ(f.object, fs::read_symlink("/proc/self/exe").string());
  EXPECT_FALSE(f.build_id.empty());
  EXPECT_EQ(f.describe(), "uscope_symtest_target (" + f.object + ")");
  EXPECT_EQ(f.origin, SymbolOrigin::Symtab);
  EXPECT_EQ(f.mangled, "");
}

// The address of libc's own definition: under ASan, &malloc is its interceptor in libasan.
uint64_t libc_fn_addr(const char* name) {
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  return libc ? reinterpret_cast<uint64_t>(dlsym(libc, name)) : 0;
}

TEST(symbolizer, resolves_libc_function_by_runtime_address) {
  Symbolizer s;
  Frame f = s.symbolize(getpid(), libc_fn_addr("malloc"));
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  // malloc has aliases (__libc_malloc); the undecorated name is the one reported.
  EXPECT_EQ(f.function, "malloc");
  EXPECT_EQ(f.function_offset, 0u);
  EXPECT_TRUE(f.object.ends_with("/libc.so.6")) << f.object;
  // Debian's libc.so.6 has only .dynsym; libc6-dbg's debug file names it when installed.
  EXPECT_TRUE(f.origin == SymbolOrigin::Dynsym || f.origin == SymbolOrigin::DebugFile)
      << static_cast<int>(f.origin);
  EXPECT_FALSE(f.build_id.empty());
  EXPECT_NE(f.file_offset, 0u);
}

// The function names nm gives link-time address `link_addr` in the separate debug file of the
// object `runtime_addr` is in (found by build-id, as gdb does); nullopt when there is none.
std::optional<std::set<std::string>> debug_file_names_at(uint64_t runtime_addr) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(runtime_addr), &info) == 0) return std::nullopt;
  const std::string notes = test::command_output(std::string("readelf -n ") + info.dli_fname);
  const size_t at = notes.find("Build ID: ");
  if (at == std::string::npos) return std::nullopt;
  const std::string id = notes.substr(at + 10, notes.find('\n', at) - at - 10);
  const std::string debug =
      "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  if (!fs::exists(debug)) return std::nullopt;
  // libc's first PT_LOAD is at address 0, so the load base is the bias.
  const uint64_t link_addr = runtime_addr - reinterpret_cast<uint64_t>(info.dli_fbase);
  std::set<std::string> names;
  for (const auto& [name, sym] : test::nm_sized_symbols(debug))
    if (sym.addr == link_addr && (sym.type == 'T' || sym.type == 't' || sym.type == 'i'))
      names.insert(name);
  return names;
}

TEST(symbolizer, resolves_ifunc_implementation_as_the_debug_file_names_it) {
  // &strlen is what the IFUNC resolver chose (__strlen_avx2, ...): a local symbol only a .symtab
  // (libc's debug file, libc6-dbg) names. Without one the address is known to be libc's, but
  // unnamed. Which case holds is decided here by the file system, not by the symbolizer.
  const uint64_t addr = libc_fn_addr("strlen");
  auto expected = debug_file_names_at(addr);
  Symbolizer s;
  Frame f = s.symbolize(getpid(), addr);
  EXPECT_TRUE(f.object.ends_with("/libc.so.6")) << f.object;
  if (!expected) {
    EXPECT_EQ(f.miss, FrameMiss::UnknownAddress) << f.describe();
    return;
  }
  ASSERT_FALSE(expected->empty()) << "nm names no function at strlen's address";
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_TRUE(expected->contains(f.function)) << f.function << " is not one of nm's names";
  EXPECT_EQ(f.function_offset, 0u);
  EXPECT_EQ(f.origin, SymbolOrigin::DebugFile);
}

TEST(symbolizer, reports_offset_of_address_inside_function) {
  Symbolizer s;
  uint64_t inside = fn_addr(&uscope_symtest_target) + 3;
  Frame f = s.symbolize(getpid(), inside);
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.function, "uscope_symtest_target");
  EXPECT_EQ(f.function_offset, 3u);
  EXPECT_EQ(f.address, inside);
  EXPECT_EQ(f.describe(), "uscope_symtest_target+0x3 (" + f.object + ")");
}

TEST(symbolizer, extends_size_zero_symbol_to_next_symbol) {
  Symbolizer s;
  Frame f = s.symbolize(getpid(), fn_addr(&uscope_symtest_nosize) + 2);
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.function, "uscope_symtest_nosize");
  EXPECT_EQ(f.function_offset, 2u);
}

TEST(symbolizer, unmapped_address_is_a_miss_not_an_error) {
  long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(munmap(p, page), 0);
  Symbolizer s;
  Frame f = s.symbolize(getpid(), addr_of(p) + 8);
  EXPECT_EQ(f.miss, FrameMiss::Unmapped);
  EXPECT_EQ(f.object, "");
  EXPECT_EQ(f.function, "");
  EXPECT_EQ(f.describe(), fmt::format("{:#x} [unknown: unmapped]", addr_of(p) + 8));
}

// The vdso has no file, but is the same image in every process: named from it, as ld.so names it.
TEST(symbolizer, names_vdso_functions) {
  void* vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(vdso, nullptr) << dlerror();
  void* fn = dlsym(vdso, "__vdso_clock_gettime");
  ASSERT_NE(fn, nullptr) << dlerror();
  Symbolizer s;
  Frame f = s.symbolize(getpid(), addr_of(fn) + 4);
  EXPECT_EQ(f.miss, FrameMiss::None);
  EXPECT_EQ(f.object, "[vdso]");
  // Not its alias clock_gettime (nm -D shows both at one address): that is libc's wrapper's name.
  EXPECT_EQ(f.function, "__vdso_clock_gettime");
  EXPECT_EQ(f.function_offset, 4u);
  dlclose(vdso);
}

TEST(symbolizer, names_memory_no_file_backs) {
  Symbolizer s;
  uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso != 0) {
    // The ELF header, which no function covers: the vdso has symbols, but none there.
    Frame f = s.symbolize(getpid(), vdso + 0x10);
    EXPECT_EQ(f.miss, FrameMiss::UnknownAddress);
    EXPECT_EQ(f.object, "[vdso]");
    EXPECT_EQ(f.describe(), fmt::format("{:#x} ([unknown: no symbol covers the address] in [vdso])",
                                        vdso + 0x10));
  }
  long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  Frame anon = s.symbolize(getpid(), addr_of(p));
  munmap(p, page);
  EXPECT_EQ(anon.miss, FrameMiss::NoSymbols);
  EXPECT_EQ(anon.object, "[anon]");
}

TEST(symbolizer, executable_anonymous_memory_without_perf_map_says_so) {
  long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_FALSE(fs::exists(fmt::format("/tmp/perf-{}.map", getpid())));
  Symbolizer s;
  Frame f = s.symbolize(getpid(), addr_of(p) + 4);
  munmap(p, page);
  EXPECT_EQ(f.miss, FrameMiss::NoPerfMap);
  EXPECT_EQ(f.describe(), fmt::format("{:#x} ([unknown: JIT code without a perf map] in [anon])",
                                      addr_of(p) + 4));
}

TEST(symbolizer, process_that_does_not_exist_is_process_gone) {
  Symbolizer s;
  std::vector<uint64_t> stack = {0x401000, 0x402000};
  auto frames = s.symbolize(test::reaped_pid(), stack, true);
  ASSERT_EQ(frames.size(), 2u);
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].miss, FrameMiss::ProcessGone);
    EXPECT_EQ(frames[i].address, stack[i]);
  }
  EXPECT_EQ(frames[0].describe(), "0x401000 [unknown: process gone]");
}

TEST(symbolizer, rereads_maps_for_library_dlopened_after_first_call) {
  Symbolizer s;
  // Caches this process's maps before the library exists in them.
  ASSERT_EQ(s.symbolize(getpid(), fn_addr(&uscope_symtest_target)).miss, FrameMiss::None);

  LoadedCopy lib(std::string(USCOPE_FIXTURE_DIR) + "/elf/libfixture.so", "libsymtest-late.so");
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  uint64_t exported = lib.symbol("shlib_exported");
  ASSERT_NE(exported, 0u);

  // Frame 1 is a return address: looked up one byte earlier, still inside the target.
  std::vector<uint64_t> addrs = {exported, fn_addr(&uscope_symtest_target) + 3};
  auto frames = s.symbolize(getpid(), addrs, true);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].miss, FrameMiss::None) << frames[0].describe();
  EXPECT_EQ(frames[0].function, "shlib_exported");
  EXPECT_EQ(frames[0].object, lib.path.string());
  EXPECT_EQ(frames[1].function, "uscope_symtest_target");
}

TEST(symbolizer, resolves_function_in_deleted_library) {
  LoadedCopy lib(std::string(USCOPE_FIXTURE_DIR) + "/process/libprocess_tiny.so",
                 "libsymtest-deleted.so");
  ASSERT_NE(lib.handle, nullptr) << dlerror();
  uint64_t answer = lib.symbol("uscope_tiny_answer");
  ASSERT_NE(answer, 0u);
  fs::remove(lib.path);

  // Only /proc/PID/map_files reaches a deleted file, and it needs CAP_SYS_ADMIN: whether it can
  // be opened here is asked of the kernel, not of the symbolizer.
  const bool map_files_readable = map_files_link_opens(answer);
  Symbolizer s;
  Frame f = s.symbolize(getpid(), answer);
  EXPECT_EQ(f.object, lib.path.string());
  if (!map_files_readable) {
    EXPECT_EQ(f.miss, FrameMiss::Unreadable) << f.describe();
    return;
  }
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.function, "uscope_tiny_answer");
}

TEST(symbolizer, looks_up_return_addresses_one_byte_earlier) {
  uint64_t ret = 0;
  try {
    uscope_symtest_calls_noreturn(&ret);
  } catch (int) {
  }
  ASSERT_NE(ret, 0u);
  Symbolizer s;

  // Taken as an exact address, the return address lies past the caller's last instruction.
  Frame exact = s.symbolize(getpid(), ret);
  EXPECT_NE(exact.function, "uscope_symtest_calls_noreturn") << exact.describe();

  // As frame 1 of a stack it is a return address: looked up inside the call, printed as given.
  std::vector<uint64_t> stack = {fn_addr(&uscope_symtest_noreturn), ret};
  auto frames = s.symbolize(getpid(), stack, true);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].function, "uscope_symtest_noreturn");
  EXPECT_EQ(frames[0].function_offset, 0u);
  ASSERT_EQ(frames[1].miss, FrameMiss::None) << frames[1].describe();
  EXPECT_EQ(frames[1].function, "uscope_symtest_calls_noreturn");
  EXPECT_EQ(frames[1].address, ret);
  EXPECT_EQ(frames[1].function_offset, ret - fn_addr(&uscope_symtest_calls_noreturn));
  EXPECT_EQ(frames[1].file_offset, exact.file_offset);

  // Without first_is_ip the first entry is a return address too.
  std::vector<uint64_t> no_ip = {ret};
  EXPECT_EQ(s.symbolize(getpid(), no_ip, false)[0].function, "uscope_symtest_calls_noreturn");
  // An IP at a function's first byte is not moved into the function before it.
  std::vector<uint64_t> ip = {fn_addr(&uscope_symtest_target)};
  EXPECT_EQ(s.symbolize(getpid(), ip, true)[0].function, "uscope_symtest_target");
}

TEST(symbolizer, object_that_cannot_be_opened_is_unreadable_with_its_name) {
  TempDir dir;
  auto p = Process::from_maps(
      4242, "7f0000000000-7f0000002000 r-xp 00001000 fd:01 99999999 /nonexistent/libgone.so\n",
      dir.path().string());
  ASSERT_TRUE(p) << p.error().message;
  Symbolizer s;
  std::vector<uint64_t> addrs = {0x7f0000000010, 0x7f0000005000};
  auto frames = s.symbolize(*p, addrs, true);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].miss, FrameMiss::Unreadable);
  EXPECT_EQ(frames[0].object, "/nonexistent/libgone.so");
  EXPECT_EQ(frames[0].file_offset, 0x1010u);
  EXPECT_EQ(frames[0].describe(),
            "0x7f0000000010 ([unknown: object unreadable] in /nonexistent/libgone.so)");
  EXPECT_EQ(frames[1].miss, FrameMiss::Unmapped);
}

TEST(symbolizer, forget_drops_cached_maps) {
  Symbolizer s;
  ASSERT_EQ(s.symbolize(getpid(), fn_addr(&uscope_symtest_target)).miss, FrameMiss::None);
  s.forget(getpid());
  // Re-reads the maps and still resolves: forgetting is about the PID, not the objects.
  Frame f = s.symbolize(getpid(), libc_fn_addr("malloc"));
  EXPECT_EQ(f.function, "malloc");
}

TEST(symbolizer, shares_the_process_object_store_with_the_planner) {
  // What the planner opened (through ObjectStore::shared()) is what the symbolizer finds: the
  // test binary is not opened, nor its symbols read, a second time.
  auto store = ObjectStore::shared();
  auto exe = store->open("/proc/self/exe", fs::read_symlink("/proc/self/exe").string());
  ASSERT_TRUE(exe) << exe.error().message;
  auto planned = (*exe)->symbols();
  ASSERT_TRUE(planned);
  const size_t before = store->size();
  Symbolizer s;
  ASSERT_EQ(s.symbolize(getpid(), fn_addr(&uscope_symtest_target)).miss, FrameMiss::None);
  EXPECT_EQ(store->size(), before);
  auto again = store->open(fs::read_symlink("/proc/self/exe").string());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get(), exe->get());
  EXPECT_EQ(*(*again)->symbols(), *planned);
}
