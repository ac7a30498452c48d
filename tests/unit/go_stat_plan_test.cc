// Where `uscope stat` finds runtime.allgs in a Go binary without its symbol table: in the code of
// runtime.forEachG, which loads the slice header's pointer and length. Checked on Go 1.19's code
// (bytes from `go tool objdump -s runtime.forEachG`) and on the gostack fixture, whose symbol
// table (kept in the unstripped build) says where runtime.allgs is.
#include "plan/go_stat_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "discover/elf_file.h"
#include "plan/site_cost.h"

namespace uscope {
namespace {

std::vector<uint8_t> hex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2)
    out.push_back(std::stoul(s.substr(i, 2), nullptr, 16));
  return out;
}

// runtime.forEachG of Go 1.19.8 at 0x435340:
//   lea rax, [rip + ...]          runtime.allglock
//   call runtime.lock2
//   mov rcx, [rip + 0x1031df]     runtime.allgs      (0x538550)
//   mov rdx, [rip + 0x1031db]     runtime.allgs+8    (0x538558)
//   ... the loop, unlock2, ret, morestack
const char* kForEachG119 =
    "493b66100f86850000004883ec2848896c2420488d6c2420488944243090488d058b1e1300e8b64cfdff488b0ddf"
    "31100048894c2418488b15db311000488954241031c0eb284889442408488b1cc1488b542430488b324889d8ffd6"
    "488b44240848ffc0488b4c2418488b5424104839d07cd39090488d05341e13000f1f4000e83b4efdff488b6c2420"
    "4883c428c34889442408e8c7610200488b4424086690e95bffffff";

TEST(go_stat_plan, finds_allgs_in_the_code_of_for_each_g) {
  auto code = hex(kForEachG119);
  ASSERT_EQ(code.size(), 0xa5u);
  EXPECT_EQ(allgs_in_for_each_g(code, 0x435340), 0x538550u);
}

TEST(go_stat_plan, lists_the_rip_relative_loads_of_a_function) {
  auto code = hex(kForEachG119);
  auto loads = rip_relative_loads(code, 0x435340);
  ASSERT_EQ(loads.size(), 2u);  // the two lea of allglock are not loads
  EXPECT_EQ(loads[0].pc, 0x43536au);
  EXPECT_EQ(loads[0].target, 0x538550u);
  EXPECT_EQ(loads[0].size, 8);
  EXPECT_EQ(loads[1].target, 0x538558u);
}

TEST(go_stat_plan, refuses_code_without_exactly_one_slice_header) {
  // mov rcx, [rip + 0x10]: one word, no length beside it.
  EXPECT_EQ(allgs_in_for_each_g(hex("488b0d10000000"), 0x1000), std::nullopt);
  // Two headers (0x1017/0x101f and 0x2015/0x201d): ambiguous.
  EXPECT_EQ(
      allgs_in_for_each_g(hex("488b0d10000000488b1511000000488b0d00100000488b1501100000"), 0x1000),
      std::nullopt);
  EXPECT_EQ(allgs_in_for_each_g({}, 0x1000), std::nullopt);
}

// The address found in the code is the one the symbol table names, in a binary that has both.
TEST(go_stat_plan, allgs_from_code_matches_the_symbol_table) {
  auto elf = ElfFile::open(std::string(USCOPE_FIXTURE_DIR) + "/go/gostack");
  ASSERT_TRUE(elf) << elf.error().message;
  auto syms = elf->symbols();
  ASSERT_TRUE(syms) << syms.error().message;
  std::optional<uint64_t> allgs;
  std::optional<ElfSymbol> for_each_g;
  for (const auto& s : *syms) {
    if (s.name == "runtime.allgs") allgs = s.addr;
    if (s.name == "runtime.forEachG") for_each_g = s;
  }
  ASSERT_TRUE(allgs);
  ASSERT_TRUE(for_each_g);
  EXPECT_EQ(
      allgs_in_for_each_g(elf->code_bytes(for_each_g->addr, for_each_g->size), for_each_g->addr),
      *allgs);
}

}  // namespace
}  // namespace uscope
