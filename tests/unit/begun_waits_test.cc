// still_waiting(): a thread blocked in a pipe read, told from one that has run since, by its
// state and its count of switches as the kernel keeps them (getrusage's, for the thread itself).
#include "collect/begun_waits.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "bpf/profile.h"

namespace uscope {
namespace {

char thread_state(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = stat.rfind(')');
  return at != std::string::npos && at + 2 < stat.size() ? stat[at + 2] : '?';
}

// Blocked in read(2): asleep, and in system call 0.
bool blocked_in_read(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  std::string nr;
  return in >> nr && nr == "0" && thread_state(tid) == 'S';
}

TEST(begun_waits, still_waiting_knows_the_wait_it_was_read_in) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::atomic<pid_t> tid{0};
  std::atomic<uint64_t> before{0};
  std::thread blocked([&] {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    before = static_cast<uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw);
    tid = gettid();
    char c;
    while (read(fds[0], &c, 1) < 0) {
    }
  });
  while (tid == 0 || !blocked_in_read(tid)) std::this_thread::yield();
  // Its switches now: at least one more than before it blocked (the block), maybe more (a
  // preemption in between). Exactly one count is the wait's.
  int matches = 0;
  uint64_t count = 0;
  for (uint64_t c = before + 1; c < before + 10000; ++c)
    if (still_waiting(getpid(), tid, c)) {
      ++matches;
      count = c;
    }
  EXPECT_EQ(matches, 1);
  EXPECT_FALSE(still_waiting(getpid(), tid, before));
  // Woken and gone: not waiting.
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  const pid_t gone = tid;
  blocked.join();
  EXPECT_FALSE(still_waiting(getpid(), gone, count));
  // The running thread itself never waits.
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  EXPECT_FALSE(
      still_waiting(getpid(), gettid(), static_cast<uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw)));
  close(fds[0]);
  close(fds[1]);
}

TEST(begun_waits, the_reason_is_the_system_call_a_wait_is_in) {
  EXPECT_EQ(offcpu_reason_of(OFFCPU_TASK_INTERRUPTIBLE, 0), OFFCPU_IO);           // read
  EXPECT_EQ(offcpu_reason_of(OFFCPU_TASK_INTERRUPTIBLE, 202), OFFCPU_LOCK);       // futex
  EXPECT_EQ(offcpu_reason_of(OFFCPU_TASK_INTERRUPTIBLE, 230), OFFCPU_SLEEP);      // clock_nanosleep
  EXPECT_EQ(offcpu_reason_of(OFFCPU_TASK_INTERRUPTIBLE, 61), OFFCPU_CHILD);       // wait4
  EXPECT_EQ(offcpu_reason_of(OFFCPU_TASK_INTERRUPTIBLE, 128), OFFCPU_OTHER);      // rt_sigtimedwait
  EXPECT_EQ(offcpu_reason_of(OFFCPU_TASK_UNINTERRUPTIBLE, -1), OFFCPU_DISK);      // a page fault
  EXPECT_EQ(offcpu_reason_of(0x8 | OFFCPU_TASK_INTERRUPTIBLE, 0), OFFCPU_OTHER);  // traced
  EXPECT_EQ(offcpu_reason_of(0, 0), OFFCPU_RUN_QUEUE);
}

}  // namespace
}  // namespace uscope
