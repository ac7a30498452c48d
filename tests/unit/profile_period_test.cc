// A continuous profile's periods: the split by process and the cap on stacks, read back as folded
// stacks (the periods themselves: stack_periods_test).
#include "model/profile_period.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "profile_fixture.h"

namespace uscope {
namespace {

using test::sample_profile;
using test::written;

uint64_t loss(const Profile& p, const std::string& cause) {
  for (const auto& [c, n] : p.losses)
    if (c == cause) return n;
  return UINT64_MAX;
}

TEST(profile_period, split_by_process_keeps_each_process_own_tables) {
  std::vector<Profile> parts = split_by_process(sample_profile());
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(written(parts[0], OutputFormat::Folded),
            "app;[unknown: no symbols in libfoo.so];Interpreter_[j] 2\n"
            "app;_start;main;outer;inner 3\n"
            "app;_start;main;outer;inner;do_syscall_64_[k] 5\n");
  EXPECT_EQ(written(parts[1], OutputFormat::Folded),
            "worker;_start;main;recurse;recurse;recurse 1\n"
            "worker;_start;main;std::vector<int>::push_back(int&&) 1\n");
  EXPECT_EQ(parts[0].samples[0].pid, 42);
  EXPECT_EQ(parts[1].samples[0].pid, 43);
  EXPECT_EQ(parts[1].functions.size(), 4u);  // recurse main _start push_back
  EXPECT_EQ(parts[1].locations.size(), 4u);  // L7 L0 L5 L6
  ASSERT_EQ(parts[1].mappings.size(), 1u);
  EXPECT_EQ(parts[1].mappings[0].file, "/usr/bin/app");
  for (const ProfileLocation& l : parts[1].locations) EXPECT_EQ(l.mapping, 1u);
  EXPECT_EQ(parts[0].mappings.size(), 4u);
  EXPECT_TRUE(parts[0].losses.empty());
  EXPECT_EQ(parts[0].frequency_hz, 49u);
  EXPECT_EQ(parts[1].start_unix_ns, sample_profile().start_unix_ns);
}

TEST(profile_period, cap_keeps_the_heaviest_stacks_and_counts_the_rest) {
  Profile p = sample_profile();
  StackCap cap = cap_stacks(p, 2);
  EXPECT_EQ(cap.stacks_dropped, 3u);
  EXPECT_EQ(cap.samples_dropped, 4u);  // 2 + 1 + 1
  EXPECT_EQ(written(p, OutputFormat::Folded),
            "app;_start;main;outer;inner 3\n"
            "app;_start;main;outer;inner;do_syscall_64_[k] 5\n");
  EXPECT_EQ(loss(p, kStacksOverLimit), 4u);
  EXPECT_EQ(loss(p, "user_stack_failed"), 2u);  // the others stay
  EXPECT_EQ(p.functions.size(), 5u);

  Profile whole = sample_profile();
  EXPECT_EQ(cap_stacks(whole, 5).stacks_dropped, 0u);
  EXPECT_EQ(whole.samples.size(), 5u);
  EXPECT_EQ(loss(whole, kStacksOverLimit), 0u);
}

}  // namespace
}  // namespace uscope
