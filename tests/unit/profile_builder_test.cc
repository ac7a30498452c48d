// Raw stacks -> the profile model: names, mappings, interning, inlined lines, frames that cannot be
// named, kernel frames, and whether a stack reached its thread's entry point (on stacks walked
// through frame pointers in real processes, as the kernel walks them).
#include "symbolize/profile_builder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "bpf/profile.h"
#include "discover/process.h"
#include "reaped_pid.h"
#include "symbolize/frame_names.h"
#include "symbolize/stack_cache.h"
#include "symbolize/symbol_text.h"

namespace uscope {
namespace {

// Functions of this test binary, with frame pointers so that the walks below can climb them.
#define WITH_FRAME __attribute__((noinline, optimize("no-omit-frame-pointer")))

WITH_FRAME int leaf_function(int x) {
  __asm__ volatile("" ::: "memory");
  return x * 3;
}
WITH_FRAME int caller_function(int x) {
  return leaf_function(x) + 1;
}

__attribute__((always_inline)) inline uint64_t inlined_here() {
  uint64_t ip;
  // The address of the nop, which lies in this function's code inlined into its caller.
  __asm__ volatile("lea 0(%%rip), %0\n\tnop" : "=r"(ip));
  return ip;
}
__attribute__((noinline)) uint64_t holds_inlined_code() {
  return inlined_here();
}

uint64_t addr_of(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

std::string name_of(const Profile& p, uint32_t location, size_t line = 0) {
  const ProfileLocation& loc = p.locations.at(location);
  return p.functions.at(loc.lines.at(line).function).name;
}

StackSample user_sample(pid_t pid, std::vector<uint64_t> user, uint64_t count = 1) {
  StackSample s;
  s.pid = pid;
  s.comm = "test";
  s.user = std::move(user);
  s.kernel_status = StackStatus::NotCollected;
  s.count = count;
  return s;
}

TEST(profile_builder, thread_entries) {
  for (const char* name : {"_start", "main", "start_thread", "clone3", "clone", "__libc_start_main",
                           "__libc_start_call_main", "runtime.goexit.abi0", "thread_native_entry"})
    EXPECT_TRUE(is_thread_entry(name)) << name;
  for (const char* name : {"", "mainloop", "start", "pthread_create", "[unknown: unmapped]"})
    EXPECT_FALSE(is_thread_entry(name)) << name;
}

TEST(profile_builder, names_frames_and_interns_locations_functions_and_mappings) {
  const uint64_t ip = addr_of(reinterpret_cast<void*>(&leaf_function)) + 1;
  // A return address: inside caller_function, looked up one byte earlier.
  const uint64_t ret = addr_of(reinterpret_cast<void*>(&caller_function)) + 5;
  std::vector<StackSample> samples = {user_sample(getpid(), {ip, ret}, 3),
                                      user_sample(getpid(), {ip, ret, ret}, 2),
                                      user_sample(getpid(), {ret}, 1)};
  Symbolizer symbolizer;
  Profile p = build_profile(samples, symbolizer, nullptr);

  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(p.total_samples(), 6u);
  const ProfileSample& s = p.samples[0];
  ASSERT_EQ(s.locations.size(), 2u);
  EXPECT_EQ(name_of(p, s.locations[0]), "uscope::(anonymous namespace)::leaf_function(int)");
  EXPECT_EQ(name_of(p, s.locations[1]), "uscope::(anonymous namespace)::caller_function(int)");
  EXPECT_EQ(p.locations[s.locations[0]].address, ip);
  EXPECT_EQ(p.locations[s.locations[0]].kind, FrameKind::User);
  EXPECT_EQ(s.pid, getpid());
  EXPECT_EQ(s.count, 3u);
  EXPECT_FALSE(s.complete);  // no entry point on it
  EXPECT_FALSE(s.user_stack_missing);
  // The same address twice is one location; the same function, one function. A return address
  // sampled as an IP is a location of its own (looked up without the one-byte step back).
  EXPECT_EQ(p.samples[1].locations[1], s.locations[1]);
  EXPECT_EQ(p.samples[1].locations[2], s.locations[1]);
  EXPECT_NE(p.samples[2].locations[0], s.locations[1]);
  EXPECT_EQ(p.locations.size(), 3u);
  // ret as an IP is 5 bytes into caller_function too: same function, however it was reached.
  EXPECT_EQ(p.locations[p.samples[2].locations[0]].lines[0].function,
            p.locations[s.locations[1]].lines[0].function);
  EXPECT_EQ(p.functions.size(), 2u);

  // One mapping: the test binary, its range covering the addresses, offsets as the file has them.
  ASSERT_EQ(p.mappings.size(), 1u);
  const ProfileMapping& m = p.mappings[0];
  EXPECT_EQ(m.file, std::filesystem::read_symlink("/proc/self/exe").string());
  EXPECT_FALSE(m.build_id.empty());
  EXPECT_TRUE(m.has_functions);
  EXPECT_LE(m.start, std::min(ip, ret));
  EXPECT_GT(m.limit, std::max(ip, ret));
  auto self = Process::open(getpid());
  ASSERT_TRUE(self.has_value());
  const MappedObject* o = self->object_containing(ip);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(ip - m.start + m.file_offset, *o->offset_of_address(ip));
  EXPECT_EQ(ret - m.start + m.file_offset, *o->offset_of_address(ret));
  for (const ProfileLocation& loc : p.locations) EXPECT_EQ(loc.mapping, 1u);
}

TEST(profile_builder, inlined_calls_become_lines_innermost_first) {
  const uint64_t inlined_ip = holds_inlined_code();
  SymbolizerOptions options;
  options.lines = true;
  Symbolizer symbolizer(options);
  const Frame frame = symbolizer.symbolize(getpid(), inlined_ip);
  std::vector<StackSample> samples = {user_sample(getpid(), {inlined_ip})};
  Profile p = build_profile(samples, symbolizer, nullptr);
  ASSERT_EQ(p.samples.at(0).locations.size(), 1u);
  const ProfileLocation& loc = p.locations[p.samples[0].locations[0]];
  // One line per inlined call, then the function that holds the code.
  ASSERT_EQ(loc.lines.size(), frame.inlined.size() + 1);
  EXPECT_EQ(p.functions[loc.lines.back().function].name,
            "uscope::(anonymous namespace)::holds_inlined_code()");
  EXPECT_EQ(loc.lines.back().line, frame.line);
  if (!frame.inlined.empty()) {  // the symbolizer reads DWARF inlines
    EXPECT_EQ(p.functions[loc.lines[0].function].name, frame.inlined[0].function);
    EXPECT_NE(frame.inlined[0].function.find("inlined_here"), std::string::npos);
    EXPECT_GT(loc.lines[0].line, 0);
    EXPECT_NE(p.functions[loc.lines[0].function].file.find("profile_builder_test.cc"),
              std::string::npos);
    EXPECT_TRUE(p.mappings.at(loc.mapping - 1).has_lines);
  }
}

TEST(profile_builder, unnamed_frames_say_why) {
  Symbolizer symbolizer;
  void* anon = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  const pid_t gone = test::reaped_pid();
  std::vector<StackSample> samples = {user_sample(getpid(), {0x10, addr_of(anon) + 8}),
                                      user_sample(gone, {0x401000, 0x401100})};
  Profile p = build_profile(samples, symbolizer, nullptr);
  munmap(anon, 4096);
  EXPECT_EQ(name_of(p, p.samples[0].locations[0]), "[unknown: unmapped]");
  EXPECT_EQ(p.locations[p.samples[0].locations[0]].mapping, 0u);
  EXPECT_EQ(name_of(p, p.samples[0].locations[1]), "[unknown: no symbols in [anon]]");
  EXPECT_EQ(name_of(p, p.samples[1].locations[0]), "[unknown: process gone]");
  EXPECT_EQ(name_of(p, p.samples[1].locations[1]), "[unknown: process gone]");
  // Unnamed texts are functions like any other: one per text.
  EXPECT_EQ(p.locations[p.samples[1].locations[0]].lines[0].function,
            p.locations[p.samples[1].locations[1]].lines[0].function);
  for (const ProfileSample& s : p.samples) EXPECT_FALSE(s.complete);
}

TEST(profile_builder, unnamed_frame_texts_name_the_objects_file) {
  Frame f;
  f.object = "/usr/lib/x86_64-linux-gnu/libfoo.so.1";
  f.miss = FrameMiss::NoSymbols;
  EXPECT_EQ(unnamed_frame_text(f), "[unknown: no symbols in libfoo.so.1]");
  f.miss = FrameMiss::UnknownAddress;
  EXPECT_EQ(unnamed_frame_text(f), "[unknown: no symbol covers the address in libfoo.so.1]");
  f.object = "[vdso]";
  f.miss = FrameMiss::NoSymbols;
  EXPECT_EQ(unnamed_frame_text(f), "[unknown: no symbols in [vdso]]");
  f.object = "";
  f.miss = FrameMiss::NoAccess;
  EXPECT_EQ(unnamed_frame_text(f), "[unknown: maps unreadable]");
  f.miss = FrameMiss::Unmapped;
  EXPECT_EQ(frame_name(f), "[unknown: unmapped]");
  f.function = "named";
  f.miss = FrameMiss::None;
  EXPECT_EQ(frame_name(f), "named");
}

TEST(profile_builder, kernel_frames_come_first_with_their_own_mappings) {
  auto kernel = KernelSymbols::parse(
      "ffffffff81000000 T _stext\n"
      "ffffffff81001000 T do_syscall_64\n"
      "ffffffffc0a01000 t kvm_vcpu_ioctl\t[kvm]\n");
  const uint64_t ip = addr_of(reinterpret_cast<void*>(&leaf_function)) + 1;
  StackSample s = user_sample(getpid(), {ip});
  s.kernel = {0xffffffffc0a01010, 0xffffffff81001020, 0x1000};
  s.kernel_status = StackStatus::Ok;
  std::vector<StackSample> samples = {s};
  Symbolizer symbolizer;
  Profile p = build_profile(samples, symbolizer, &kernel);
  const auto& locs = p.samples.at(0).locations;
  ASSERT_EQ(locs.size(), 4u);
  EXPECT_EQ(name_of(p, locs[0]), "kvm_vcpu_ioctl");
  EXPECT_EQ(name_of(p, locs[1]), "do_syscall_64");
  EXPECT_EQ(name_of(p, locs[2]), "[unknown: no symbol covers the address in kernel]");
  EXPECT_EQ(name_of(p, locs[3]), "uscope::(anonymous namespace)::leaf_function(int)");
  EXPECT_EQ(p.locations[locs[0]].kind, FrameKind::Kernel);
  EXPECT_EQ(p.locations[locs[2]].kind, FrameKind::Kernel);
  EXPECT_EQ(p.locations[locs[3]].kind, FrameKind::User);
  EXPECT_EQ(p.frame_label(p.locations[locs[1]].lines[0], FrameKind::Kernel), "do_syscall_64_[k]");
  EXPECT_EQ(p.mappings.at(p.locations[locs[0]].mapping - 1).file, "[kvm]");
  EXPECT_EQ(p.mappings.at(p.locations[locs[1]].mapping - 1).file, "[kernel.kallsyms]");
  EXPECT_EQ(p.locations[locs[1]].mapping, p.locations[locs[2]].mapping);

  Profile without = build_profile(samples, symbolizer, nullptr);
  EXPECT_EQ(name_of(without, without.samples[0].locations[0]),
            "[unknown: kernel symbols not read]");
  auto hidden = KernelSymbols::parse("0000000000000000 T do_syscall_64\n");
  Profile restricted = build_profile(samples, symbolizer, &hidden);
  EXPECT_EQ(name_of(restricted, restricted.samples[0].locations[0]),
            "[unknown: kernel addresses hidden]");
}

// An off-CPU sample's leaf says why its thread waited; one location per reason, with no mapping.
TEST(profile_builder, an_off_cpu_stack_ends_in_its_reason) {
  const uint64_t ip = addr_of(reinterpret_cast<void*>(&leaf_function)) + 1;
  StackSample lock = user_sample(getpid(), {ip});
  lock.reason = OFFCPU_LOCK;
  StackSample other_lock = lock;
  other_lock.tid = 7;
  StackSample queued = user_sample(getpid(), {ip});
  queued.reason = OFFCPU_RUN_QUEUE;
  StackSample running = user_sample(getpid(), {ip});
  std::vector<StackSample> samples = {lock, other_lock, queued, running};
  Symbolizer symbolizer;
  Profile p = build_profile(samples, symbolizer, nullptr);
  ASSERT_EQ(p.samples.size(), 4u);
  EXPECT_EQ(name_of(p, p.samples[0].locations.at(0)), "[off-CPU: lock]");
  EXPECT_EQ(p.samples[0].locations[0], p.samples[1].locations[0]);
  EXPECT_EQ(p.locations[p.samples[0].locations[0]].mapping, 0u);
  EXPECT_EQ(name_of(p, p.samples[0].locations.at(1)),
            "uscope::(anonymous namespace)::leaf_function(int)");
  EXPECT_EQ(name_of(p, p.samples[2].locations.at(0)), "[off-CPU: run queue]");
  ASSERT_EQ(p.samples[3].locations.size(), 1u);  // on-CPU: no reason
  EXPECT_EQ(name_of(p, p.samples[3].locations[0]),
            "uscope::(anonymous namespace)::leaf_function(int)");
}

TEST(profile_builder, a_missing_user_stack_is_not_complete) {
  StackSample s = user_sample(getpid(), {});
  s.user_status = StackStatus::Failed;
  s.kernel = {0xffffffff81001020};
  s.kernel_status = StackStatus::Ok;
  std::vector<StackSample> samples = {s};
  Symbolizer symbolizer;
  Profile p = build_profile(samples, symbolizer, nullptr);
  EXPECT_TRUE(p.samples.at(0).user_stack_missing);
  EXPECT_FALSE(p.samples[0].kernel_stack_missing);
  EXPECT_FALSE(p.samples[0].complete);
  EXPECT_EQ(p.samples[0].locations.size(), 1u);
}

// A thread's user stack as the kernel's frame-pointer walker takes it (perf_callchain_user):
// the IP, then each frame's return address, following saved frame pointers until a read fails.
// The thread is stopped with ptrace meanwhile (a child of this test, never another process).
std::vector<uint64_t> walk_frame_pointers(pid_t tid) {
  std::vector<uint64_t> stack;
  if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) return stack;
  ptrace(PTRACE_INTERRUPT, tid, 0, 0);
  int status = 0;
  waitpid(tid, &status, __WALL);
  user_regs_struct regs{};
  if (ptrace(PTRACE_GETREGS, tid, 0, &regs) == 0) {
    stack.push_back(regs.rip);
    uint64_t fp = regs.rbp;
    while (stack.size() < 127 && fp != 0) {
      uint64_t frame[2];
      auto bytes = std::span(reinterpret_cast<uint8_t*>(frame), sizeof frame);
      auto got = read_process_memory(tid, fp, bytes);
      if (!got || *got != sizeof frame) break;
      stack.push_back(frame[1]);
      fp = frame[0];
    }
  }
  ptrace(PTRACE_DETACH, tid, 0, 0);
  return stack;
}

std::string describe(const Profile& p, const ProfileSample& s) {
  std::string text;
  for (uint32_t l : s.locations) text += name_of(p, l) + " <- ";
  return text;
}

// Waits until /proc/PID/syscall starts with `state`: "0 0x0" blocked in read(2) on stdin,
// "running" in user space.
void wait_for_syscall_state(pid_t pid, const std::string& state) {
  for (int i = 0; i < 2000000; ++i) {
    std::ifstream syscall("/proc/" + std::to_string(pid) + "/syscall");
    std::string text((std::istreambuf_iterator<char>(syscall)), {});
    if (text.starts_with(state)) return;
    sched_yield();
  }
}

// The outermost frame with a name: where the walk's sure part ended.
std::string outermost_named(const Profile& p, const ProfileSample& s) {
  for (auto it = s.locations.rbegin(); it != s.locations.rend(); ++it)
    if (name_of(p, *it).front() != '[') return name_of(p, *it);
  return "";
}

TEST(profile_builder, a_main_thread_walked_through_frame_pointers_reaches_main) {
  // target_loop (built with frame pointers) loops in main -> work -> first_is_x once it reads a
  // byte; its main is entered from glibc's __libc_start_call_main, which has no frame pointer.
  const std::string fixture = std::string(USCOPE_FIXTURE_DIR) + "/native/target_loop";
  int in[2];
  ASSERT_EQ(pipe(in), 0);
  pid_t child = fork();
  if (child == 0) {
    dup2(in[0], 0);
    close(in[1]);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execl(fixture.c_str(), fixture.c_str(), "1000000000000", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  wait_for_syscall_state(child, "0 0x0 ");
  ASSERT_EQ(write(in[1], "x", 1), 1);
  wait_for_syscall_state(child, "running");
  std::vector<StackSample> samples;
  // A few walks: each stop lands anywhere in the loop.
  Symbolizer symbolizer;
  for (int i = 0; i < 5; ++i) samples.push_back(user_sample(child, walk_frame_pointers(child)));
  Profile p = build_profile(samples, symbolizer, nullptr);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(in[1]);
  // main is often not on the stack: while work() or a libc function without a frame pointer
  // runs, rbp still holds main's frame, whose return address is the next one read. The walk
  // then ends in __libc_start_call_main, as a process's main thread's walks do.
  for (const ProfileSample& s : p.samples) {
    SCOPED_TRACE(describe(p, s));
    EXPECT_EQ(outermost_named(p, s), "__libc_start_call_main");
    EXPECT_TRUE(s.complete);
  }
}

std::atomic<bool> stop_spinning{false};
std::atomic<pid_t> spinning_tid{0};

WITH_FRAME void spin_step() {
  __asm__ volatile("" ::: "memory");
}
WITH_FRAME void* spin_thread(void*) {
  spinning_tid = gettid();
  while (!stop_spinning) spin_step();
  return nullptr;
}

TEST(profile_builder, a_thread_walked_through_frame_pointers_reaches_start_thread) {
  // A child of this test runs a thread whose function has a frame pointer and was called by
  // glibc's start_thread, which has none: the walk's last sure return address is in
  // start_thread, and what follows is read from whatever start_thread kept in rbp.
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t child = fork();
  if (child == 0) {
    pthread_t t;
    pthread_create(&t, nullptr, spin_thread, nullptr);
    while (spinning_tid == 0) sched_yield();
    pid_t tid = spinning_tid;
    if (write(report[1], &tid, sizeof tid) != sizeof tid) _exit(1);
    pthread_join(t, nullptr);
    _exit(0);
  }
  close(report[1]);
  pid_t tid = 0;
  ASSERT_EQ(read(report[0], &tid, sizeof tid), static_cast<ssize_t>(sizeof tid));
  close(report[0]);
  std::vector<StackSample> samples;
  Symbolizer symbolizer;
  for (int i = 0; i < 5; ++i) samples.push_back(user_sample(child, walk_frame_pointers(tid)));
  Profile p = build_profile(samples, symbolizer, nullptr);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  for (const ProfileSample& s : p.samples) {
    SCOPED_TRACE(describe(p, s));
    bool has_start_thread = false;
    for (uint32_t l : s.locations) has_start_thread |= name_of(p, l) == "start_thread";
    EXPECT_TRUE(has_start_thread);
    EXPECT_TRUE(is_thread_entry(outermost_named(p, s)));
    EXPECT_TRUE(s.complete);
  }
}

// The stack stage of trace -U: each distinct stack symbolized once.
TEST(stack_symbol_cache, symbolizes_a_repeated_stack_once) {
  const uint64_t ip = addr_of(reinterpret_cast<void*>(&leaf_function)) + 1;
  const uint64_t ret = addr_of(reinterpret_cast<void*>(&caller_function)) + 5;
  const std::vector<uint64_t> stack = {ip, ret};
  Symbolizer symbolizer;
  StackSymbolCache cache(2);
  const std::vector<Frame>* first = &cache.frames(symbolizer, getpid(), stack);
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].function, "uscope::(anonymous namespace)::leaf_function(int)");
  EXPECT_EQ((*first)[1].function, "uscope::(anonymous namespace)::caller_function(int)");
  EXPECT_EQ(&cache.frames(symbolizer, getpid(), stack), first);  // the same frames, not redone
  EXPECT_EQ(cache.size(), 1u);
  const std::vector<uint64_t> shorter = {ip};
  EXPECT_EQ(cache.frames(symbolizer, getpid(), shorter).size(), 1u);
  EXPECT_EQ(cache.size(), 2u);
  // Full: it starts over rather than grow.
  EXPECT_EQ(cache.frames(symbolizer, getpid() + 1, shorter).size(), 1u);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(stack_symbol_cache, keeps_no_stack_whose_names_may_still_change) {
  // Anonymous memory: JIT code whose perf-map line may not be written yet.
  void* anon = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  const std::vector<uint64_t> stack = {addr_of(anon) + 8};
  Symbolizer symbolizer;
  StackSymbolCache cache;
  const auto& frames = cache.frames(symbolizer, getpid(), stack);
  munmap(anon, 4096);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(symbol_text(frames[0]).find("[unknown: "), 0u) << symbol_text(frames[0]);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(stack_symbol_cache, printed_frames_are_bccs_or_say_why) {
  Frame f;
  f.object = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  f.function = "malloc";
  f.function_offset = 0x14;
  EXPECT_EQ(symbol_text(f), "malloc+0x14 [libc.so.6]");
  f.function.clear();
  f.miss = FrameMiss::NoSymbols;
  EXPECT_EQ(symbol_text(f), "[unknown: no symbols] [libc.so.6]");
}

}  // namespace
}  // namespace uscope
