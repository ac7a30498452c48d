// BpfObject configures a skeleton by BTF name before load: a wrong name or size must be an error
// that names it, never a silent write elsewhere in .rodata. Opening a skeleton needs no privilege.
#include "attach/bpf_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hit_counter.skel.h"

namespace uscope {
namespace {

using ::testing::HasSubstr;

BpfObject open_hit_counter() {
  auto obj = BpfObject::open(hit_counter__open, hit_counter__destroy, "the hit counter");
  EXPECT_TRUE(obj) << obj.error().message;
  return std::move(*obj);
}

TEST(bpf_loader, sets_rodata_by_name) {
  BpfObject obj = open_hit_counter();
  ASSERT_TRUE(obj.set_rodata("target_tgid", uint32_t{4242}));
  EXPECT_EQ(obj.skeleton<hit_counter>()->rodata->target_tgid, 4242u);
  ASSERT_TRUE(obj.set_target({.tgid = 77, .only_after_exec = true}));
  EXPECT_EQ(obj.skeleton<hit_counter>()->rodata->target_tgid, 77u);
  EXPECT_EQ(obj.skeleton<hit_counter>()->rodata->only_after_exec, 1u);
}

TEST(bpf_loader, refuses_an_unknown_rodata_name) {
  BpfObject obj = open_hit_counter();
  auto r = obj.set_rodata("no_such_variable", uint32_t{1});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "the hit counter has no read-only variable no_such_variable");
}

TEST(bpf_loader, refuses_a_rodata_value_of_the_wrong_size) {
  BpfObject obj = open_hit_counter();
  auto r = obj.set_rodata("target_tgid", uint64_t{1});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "the hit counter: target_tgid is 4 bytes, not 8");
  EXPECT_EQ(obj.skeleton<hit_counter>()->rodata->target_tgid, 0u) << "nothing written";
}

TEST(bpf_loader, names_an_unknown_map_or_program) {
  BpfObject obj = open_hit_counter();
  auto m = obj.set_max_entries("no_such_map", 1);
  ASSERT_FALSE(m);
  EXPECT_THAT(m.error().message, HasSubstr("no map no_such_map"));
  auto p = obj.set_autoload("no_such_program", false);
  ASSERT_FALSE(p);
  EXPECT_THAT(p.error().message, HasSubstr("no program no_such_program"));
  EXPECT_TRUE(obj.set_max_entries("hits", 3));
  EXPECT_EQ(obj.map_fd("no_such_map"), -1);
}

}  // namespace
}  // namespace uscope
