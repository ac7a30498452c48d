// Parameter names and struct members from DWARF, attached for real: the dwarf_app fixture (its
// own DWARF, and a stripped copy with a separate debug file) and libc with Debian's libc6-dbg.
// Every value printed is one the fixture or the command line fixed.
#include <gtest/gtest.h>

#include <sstream>

#include "e2e_support.h"
#include "plan/probe_spec.h"

namespace uscope::e2e {
namespace {

std::vector<std::string> messages(const std::string& out, const std::string& func) {
  std::vector<std::string> got;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto at = line.find(" " + func + " ");
    if (at == std::string::npos) continue;
    auto start = line.find_first_not_of(' ', at + func.size() + 2);
    got.push_back(start == std::string::npos ? "" : line.substr(start));
  }
  return got;
}

// Every spec here must parse: a parser regression fails these tests rather than skipping them.
#define REQUIRE_PARSED(spec)                                           \
  do {                                                                 \
    auto parsed_ = parse_probe_spec(spec);                             \
    ASSERT_TRUE(parsed_) << (spec) << ": " << parsed_.error().message; \
  } while (0)

std::string app(int n) {
  return fixture("dwarf/dwarf_app") + " " + std::to_string(n);
}

TEST(dwarf_names, parameter_and_member_from_the_binarys_dwarf) {
  USCOPE_REQUIRE_ROOT();
  const std::string spec = "p::handle \"%s %d\", req->path, len";
  REQUIRE_PARSED(spec);
  auto r = uscope({"trace", "-c", app(3), spec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out, "handle"),
            (std::vector<std::string>{"/srv/file0 -5", "/srv/file1 5", "/srv/file2 15"}))
      << r.out;
}

TEST(dwarf_names, nested_members_char_pointers_and_narrow_parameters) {
  USCOPE_REQUIRE_ROOT();
  const std::string handle =
      "p::handle \"%ld %u %s %d\", req->id, req->hdr.len, req->user, req->code";
  const std::string tag = "p::tag (code > 200) \"%u %ld\", code, delta";
  // A return probe's parameter is its value at entry.
  const std::string ret = "r::handle (len < 0) \"%d for %d\", retval, len";
  REQUIRE_PARSED(handle);
  REQUIRE_PARSED(tag);
  REQUIRE_PARSED(ret);
  auto r = uscope({"trace", "-c", app(3), handle, tag, ret});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> h = messages(r.out, "handle");
  EXPECT_EQ(
      h, (std::vector<std::string>{"0 100 user0 0", "95 for -5", "1 101 user1 1", "2 102 user2 2"}))
      << r.out;
  EXPECT_EQ(messages(r.out, "tag"), (std::vector<std::string>{"201 -1", "202 -2"})) << r.out;
}

TEST(dwarf_names, separate_debug_file_through_debuglink) {
  USCOPE_REQUIRE_ROOT();
  const std::string spec = "p::handle \"%s\", req->path";
  REQUIRE_PARSED(spec);
  auto r = uscope({"trace", "-c", fixture("dwarf/dbg_stripped") + " 2", spec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out, "handle"), (std::vector<std::string>{"/srv/file0", "/srv/file1"}))
      << r.out;
}

TEST(dwarf_names, libc_struct_member_from_libc6_dbg) {
  USCOPE_REQUIRE_ROOT();
  const std::string spec = "p:c:nanosleep \"%lld %lld\", req->tv_sec, req->tv_nsec";
  REQUIRE_PARSED(spec);
  auto r = uscope({"trace", "-c", "sleep 0.0012345", spec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out, "nanosleep"), (std::vector<std::string>{"0 1234500"})) << r.out;
}

TEST(dwarf_names, bcc_declared_parameter_with_struct_from_libc6_dbg) {
  USCOPE_REQUIRE_ROOT();
  // The line from bcc's trace_example.txt, with its declared list and a struct member.
  const std::string spec =
      "p:c:nanosleep(struct timespec *req) \"sleep for %lld ns\", req->tv_nsec";
  REQUIRE_PARSED(spec);
  auto r = uscope({"trace", "-c", "sleep 0.001", spec});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(messages(r.out, "nanosleep"), (std::vector<std::string>{"sleep for 1000000 ns"}))
      << r.out;
}

TEST(dwarf_names, unknown_names_are_refused_with_the_closest) {
  USCOPE_REQUIRE_ROOT();
  const std::string spec = "p::handle \"%d\", lenght";
  REQUIRE_PARSED(spec);
  auto r = uscope({"trace", "-c", app(1), spec});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no parameter 'lenght' in handle(req, len); closest: len"),
            std::string::npos)
      << r.err;
  const std::string member = "p::handle \"%d\", req->retries";
  REQUIRE_PARSED(member);
  r = uscope({"trace", "-c", app(1), member});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("req->retries is a bitfield"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uscope::e2e
