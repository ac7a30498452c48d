// Go parameters by name, decoded by their DWARF types: strings as Go strings (pointer + length in
// two registers), fields through pointers, in entry and return probes.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(go_args, parameters_by_name_in_entry_and_return_probes) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"trace", "-c", fixture("go/gowork") + " 4", "p::main.work (i == 3) \"%d %s\", i, tag"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main.work        3 gopher\n"), std::string::npos) << r.out;
  auto ret = uscope(
      {"trace", "-c", fixture("go/gowork") + " 4", "r::main.work \"%d %s -> %d\", i, tag, retval"});
  ASSERT_EQ(ret.exit_code, 0) << ret.err;
  for (int i = 0; i < 4; ++i)
    EXPECT_NE(ret.out.find("main.work        " + std::to_string(i) + " gopher -> " +
                           std::to_string(i * 2 + 6) + "\n"),
              std::string::npos)
        << ret.out;
}

// The seed's failure case: bcc printed garbage for fmt.Println's argument. Println is inlined in
// this build; Fprintln's `a ...any` is a slice of interface values, printed as Go prints them.
TEST(go_args, interface_values_print_as_go_prints_them) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "-c", fixture("go/gohi") + " 2", "p::fmt.Fprintln \"%v\", a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_with(r.out, "fmt.Fprintln     [Hi]").size(), 2u) << r.out;
  EXPECT_EQ(lines_with(r.out, "fmt.Fprintln     [bye 2 true]").size(), 1u) << r.out;
  auto plain =
      uscope({"trace", "-c", fixture("go/gowork") + " 2", "p::main.work \"%v %v\", i, tag"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("main.work        1 gopher\n"), std::string::npos) << plain.out;
  auto wrong = uscope({"trace", "-c", fixture("go/gohi") + " 1", "p::fmt.Fprintln \"%s\", a"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("print it with %v"), std::string::npos) << wrong.err;
}

// req.Method and req.URL.Path through two pointers, and a string parameter of a method, placed on
// a server under load.
TEST(go_args, fields_and_strings_of_a_server_under_load) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  const std::string server_bin = fixture("go/gohttp_server");
  GatedProcess server({server_bin, std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  RunningCommand load({fixture("go/gohttp_client"), base, "0", "/load"});
  auto tracer = RunningCommand::uscope(
      {"trace", "-p", std::to_string(server.pid()),
       "p:" + server_bin + ":net/http.serverHandler.ServeHTTP \"%s %s\", req.Method, req.URL.Path",
       "r:" + server_bin + ":main.(*Store).Get \"key=%s value=%d\", key, retval"});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  ASSERT_TRUE(tracer.wait_for_output(" GET /load\n"));  // attached under load, and reading it
  auto client = run({fixture("go/gohttp_client"), base, "3", "/items/pear", "/items/nope"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  ASSERT_TRUE(tracer.wait_for_output("key=nope value=0\n"));
  load.signal(SIGKILL);
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_with(r.out, " GET /items/pear").size(), 3u) << r.out.substr(0, 3000);
  EXPECT_EQ(lines_with(r.out, "main.(*Store).Get key=pear value=5").size(), 3u);
  EXPECT_EQ(lines_with(r.out, "main.(*Store).Get key=nope value=0").size(), 3u);
  EXPECT_TRUE(links_released("trace_"));
}

TEST(go_args, bad_names_say_what_would_work) {
  USCOPE_REQUIRE_ROOT();
  auto typo = uscope({"trace", "-c", fixture("go/gowork") + " 1", "p::main.work \"%s\", tga"});
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.err.find("no parameter 'tga' in main.work(i, tag); closest: tag"),
            std::string::npos)
      << typo.err;
  auto field = uscope({"trace", "-c", fixture("go/gohttp_server") + " 0",
                       "p::net/http.serverHandler.ServeHTTP \"%s\", req.Methd"});
  EXPECT_EQ(field.exit_code, 1);
  EXPECT_NE(field.err.find("has no field 'Methd'; closest: Method"), std::string::npos)
      << field.err;
  auto stripped =
      uscope({"trace", "-c", fixture("go/gowork_stripped") + " 1", "p::main.work \"%d\", i"});
  EXPECT_EQ(stripped.exit_code, 1);
  EXPECT_NE(stripped.err.find("has no DWARF"), std::string::npos) << stripped.err;
  EXPECT_NE(stripped.err.find("arg1..arg9"), std::string::npos) << stripped.err;
}

}  // namespace
}  // namespace uscope::e2e
