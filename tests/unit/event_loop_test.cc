// Sessions installed side by side on one runner (the agent's way): each one's stop goes to its
// own callback, and the runner goes on until it is stopped itself.
#include "collect/event_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

namespace uscope {
namespace {

TEST(event_loop, sessions_on_a_shared_runner_stop_on_their_own) {
  auto r = Runner::create();
  ASSERT_TRUE(r) << r.error().message;
  int gate[2];
  ASSERT_EQ(pipe2(gate, O_CLOEXEC), 0);
  const pid_t child = fork();
  if (child == 0) {
    char c;
    (void)!read(gate[0], &c, 1);
    _exit(3);
  }
  close(gate[0]);
  EventLoopOptions exits;
  exits.watch_pid = child;
  exits.watch_is_child = true;
  exits.runner = r->get();
  EventLoopOptions deadline;
  deadline.duration = std::chrono::milliseconds(20);
  deadline.runner = r->get();
  auto a = EventLoop::create(exits);
  auto b = EventLoop::create(deadline);
  ASSERT_TRUE(a && b);
  std::map<char, StopReason> stopped;
  a->install({}, [&](StopReason why) { stopped.emplace('a', why); });
  b->install({}, [&](StopReason why) { stopped.emplace('b', why); });
  (*r)->at(Runner::Clock::now(), [&] { (void)!write(gate[1], "x", 1); });
  (*r)->each_turn([&] {
    if (stopped.size() == 2) (*r)->stop(StopReason::Quit);
    return false;
  });
  EXPECT_EQ((*r)->run(), StopReason::Quit);
  EXPECT_EQ(stopped['a'], StopReason::TargetExited);
  EXPECT_EQ(stopped['b'], StopReason::Duration);
  EXPECT_EQ(a->child_status(), 3);
  a->uninstall();
  b->uninstall();
  close(gate[1]);
}

}  // namespace
}  // namespace uscope
