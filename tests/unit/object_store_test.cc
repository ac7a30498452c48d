// The one object cache: keyed by build-id (or file identity), shared across paths, bounded.
#include "discover/object_store.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace uscope {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string fixture(const std::string& name) {
  return std::string(USCOPE_FIXTURE_DIR) + "/elf/" + name;
}

TEST(object_store, two_paths_to_one_file_share_one_entry) {
  TempDir dir;
  const std::string a = dir.str() + "/liba.so";
  const std::string b = dir.str() + "/libb.so";
  fs::copy_file(fixture("libfixture.so"), a);
  fs::create_hard_link(a, b);
  ObjectStore store;
  auto first = store.open(a);
  auto second = store.open(b);
  auto via_root = store.open("/proc/self/root" + fs::canonical(a).string());
  ASSERT_TRUE(first && second && via_root) << (first ? "" : first.error().message);
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(first->get(), via_root->get());
  EXPECT_EQ(store.size(), 1u);
  // One symbol table, however many paths (and processes) reach the file.
  auto s1 = (*first)->symbols();
  auto s2 = (*second)->symbols();
  ASSERT_TRUE(s1 && s2);
  EXPECT_EQ(*s1, *s2);
  EXPECT_EQ((*first)->key(), "build-id:" + *(*first)->elf().build_id());
}

TEST(object_store, copies_of_one_build_share_one_entry) {
  TempDir dir;
  const std::string copy = dir.str() + "/hello_copy";
  fs::copy_file(fixture("hello_pie"), copy);
  ObjectStore store;
  auto original = store.open(fixture("hello_pie"));
  auto copied = store.open(copy);
  ASSERT_TRUE(original && copied);
  EXPECT_EQ(original->get(), copied->get());
  EXPECT_EQ(store.size(), 1u);
}

TEST(object_store, eviction_keeps_the_bound_and_spares_holders) {
  ObjectStore store(2);
  auto first = store.open(fixture("hello_pie"));
  ASSERT_TRUE(first);
  ASSERT_TRUE(store.open(fixture("hello_nopie")));
  ASSERT_TRUE(store.open(fixture("libfixture.so")));
  ASSERT_TRUE(store.open(fixture("widget")));
  EXPECT_EQ(store.size(), 2u);
  // The least recently used went; whoever still holds it keeps a working object.
  EXPECT_TRUE((*first)->symbols());
  auto again = store.open(fixture("hello_pie"));
  ASSERT_TRUE(again);
  EXPECT_NE(again->get(), first->get());
  EXPECT_EQ(store.size(), 2u);
}

TEST(object_store, recently_used_entries_survive_eviction) {
  ObjectStore store(2);
  auto pie = store.open(fixture("hello_pie"));
  ASSERT_TRUE(pie);
  ASSERT_TRUE(store.open(fixture("hello_nopie")));
  ASSERT_TRUE(store.open(fixture("hello_pie")));  // now the most recent
  ASSERT_TRUE(store.open(fixture("widget")));     // evicts hello_nopie
  auto again = store.open(fixture("hello_pie"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get(), pie->get());
}

TEST(object_store, object_without_build_id_is_keyed_by_file) {
  TempDir dir;
  const std::string bare = dir.str() + "/bare";
  fs::copy_file(fixture("hello_pie"), bare);
  ASSERT_EQ(std::system(("objcopy --remove-section .note.gnu.build-id " + bare).c_str()), 0);
  ObjectStore store;
  auto o = store.open(bare);
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ((*o)->build_id(), "");
  EXPECT_TRUE((*o)->key().starts_with("file:")) << (*o)->key();
}

TEST(object_store, missing_file_is_an_error_naming_it) {
  ObjectStore store;
  auto o = store.open("/nonexistent/libnothing.so");
  ASSERT_FALSE(o);
  EXPECT_EQ(o.error().message, "/nonexistent/libnothing.so: No such file or directory");
  EXPECT_EQ(store.size(), 0u);
}

}  // namespace
}  // namespace uscope
