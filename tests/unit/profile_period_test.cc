// A continuous profile's periods: the delta of two cumulative snapshots (exact counts, losses,
// time span), the split by process and the cap on stacks, read back as folded stacks.
#include "model/profile_period.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "profile_fixture.h"

namespace uscope {
namespace {

using test::sample_profile;
using test::written;

// The same profile with its tables in reverse order and one function renamed: what a later
// snapshot of the same session may hold (the builder numbers tables anew on each read).
Profile renumbered(const Profile& p) {
  Profile out = p;
  const auto nf = static_cast<uint32_t>(p.functions.size());
  const auto nl = static_cast<uint32_t>(p.locations.size());
  std::reverse(out.functions.begin(), out.functions.end());
  std::reverse(out.locations.begin(), out.locations.end());
  for (ProfileLocation& loc : out.locations)
    for (ProfileLine& line : loc.lines) line.function = nf - 1 - line.function;
  for (ProfileSample& s : out.samples)
    for (uint32_t& l : s.locations) l = nl - 1 - l;
  return out;
}

uint64_t loss(const Profile& p, const std::string& cause) {
  for (const auto& [c, n] : p.losses)
    if (c == cause) return n;
  return UINT64_MAX;
}

TEST(profile_period, delta_holds_only_what_the_period_added) {
  Profile before = sample_profile();
  before.duration_ns = 10'000'000'000;
  Profile now = renumbered(sample_profile());
  now.duration_ns = 20'000'000'000;
  // Sample order of sample_profile(): [0] ...inner;do_syscall_64 x5, [1] ...inner x3,
  // [2] Interpreter x2, [3] worker recurse x1, [4] worker push_back x1.
  now.samples[0].count = 12;             // +7
  now.samples[1].count = 3;              // +0: not in the period
  now.samples[2].count = 2;              // +0
  now.samples[3].count = 4;              // +3
  now.samples[4].count = 1;              // +0
  ProfileSample fresh = now.samples[1];  // a stack first seen this period: outer;inner cut
  fresh.locations.pop_back();            // no _start
  fresh.complete = false;
  fresh.count = 6;
  now.samples.push_back(fresh);
  // Named differently in this snapshot: still the same frame (same address and kind).
  for (ProfileFunction& f : now.functions)
    if (f.name == "main") f.name = "main_renamed";
  now.losses = {{"stack_collided", 4}, {"user_stack_failed", 5}, {"map_full", 1}};

  Profile d = profile_delta(now, before);
  EXPECT_EQ(written(d, OutputFormat::Folded),
            "app;_start;main_renamed;outer;inner;do_syscall_64_[k] 7\n"
            "app;main_renamed;outer;inner 6\n"
            "worker;_start;main_renamed;recurse;recurse;recurse 3\n");
  EXPECT_EQ(d.total_samples(), 16u);
  // Only what the period's samples use: no Interpreter, libfoo.so or push_back.
  EXPECT_EQ(d.functions.size(), 6u);  // main inner outer do_syscall_64 _start recurse
  EXPECT_EQ(d.mappings.size(), 2u);   // app, kernel
  for (const ProfileMapping& m : d.mappings) EXPECT_NE(m.file, "/usr/lib/libfoo.so");
  EXPECT_EQ(d.locations.size(), 5u);  // L0 L1 L2 L5 L7: the new stack has only frames of these
  // Losses less the earlier ones, cause by cause; a new cause as it is.
  EXPECT_EQ(d.losses, (std::vector<std::pair<std::string, uint64_t>>{
                          {"stack_collided", 4}, {"user_stack_failed", 3}, {"map_full", 1}}));
  // The span between the snapshots.
  EXPECT_EQ(d.start_unix_ns, before.start_unix_ns + 10'000'000'000);
  EXPECT_EQ(d.duration_ns, 10'000'000'000);
  EXPECT_EQ(d.frequency_hz, 49u);
}

TEST(profile_period, delta_sums_samples_the_model_cannot_tell_apart) {
  Profile before = sample_profile();
  Profile now = sample_profile();
  now.duration_ns += 1;
  // Two samples of one stack (the kernel kept them apart by a state the model has not).
  now.samples.push_back(now.samples[3]);
  now.samples.back().count = 2;
  Profile d = profile_delta(now, before);
  EXPECT_EQ(written(d, OutputFormat::Folded), "worker;_start;main;recurse;recurse;recurse 2\n");
}

TEST(profile_period, delta_of_nothing_new_is_empty_and_another_session_counts_whole) {
  Profile p = sample_profile();
  Profile d = profile_delta(p, p);
  EXPECT_TRUE(d.samples.empty());
  EXPECT_TRUE(d.locations.empty());
  EXPECT_TRUE(d.functions.empty());
  EXPECT_TRUE(d.mappings.empty());
  EXPECT_EQ(loss(d, "user_stack_failed"), 0u);

  // The first period: nothing before.
  EXPECT_EQ(written(profile_delta(p, Profile{}), OutputFormat::Folded),
            written(p, OutputFormat::Folded));
  EXPECT_EQ(profile_delta(p, Profile{}).start_unix_ns, p.start_unix_ns);
  // A session started anew (the agent reloaded): its counts are not the old one's.
  Profile old = sample_profile();
  old.start_unix_ns -= 60'000'000'000;
  Profile whole = profile_delta(p, old);
  EXPECT_EQ(whole.total_samples(), 12u);
  EXPECT_EQ(loss(whole, "user_stack_failed"), 2u);
  EXPECT_EQ(whole.start_unix_ns, p.start_unix_ns);
  EXPECT_EQ(whole.duration_ns, p.duration_ns);
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
