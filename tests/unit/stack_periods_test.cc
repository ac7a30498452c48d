// A continuous profile's periods from the kernel's cumulative counts: each read less the last,
// stack by stack, before anything is symbolized.
#include <gtest/gtest.h>

#include "collect/stack_samples.h"

namespace uscope {
namespace {

StackSample sample(pid_t pid, std::vector<uint64_t> user, uint64_t count) {
  StackSample s;
  s.pid = pid;
  s.comm = "p" + std::to_string(pid);
  s.user = std::move(user);
  s.count = count;
  return s;
}

TEST(stack_periods, each_period_holds_what_the_counts_added_since_the_last) {
  StackPeriods periods;
  StackAggregator first;
  first.add(sample(1, {0x10, 0x20}, 5));
  first.add(sample(2, {0x30}, 2));
  auto p1 = periods.next(first);
  ASSERT_EQ(p1.size(), 2u);
  EXPECT_EQ(p1[0].count, 5u);
  EXPECT_EQ(p1[1].count, 2u);

  StackAggregator second;  // the same counts grown, one stack unchanged, one new
  second.add(sample(1, {0x10, 0x20}, 12));
  second.add(sample(2, {0x30}, 2));
  second.add(sample(1, {0x10, 0x28}, 3));
  auto p2 = periods.next(second);
  ASSERT_EQ(p2.size(), 2u);
  EXPECT_EQ(p2[0].user, (std::vector<uint64_t>{0x10, 0x20}));
  EXPECT_EQ(p2[0].count, 7u);
  EXPECT_EQ(p2[1].user, (std::vector<uint64_t>{0x10, 0x28}));
  EXPECT_EQ(p2[1].count, 3u);

  // Another process with the same frames is another stack.
  StackAggregator third;
  third.add(sample(1, {0x10, 0x20}, 12));
  third.add(sample(3, {0x10, 0x20}, 4));
  auto p3 = periods.next(third);
  ASSERT_EQ(p3.size(), 1u);
  EXPECT_EQ(p3[0].pid, 3);
  EXPECT_EQ(p3[0].count, 4u);
}

}  // namespace
}  // namespace uscope
