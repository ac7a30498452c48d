// The runner every command's jobs share: several watched fds, timers and per-turn work on one
// loop, stop signals owned by the runner.
#include "util/runner.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "util/unique_fd.h"

namespace uscope {
namespace {

struct Pipe {
  UniqueFd read, write;
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    read.reset(fds[0]);
    write.reset(fds[1]);
  }
  void put(char c) { ASSERT_EQ(::write(write.get(), &c, 1), 1); }
  std::string take() {
    char buf[64];
    ssize_t n = ::read(read.get(), buf, sizeof buf);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }
};

TEST(runner, serves_two_watches_side_by_side) {
  auto r = Runner::create();
  ASSERT_TRUE(r) << r.error().message;
  Pipe a, b;
  std::string seen;
  (*r)->watch(a.read.get(), POLLIN, [&](short) {
    seen += "a" + a.take();
    b.put('2');
  });
  (*r)->watch(b.read.get(), POLLIN, [&](short) {
    seen += "b" + b.take();
    (*r)->stop(StopReason::MaxEvents);
  });
  a.put('1');
  EXPECT_EQ((*r)->run(), StopReason::MaxEvents);
  EXPECT_EQ(seen, "a1b2");
}

TEST(runner, runs_timers_in_order_and_the_first_stop_wins) {
  auto r = Runner::create();
  ASSERT_TRUE(r) << r.error().message;
  std::vector<int> order;
  auto now = Runner::Clock::now();
  (*r)->at(now, [&] { order.push_back(1); });
  (*r)->at(now, [&] {
    order.push_back(2);
    (*r)->stop(StopReason::Duration);
    (*r)->stop(StopReason::Quit);
  });
  (*r)->at(now, [&] { order.push_back(3); });
  EXPECT_EQ((*r)->run(), StopReason::Duration);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  // The next run takes the timer left over, and the cancelled one never runs.
  auto cancelled = (*r)->at(now, [&] { order.push_back(4); });
  (*r)->cancel(cancelled);
  (*r)->at(now, [&] { (*r)->stop(StopReason::Quit); });
  EXPECT_EQ((*r)->run(), StopReason::Quit);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(runner, repeats_a_periodic_timer_until_cancelled) {
  auto r = Runner::create();
  ASSERT_TRUE(r) << r.error().message;
  int ticks = 0;
  Runner::Id id = 0;
  id = (*r)->every(std::chrono::milliseconds(1), [&] {
    if (++ticks == 3) {
      (*r)->cancel(id);
      (*r)->at(Runner::Clock::now(), [&] { (*r)->stop(StopReason::Duration); });
    }
  });
  EXPECT_EQ((*r)->run(), StopReason::Duration);
  EXPECT_EQ(ticks, 3);
}

TEST(runner, runs_work_again_at_once_while_it_has_more) {
  auto r = Runner::create();
  ASSERT_TRUE(r) << r.error().message;
  int batches = 0;
  (*r)->each_turn([&] {
    if (++batches == 5) (*r)->stop(StopReason::MaxEvents);
    return true;  // more ready: no wait between turns (no timer or fd would wake it)
  });
  EXPECT_EQ((*r)->run(), StopReason::MaxEvents);
  EXPECT_EQ(batches, 5);
}

TEST(runner, a_stop_signal_ends_the_run_and_hangup_can_be_taken) {
  auto r = Runner::create();
  ASSERT_TRUE(r) << r.error().message;
  int hangups = 0;
  (*r)->on_hangup([&] { ++hangups; });
  (*r)->at(Runner::Clock::now(), [] { kill(getpid(), SIGHUP); });
  Runner::Id term = (*r)->every(std::chrono::milliseconds(1), [&] {
    if (hangups) kill(getpid(), SIGTERM);
  });
  EXPECT_EQ((*r)->run(), StopReason::Signal);
  EXPECT_EQ(hangups, 1);
  (*r)->cancel(term);
}

TEST(runner, a_watch_removed_by_an_earlier_callback_is_not_called) {
  auto r = Runner::create();
  ASSERT_TRUE(r) << r.error().message;
  Pipe a, b;
  bool b_called = false;
  Runner::Id wb = 0;
  (*r)->watch(a.read.get(), POLLIN, [&](short) { (*r)->unwatch(wb); });
  wb = (*r)->watch(b.read.get(), POLLIN, [&](short) { b_called = true; });
  (*r)->each_turn([&] {
    (*r)->stop(StopReason::Quit);
    return false;
  });
  a.put('x');
  b.put('y');
  EXPECT_EQ((*r)->run(), StopReason::Quit);
  EXPECT_FALSE(b_called);
}

}  // namespace
}  // namespace uscope
