// The off-CPU plan of a Go program's goroutines (plan/go_park_plan.h): entry probes on
// runtime.gopark and runtime.execute, inside those functions as nm places them, never a return
// probe; and Go's wait reasons as the toolchain's own runtime source (runtime2.go) spells them,
// read from the program, and from a stripped build of it, which has no symbol for the table.
#include "plan/go_park_plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/profile.h"
#include "discover/object_store.h"

namespace uscope {
namespace {

std::string run(const std::string& cmd) {
  std::string out;
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// Go's waitReason texts by number, from the runtime source of the toolchain that built the
// fixtures: the constants' order (iota from waitReasonZero) and the waitReasonStrings literal.
std::vector<std::string> reasons_from_go_source() {
  std::string root = run("go env GOROOT");
  while (!root.empty() && root.back() == '\n') root.pop_back();
  std::ifstream in(root + "/src/runtime/runtime2.go");
  std::vector<std::string> order;
  std::map<std::string, std::string> text;
  std::string line;
  bool in_consts = false, in_strings = false;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first;
    words >> first;
    if (line.find("waitReasonZero ") != std::string::npos && line.find("iota") != std::string::npos)
      in_consts = true;
    if (line.starts_with("var waitReasonStrings")) in_strings = true;
    if (first == ")" || first == "}") in_consts = in_strings = false;
    if (in_consts && first.starts_with("waitReason")) order.push_back(first);
    if (in_strings && first.starts_with("waitReason") && first.back() == ':') {
      auto q = line.find('"');
      text[first.substr(0, first.size() - 1)] = line.substr(q + 1, line.rfind('"') - q - 1);
    }
  }
  std::vector<std::string> out;
  for (const auto& name : order) out.push_back(text[name]);
  return out;
}

GoParkPlan plan_of(const std::string& fixture) {
  TargetContext ctx;
  ctx.main_executable = std::string(USCOPE_FIXTURE_DIR) + "/" + fixture;
  ObjectCache cache(ctx, std::make_shared<ObjectStore>());
  auto plan = plan_go_parks(cache);
  EXPECT_TRUE(plan) << plan.error().message;
  return plan ? *plan : GoParkPlan{};
}

TEST(go_park_plan, probes_gopark_and_execute_inside_them_with_no_return_probe) {
  const std::string path = std::string(USCOPE_FIXTURE_DIR) + "/go/gowaits";
  auto plan = plan_of("go/gowaits");
  ASSERT_EQ(plan.sites.size(), 2u);
  // A non-PIE Go program's first PT_LOAD maps file offset 0 at 0x400000.
  for (auto [cookie, name] : {std::pair{uint64_t{GO_SCHED_PARK}, "runtime.gopark"},
                              std::pair{uint64_t{GO_SCHED_EXECUTE}, "runtime.execute"}}) {
    std::istringstream nm(run("nm -S " + path + " | awk '$4 == \"" + name + "\" {print $1, $2}'"));
    std::string addr, size;
    ASSERT_TRUE(nm >> addr >> size) << name;
    const uint64_t start = std::stoull(addr, nullptr, 16) - 0x400000;
    const uint64_t end = start + std::stoull(size, nullptr, 16);
    const AttachSite* site = nullptr;
    for (const auto& s : plan.sites)
      if (s.cookie == cookie) site = &s;
    ASSERT_NE(site, nullptr) << name;
    EXPECT_GE(site->offset, start) << name;
    EXPECT_LT(site->offset, end) << name;
    EXPECT_FALSE(site->retprobe);
    EXPECT_TRUE(site->go_code);
  }
}

TEST(go_park_plan, wait_reasons_are_gos_own_also_in_a_stripped_program) {
  auto expected = reasons_from_go_source();
  ASSERT_GT(expected.size(), 20u);
  ASSERT_EQ(expected[0], "");
  for (const char* fixture : {"go/gowaits", "go/gowaits_stripped"}) {
    auto plan = plan_of(fixture);
    ASSERT_EQ(plan.wait_reasons.size(), expected.size()) << fixture;
    for (size_t i = 1; i < expected.size(); ++i)
      EXPECT_EQ(plan.wait_reasons[i], expected[i]) << fixture << " reason " << i;
  }
}

TEST(go_park_plan, a_program_not_in_go_has_nothing_to_follow) {
  auto plan = plan_of("native/leaker");
  EXPECT_TRUE(plan.sites.empty());
  EXPECT_TRUE(plan.wait_reasons.empty());
}

}  // namespace
}  // namespace uscope
