// memleak's plan (plan/alloc_plan.h) for a command about to start: the allocator functions of the
// leaker fixture's libc, each with an entry probe and (allocating ones) a return probe at the
// function's first instruction, their cookies naming the function; and the refusal of a program
// that has no allocator uscope can follow (Go's), naming what it looked for and where.
#include "plan/alloc_plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

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
  ctx.main_executable = std::string(USCOPE_FIXTURE_DIR) + "/native/no_allocator";
  ObjectCache cache(ctx, std::make_shared<ObjectStore>());
  auto plan = plan_allocators(cache, ctx);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("looked for malloc, calloc, realloc"), std::string::npos)
      << plan.error().message;
  EXPECT_NE(plan.error().message.find("in no_allocator"), std::string::npos)
      << plan.error().message;
}

// A Go program's heap: Go's own sampler's functions, entry probes only (never a return probe on
// Go code), and where its rate is, at the address the symbol table gives.
TEST(alloc_plan, follows_a_go_programs_heap_through_its_own_sampler) {
  TargetContext ctx;
  ctx.main_executable = std::string(USCOPE_FIXTURE_DIR) + "/go/gohi";
  ObjectCache cache(ctx, std::make_shared<ObjectStore>());
  auto plan = plan_allocators(cache, ctx);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->sites.size(), 2u);
  for (const AttachSite& s : plan->sites) {
    EXPECT_FALSE(s.retprobe);
    EXPECT_TRUE(s.go_code);
  }
  EXPECT_EQ(ALLOC_COOKIE_FN(plan->sites[0].cookie), uint32_t{ALLOC_GO_SAMPLE});
  EXPECT_EQ(ALLOC_COOKIE_FN(plan->sites[1].cookie), uint32_t{ALLOC_GO_FREE_SPECIAL});
  // Where nm says the rate is (a non-PIE Go program: the address it runs at).
  std::string cmd =
      "nm " + ctx.main_executable + " | awk '$3 == \"runtime.MemProfileRate\" {print $1}'";
  std::FILE* nm = popen(cmd.c_str(), "r");
  ASSERT_NE(nm, nullptr);
  char line[64] = {};
  ASSERT_NE(std::fgets(line, sizeof line, nm), nullptr);
  pclose(nm);
  EXPECT_EQ(plan->go_rate_address, std::stoull(line, nullptr, 16));
  EXPECT_FALSE(plan->go_rate_pie);
}

}  // namespace
}  // namespace uscope
