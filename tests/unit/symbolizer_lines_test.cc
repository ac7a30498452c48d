// Source lines and inlined calls (SymbolizerOptions::lines) and JIT code named by perf maps.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "symbolize/symbolizer.h"

namespace fs = std::filesystem;
using namespace uscope;

// The lines of the two calls below, stored as they run (__LINE__ on the call's own line).
int g_line_in_inlined = 0;
int g_line_in_outer = 0;

extern "C" __attribute__((noinline, used)) uint64_t uscope_lines_here() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

extern "C" {
// Always inlined into its caller: the call to uscope_lines_here() is code of this function
// placed inside uscope_lines_outer, which DWARF describes as a DW_TAG_inlined_subroutine.
static inline __attribute__((always_inline)) uint64_t uscope_lines_inlined() {
  uint64_t r = (g_line_in_inlined = __LINE__, uscope_lines_here());
  asm volatile("" ::: "memory");  // the call is not the last thing: no tail call
  return r;
}
}

extern "C" __attribute__((noinline, used)) uint64_t uscope_lines_outer() {
  uint64_t r = (g_line_in_outer = __LINE__, uscope_lines_inlined());
  asm volatile("" ::: "memory");
  return r + 0;
}

namespace {

TEST(symbolizer_lines, names_inlined_calls_innermost_first_with_their_lines) {
  const uint64_t ret = uscope_lines_outer();
  SymbolizerOptions options;
  options.lines = true;
  Symbolizer s(options);
  std::vector<uint64_t> stack = {ret};
  Frame f = s.symbolize(getpid(), stack, false).front();
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.function, "uscope_lines_outer");
  ASSERT_EQ(f.inlined.size(), 1u) << f.file << ":" << f.line;
  EXPECT_EQ(f.inlined[0].function, "uscope_lines_inlined");
  EXPECT_TRUE(f.inlined[0].file.ends_with("symbolizer_lines_test.cc")) << f.inlined[0].file;
  EXPECT_EQ(f.inlined[0].line, g_line_in_inlined);
  // The frame's own position is where its function called the outermost inlined one.
  EXPECT_TRUE(f.file.ends_with("symbolizer_lines_test.cc")) << f.file;
  EXPECT_EQ(f.line, g_line_in_outer);
}

TEST(symbolizer_lines, gives_the_line_of_a_plain_address) {
  SymbolizerOptions options;
  options.lines = true;
  Symbolizer s(options);
  Frame f = s.symbolize(getpid(), reinterpret_cast<uint64_t>(&uscope_lines_here));
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_TRUE(f.file.ends_with("symbolizer_lines_test.cc")) << f.file;
  EXPECT_GT(f.line, 0);
  EXPECT_TRUE(f.inlined.empty());
}

TEST(symbolizer_lines, reads_no_lines_unless_asked) {
  const uint64_t ret = uscope_lines_outer();
  Symbolizer s;
  std::vector<uint64_t> stack = {ret};
  Frame f = s.symbolize(getpid(), stack, false).front();
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.file, "");
  EXPECT_EQ(f.line, 0);
  EXPECT_TRUE(f.inlined.empty());
}

// Executable anonymous memory and the perf map line naming it, removed when the test ends.
struct JitCode {
  void* code = nullptr;
  size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::string map_path;
  explicit JitCode(pid_t pid) : map_path("/tmp/perf-" + std::to_string(pid) + ".map") {
    code = mmap(nullptr, size, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  uint64_t address() const { return reinterpret_cast<uint64_t>(code); }
  void write_map(const std::string& name) const {
    std::ofstream(map_path) << std::hex << address() << " 40 " << name << "\n";
  }
  ~JitCode() {
    munmap(code, size);
    std::error_code ec;
    fs::remove(map_path, ec);
  }
};

TEST(symbolizer_perf_map, names_jit_code_and_rereads_a_map_written_later) {
  JitCode jit(getpid());
  ASSERT_NE(jit.code, MAP_FAILED);
  Symbolizer s;
  s.remember(getpid());  // no perf map yet
  EXPECT_EQ(s.symbolize(getpid(), jit.address() + 8).miss, FrameMiss::NoPerfMap);

  jit.write_map("LazyCompile:*fib /app/fib.js:3");
  Frame f = s.symbolize(getpid(), jit.address() + 8);
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.function, "LazyCompile:*fib /app/fib.js:3");
  EXPECT_EQ(f.function_offset, 8u);
  EXPECT_EQ(f.origin, SymbolOrigin::PerfMap);
  EXPECT_EQ(f.object, "[anon]");

  // Past the code the map describes: the map is known, the address is not in it.
  EXPECT_EQ(s.symbolize(getpid(), jit.address() + 0x100).miss, FrameMiss::UnknownAddress);
}

TEST(symbolizer_perf_map, a_process_that_exited_keeps_the_names_it_wrote) {
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    JitCode jit(getpid());
    jit.write_map("java.lang.String::hashCode");
    uint64_t addr = jit.address();
    if (write(ready[1], &addr, sizeof addr) != sizeof addr) _exit(1);
    char c;
    (void)!read(done[0], &c, 1);
    _exit(0);  // ~JitCode does not run: the parent removes the map
  }
  uint64_t addr = 0;
  ASSERT_EQ(read(ready[0], &addr, sizeof addr), static_cast<ssize_t>(sizeof addr));
  Symbolizer s;
  s.remember(child);
  ASSERT_EQ(write(done[1], "x", 1), 1);
  int status = 0;
  waitpid(child, &status, 0);
  fs::remove("/tmp/perf-" + std::to_string(child) + ".map");
  for (int fd : {ready[0], ready[1], done[0], done[1]}) close(fd);

  std::vector<uint64_t> stack = {addr + 4};
  Frame f = s.symbolize(child, stack, true).front();
  ASSERT_EQ(f.miss, FrameMiss::None) << f.describe();
  EXPECT_EQ(f.function, "java.lang.String::hashCode");
  EXPECT_EQ(f.origin, SymbolOrigin::PerfMap);
}

}  // namespace
