// Forms new users typed that uscope refused or answered with a message that did not help: bcc's
// spec without a ',' after the format, a Go package path as a list pattern, an unknown command, a
// list with one word too many, and a Go parameter named ctx.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

std::string loop_cmd(int n) {
  return fixture("native/target_loop") + " " + std::to_string(n);
}

// bcc's trace takes `"format" arg1` (the seed blog's redis example writes it so): it means what
// `"format", arg1` means, here checked against the fixture's own loop (work(i, "xyz"), i = 0..49).
TEST(new_user_forms, bcc_spec_without_comma_after_the_format) {
  USCOPE_REQUIRE_ROOT();
  const std::string target = fixture("native/target_loop");
  auto without = uscope(
      {"trace", "-c", loop_cmd(50), target + ":work (arg1 % 10 == 3) \"i=%d tag=%s\" arg1, arg2"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  auto hits = lines_with(without.out, " work ");
  ASSERT_EQ(hits.size(), 5u) << without.out;
  for (int k = 0; k < 5; ++k)
    EXPECT_NE(hits[k].find("i=" + std::to_string(10 * k + 3) + " tag=xyz"), std::string::npos)
        << hits[k];
  auto with = uscope(
      {"trace", "-c", loop_cmd(50), target + ":work (arg1 % 10 == 3) \"i=%d tag=%s\", arg1, arg2"});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  auto with_hits = lines_with(with.out, " work ");
  ASSERT_EQ(with_hits.size(), hits.size());
  for (size_t k = 0; k < hits.size(); ++k)
    EXPECT_EQ(hits[k].substr(hits[k].find("i=")), with_hits[k].substr(with_hits[k].find("i=")));
}

// The functions of package net/http as nm names them in the unstripped server.
std::set<std::string> nm_functions_with_prefix(const std::string& binary, const std::string& p) {
  std::istringstream in(shell("nm " + binary + " | awk '$2 ~ /^[Tt]$/ {print $3}'"));
  std::set<std::string> out;
  for (std::string name; std::getline(in, name);)
    if (name.starts_with(p)) out.insert(name);
  return out;
}

// `list -p PID 'net/http.*'`: a word with a '/' that names no file and nothing the process maps
// is a function pattern, not a path the process "does not map".
TEST(new_user_forms, list_of_a_go_process_takes_a_package_path_pattern) {
  USCOPE_REQUIRE_ROOT();
  const std::string server_bin = fixture("go/gohttp_server");
  const int port = free_port();
  GatedProcess server({server_bin, std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  auto r =
      uscope({"list", "--json", "--functions", "-p", std::to_string(server.pid()), "net/http.*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("does not map"), std::string::npos) << r.err;
  std::set<std::string> listed;
  for (const auto& j : json_lines(r.out)) {
    if (j["kind"] != "function") continue;
    EXPECT_EQ(j["object"], server_bin) << j.dump();
    listed.insert(j["name"].get<std::string>());
  }
  auto expected = nm_functions_with_prefix(server_bin, "net/http.");
  ASSERT_GT(expected.size(), 100u);
  EXPECT_EQ(listed, expected);

  // A word written as a path still is one: the error names what the process maps.
  auto path = uscope({"list", "-p", std::to_string(server.pid()), "./no/such/file"});
  EXPECT_EQ(path.exit_code, 1);
  EXPECT_NE(path.err.find("does not map ./no/such/file"), std::string::npos) << path.err;
}

TEST(new_user_forms, unknown_command_names_it_and_the_commands) {
  auto r = uscope({"bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'bogus'"), std::string::npos) << r.err;
  for (const char* c :
       {"list", "check", "trace", "count", "latency", "hist", "profile", "http", "tls", "stat"})
    EXPECT_NE(r.err.find(c), std::string::npos) << c << " not named:\n" << r.err;
  EXPECT_EQ(r.err.find("A subcommand is required"), std::string::npos) << r.err;

  auto typo = uscope({"trac", "p:c:malloc"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("unknown command 'trac' (did you mean trace?)"), std::string::npos)
      << typo.err;

  auto none = uscope({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("name a command: list, check, trace"), std::string::npos) << none.err;
}

TEST(new_user_forms, list_with_three_words_says_what_list_takes) {
  auto r = uscope({"list", "/usr/bin/python3.11", "a", "b"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("list takes at most a TARGET and one PATTERN, not 3 words "
                       "(/usr/bin/python3.11 a b)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("uscope list [-p PID] [TARGET] [PATTERN]"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("At Most"), std::string::npos) << r.err;
}

// Go code names its context parameter ctx: net.(*Dialer).DialContext(d, ctx, network, address)
// is declared with it and read, here the address the client was told to dial.
TEST(new_user_forms, go_parameter_named_ctx) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "-c", fixture("go/gohttp_client") + " http://127.0.0.1:1/x 1",
                   "p::net.(*Dialer).DialContext(d *net.Dialer, ctx context.Context, network "
                   "string, address string) \"%s %s\", network, address"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto hits = lines_with(r.out, "tcp 127.0.0.1:1");
  EXPECT_EQ(hits.size(), 1u) << r.out << r.err;
}

}  // namespace
}  // namespace uscope::e2e
