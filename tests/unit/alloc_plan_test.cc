// memleak's plan (plan/alloc_plan.h) for a command about to start: the allocator functions of the
// leaker fixture's libc, each with an entry probe and (allocating ones) a return probe at the
// function's first instruction, their cookies naming the function; and the refusal of a program
// that has no allocator uscope can follow (Go's), naming what it looked for and where.
#include "plan/alloc_plan.h"

#include <gtest/gtest.h>

#include <map>

#include "bpf/profile.h"
#include "discover/object_store.h"

namespace uscope {
namespace {

TEST(alloc_plan, follows_libcs_allocator_for_a_dynamically_linked_program) {
  TargetContext ctx;
  ctx.main_executable = std::string(USCOPE_FIXTURE_DIR) + "/native/leaker";
  ObjectCache cache(ctx, std::make_shared<ObjectStore>());
  auto plan = plan_allocators(cache, ctx);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->missing.empty());
  ASSERT_EQ(plan->found.size(), allocator_functions().size());
  for (const auto& line : plan->found)
    EXPECT_NE(line.find(" in libc.so.6 (+0x"), std::string::npos) << line;
  std::map<uint32_t, int> entries, returns;
  for (const AttachSite& s : plan->sites) {
    EXPECT_NE(s.display_path.find("libc.so.6"), std::string::npos);
    const uint32_t fn = ALLOC_COOKIE_FN(s.cookie);
    ASSERT_LT(fn, uint32_t{ALLOC_NUM_FNS});
    if (s.retprobe) {
      ++returns[fn];
      EXPECT_EQ(ALLOC_COOKIE_SP_DELTA(s.cookie), 0);  // the call's rsp: at the first instruction
    } else {
      ++entries[fn];
    }
  }
  EXPECT_EQ(entries[ALLOC_FREE], 1);
  EXPECT_EQ(returns[ALLOC_FREE], 0);  // a free has nothing to return
  EXPECT_EQ(entries[ALLOC_MALLOC], 1);
  EXPECT_EQ(returns[ALLOC_MALLOC], 1);
  EXPECT_EQ(entries[ALLOC_ALIGNED], 2);  // aligned_alloc and memalign
}

TEST(alloc_plan, refuses_a_program_without_an_allocator_it_can_follow) {
  TargetContext ctx;
  ctx.main_executable = std::string(USCOPE_FIXTURE_DIR) + "/go/gohi";
  ObjectCache cache(ctx, std::make_shared<ObjectStore>());
  auto plan = plan_allocators(cache, ctx);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("looked for malloc, calloc, realloc"), std::string::npos)
      << plan.error().message;
  EXPECT_NE(plan.error().message.find("in gohi"), std::string::npos) << plan.error().message;
}

}  // namespace
}  // namespace uscope
