// What Python 3.8-3.10's threads are told apart by (no native_thread_id there): each thread's fs
// base, which on x86-64 is its TCB, what pthread_self() returns and what PyThreadState.thread_id
// holds. `dump` reads it through the task iterator (collect/thread_regs.h), the profiler's BPF
// walker at the offset task_fsbase_offset() finds in the kernel's BTF; checked here against the
// threads' own pthread_self() and against bpftool's reading of the same BTF.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "attach/task_fsbase.h"
#include "collect/thread_regs.h"
#include "e2e_support.h"

namespace uscope {
namespace {

struct Seen {
  pid_t tid = 0;
  uint64_t self = 0;
};

Seen here() {
  return {static_cast<pid_t>(syscall(SYS_gettid)), static_cast<uint64_t>(pthread_self())};
}

TEST(thread_fs_base, each_thread_reads_what_its_pthread_self_returns) {
  std::mutex m;
  std::condition_variable cv;
  std::vector<Seen> seen{here()};
  bool done = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i)
    threads.emplace_back([&] {
      std::unique_lock lock(m);
      seen.push_back(here());
      cv.notify_all();
      cv.wait(lock, [&] { return done; });
    });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return seen.size() == 4; });
  }
  auto regs = read_thread_regs(getpid());
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  ASSERT_TRUE(regs) << regs.error().message;
  for (const Seen& s : seen) {
    const ThreadRegs* r = nullptr;
    for (const auto& t : *regs)
      if (t.tid == s.tid) r = &t;
    ASSERT_NE(r, nullptr) << "thread " << s.tid << " not listed";
    EXPECT_EQ(r->fsbase, s.self) << "thread " << s.tid;
  }
}

// bpftool's raw dump: "[114] STRUCT 'task_struct' size=3264 vlen=248", then its members, one a
// line: "\t'thread' type_id=221 bits_offset=24704".
uint64_t member_bits(const std::string& raw, const std::string& type, const std::string& member) {
  auto at = raw.find("] STRUCT '" + type + "' ");
  if (at == std::string::npos) return ~0ull;
  std::istringstream lines(raw.substr(raw.find('\n', at) + 1));
  const std::regex re("^\\t'" + member + "' type_id=\\d+ bits_offset=(\\d+)");
  std::smatch m;
  for (std::string line; std::getline(lines, line) && line.starts_with("\t");)
    if (std::regex_search(line, m, re)) return std::stoull(m[1]);
  return ~0ull;
}

TEST(thread_fs_base, the_walkers_offset_is_task_struct_thread_fsbase_as_bpftool_reads_it) {
  auto offset = task_fsbase_offset();
  ASSERT_TRUE(offset) << offset.error().message;
  auto raw =
      e2e::run({"bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "raw"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  uint64_t thread = member_bits(raw.out, "task_struct", "thread");
  uint64_t fsbase = member_bits(raw.out, "thread_struct", "fsbase");
  ASSERT_NE(thread, ~0ull) << "bpftool shows no task_struct.thread";
  ASSERT_NE(fsbase, ~0ull) << "bpftool shows no thread_struct.fsbase";
  EXPECT_EQ(*offset, (thread + fsbase) / 8);
}

}  // namespace
}  // namespace uscope
