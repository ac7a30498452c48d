// The kernel's process events as the agent reads them: a child's exec and exit arrive with its
// pid, its threads' exits do not, and the socket is bounded and non-blocking.
#include "discover/process_events.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace uscope {
namespace {

// Reads events into `seen` until `want` is among them (the host runs other processes too; one
// read may bring several of the child's events at once).
bool wait_for(ProcessEvents& e, ProcessEvent want, std::vector<ProcessEvent>& seen) {
  auto in_seen = [&] {
    return std::any_of(seen.begin(), seen.end(), [&](const ProcessEvent& ev) {
      return ev.kind == want.kind && ev.pid == want.pid;
    });
  };
  while (!in_seen()) {
    pollfd p{e.fd(), POLLIN, 0};
    if (poll(&p, 1, 60'000) <= 0) return false;  // a minute without any event on the host
    for (const ProcessEvent& ev : e.read()) seen.push_back(ev);
  }
  return true;
}

TEST(process_events, exec_and_exit_of_a_child) {
  auto events = ProcessEvents::open();
  ASSERT_TRUE(events) << events.error().message;
  // The child execs /bin/sh, which runs `exit 3`.
  const auto before = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", "exit 3", nullptr);
    _exit(127);
  }
  std::vector<ProcessEvent> seen;
  EXPECT_TRUE(wait_for(**events, {ProcessEvent::Exec, child}, seen));
  EXPECT_TRUE(wait_for(**events, {ProcessEvent::Exit, child}, seen));
  int status = 0;
  waitpid(child, &status, 0);
  const auto after = std::chrono::steady_clock::now();
  EXPECT_EQ(WEXITSTATUS(status), 3);
  // Each is stamped on this process's monotonic clock, between the fork and the reaping, the
  // exec first (the agent tells an exec it has already seen in /proc by this time).
  auto at = [&](ProcessEvent::Kind k) {
    return std::find_if(seen.begin(), seen.end(),
                        [&](const ProcessEvent& e) { return e.pid == child && e.kind == k; })
        ->at;
  };
  EXPECT_GE(at(ProcessEvent::Exec), before);
  EXPECT_LE(at(ProcessEvent::Exec), at(ProcessEvent::Exit));
  EXPECT_LE(at(ProcessEvent::Exit), after);
  // Exactly one exec and one exit of the child (its fork is not an exec).
  EXPECT_EQ(std::count_if(seen.begin(), seen.end(),
                          [&](const ProcessEvent& e) { return e.pid == child; }),
            2);
  EXPECT_EQ((*events)->take_overflows(), 0u);
}

TEST(process_events, a_threads_exit_is_not_its_process_exit) {
  auto events = ProcessEvents::open();
  ASSERT_TRUE(events) << events.error().message;
  // python3.11 starts a thread that ends, then the process prints and waits for stdin to close.
  int to_child[2], from_child[2];
  ASSERT_EQ(pipe2(to_child, O_CLOEXEC), 0);  // the child keeps only its dup2 copies
  ASSERT_EQ(pipe2(from_child, O_CLOEXEC), 0);
  const pid_t child = fork();
  if (child == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    execl("/usr/bin/python3.11", "python3.11", "-c",
          "import threading,sys,os\n"
          "t=threading.Thread(target=lambda: None); t.start(); t.join()\n"
          "print(t.native_id, flush=True)\n"
          "sys.stdin.read()\n",
          nullptr);
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  char buf[64] = {};
  ASSERT_GT(::read(from_child[0], buf, sizeof buf - 1), 0);
  const pid_t thread = std::atoi(buf);
  ASSERT_GT(thread, 0);
  ASSERT_NE(thread, child);
  close(to_child[1]);  // the child ends
  std::vector<ProcessEvent> seen;
  EXPECT_TRUE(wait_for(**events, {ProcessEvent::Exit, child}, seen));
  waitpid(child, nullptr, 0);
  for (const ProcessEvent& e : seen) EXPECT_NE(e.pid, thread) << "the thread's exit was reported";
}

}  // namespace
}  // namespace uscope
