// C++ and Rust functions named in specs and patterns as users write them (demangled, with or
// without a signature, globbed), matched by the planner on the orchard fixtures. Expected
// addresses come from nm, not from uscope's own readers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "plan/planner.h"
#include "tool_output.h"

namespace uscope {
namespace {

std::string fixture(const std::string& rel) {
  return std::string(USCOPE_FIXTURE_DIR) + "/orchard/" + rel;
}

const std::string kOrchard = fixture("orchard");

struct Planner {
  explicit Planner(std::string main) : ctx{nullptr, std::move(main), 0}, cache(ctx) {}
  TargetContext ctx;
  ObjectCache cache;
};

// Addresses of the functions whose `nm -C` name starts with `prefix`.
std::set<uint64_t> nm_addresses(const std::string& path, const std::string& prefix) {
  std::set<uint64_t> out;
  std::istringstream in(test::command_output("nm -C --defined-only " + path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string addr, type, name;
    if (!(l >> addr >> type) || (type != "T" && type != "t" && type != "W")) continue;
    std::getline(l >> std::ws, name);
    if (name.starts_with(prefix)) out.insert(std::stoull(addr, nullptr, 16));
  }
  return out;
}

Result<std::vector<MatchedSite>> sites(Planner& p, std::string_view text, bool pattern = false) {
  auto spec = pattern ? parse_probe_pattern(text) : parse_probe_spec(text);
  EXPECT_TRUE(spec.has_value()) << text << ": " << (spec ? "" : spec.error().message);
  if (!spec) return tl::unexpected(spec.error());
  return match_sites(p.cache, *spec);
}

std::set<uint64_t> addresses(const std::vector<MatchedSite>& v) {
  std::set<uint64_t> out;
  for (const auto& m : v) out.insert(m.address);
  return out;
}

TEST(cxx_names, a_method_name_matches_every_overload) {
  Planner p(kOrchard);
  auto r = sites(p, R"(p::orchard::Pear::ripen "%d", arg2)");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(addresses(*r), nm_addresses(kOrchard, "orchard::Pear::ripen("));
  EXPECT_EQ(r->size(), 2u);
}

TEST(cxx_names, a_quoted_signature_picks_one_overload) {
  Planner p(kOrchard);
  auto by_int = sites(p, R"x(p::"orchard::Pear::ripen(int)" "%d", arg2)x");
  ASSERT_TRUE(by_int.has_value()) << by_int.error().message;
  ASSERT_EQ(by_int->size(), 1u);
  EXPECT_EQ((*by_int)[0].label, "orchard::Pear::ripen(int)");
  EXPECT_EQ(addresses(*by_int), nm_addresses(kOrchard, "orchard::Pear::ripen(int)"));

  // As a C++ programmer writes the type, not as the demangler prints it.
  auto by_str = sites(p, R"x(p::"orchard::Pear::ripen(const char *)" "%s", arg2)x");
  ASSERT_TRUE(by_str.has_value()) << by_str.error().message;
  ASSERT_EQ(by_str->size(), 1u);
  EXPECT_EQ((*by_str)[0].label, "orchard::Pear::ripen(char const*)");
}

TEST(cxx_names, templates_virtuals_operators_and_free_functions) {
  Planner p(kOrchard);
  for (std::string_view name :
       {"orchard::Basket<int>::add", "orchard::Basket<long>::add", "orchard::Pear::grow",
        "orchard::Fruit::grow", "orchard::harvest", "orchard::check"}) {
    auto r = sites(p, "p::" + std::string(name));
    ASSERT_TRUE(r.has_value()) << name << ": " << r.error().message;
    EXPECT_EQ(addresses(*r), nm_addresses(kOrchard, std::string(name) + "("));
    EXPECT_EQ(r->size(), 1u) << name;
  }
  auto op = sites(p, R"x(p::"orchard::Pear::operator+=(int)")x");
  ASSERT_TRUE(op.has_value()) << op.error().message;
  EXPECT_EQ(op->size(), 1u);
  // Mangled names keep working.
  auto mangled = sites(p, "p::_ZN7orchard4Pear5ripenEi");
  ASSERT_TRUE(mangled.has_value()) << mangled.error().message;
  EXPECT_EQ(addresses(*mangled), nm_addresses(kOrchard, "orchard::Pear::ripen(int)"));
}

TEST(cxx_names, globs_match_demangled_names) {
  Planner p(kOrchard);
  auto all = sites(p, kOrchard + ":orchard::*", true);
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_EQ(addresses(*all), nm_addresses(kOrchard, "orchard::"));
  auto adds = sites(p, "orchard::Basket<*>::add", true);
  ASSERT_TRUE(adds.has_value()) << adds.error().message;
  EXPECT_EQ(adds->size(), 2u);
  auto ripens = sites(p, "*::ripen", true);
  ASSERT_TRUE(ripens.has_value()) << ripens.error().message;
  EXPECT_EQ(ripens->size(), 2u);
}

TEST(cxx_names, unknown_name_lists_the_demangled_candidates) {
  Planner p(kOrchard);
  auto r = sites(p, "p::orchard::Pear::ripe");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("no function 'orchard::Pear::ripe'"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("orchard::Pear::ripen(int)"), std::string::npos)
      << r.error().message;
}

// The Rust fixtures are built only where rustc is installed; elsewhere this fails, as a missing
// dependency should.
TEST(cxx_names, rust_paths_in_legacy_and_v0_mangling) {
  for (const char* variant : {"orchard_rs_legacy", "orchard_rs_v0"}) {
    const std::string bin = fixture(variant);
    ASSERT_EQ(access(bin.c_str(), X_OK), 0)
        << bin << " is missing: install rustc (scripts/install-deps.sh) and rebuild";
    Planner p(bin);
    for (std::string_view name : {"myapp::server::handle", "myapp::server::Counter::bump"}) {
      auto r = sites(p, "p::" + std::string(name));
      ASSERT_TRUE(r.has_value()) << variant << " " << name << ": " << r.error().message;
      ASSERT_EQ(r->size(), 1u) << variant << " " << name;
      // nm -C prints v0's inherent methods as "<myapp::server::Counter>::bump".
      auto want = nm_addresses(bin, std::string(name));
      want.merge(nm_addresses(bin, "<myapp::server::Counter>::bump"));
      if (name == "myapp::server::handle") want = nm_addresses(bin, std::string(name));
      EXPECT_EQ(addresses(*r), want) << variant << " " << name;
    }
    auto glob = sites(p, "myapp::server::*", true);
    ASSERT_TRUE(glob.has_value()) << glob.error().message;
    EXPECT_EQ(glob->size(), 2u) << variant;
  }
}

}  // namespace
}  // namespace uscope
