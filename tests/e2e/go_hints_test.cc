// Go parameters without DWARF: a declared list, `main.work(i int, tag string)`, on the stripped
// fixtures prints what DWARF's names print on their twins built with DWARF; argN is the Nth
// parameter; fields through pointers on the stripped server come from Go's runtime type
// descriptors, and -v says where each name was found; bad lists say what would work.
#include <gtest/gtest.h>

#include <signal.h>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// What each event of `function` printed, without the PID/TID/COMM columns (the COMM of a
// stripped twin differs).
std::vector<std::string> messages(const std::string& out, const std::string& function) {
  std::vector<std::string> m;
  for (const auto& line : lines_with(out, " " + function + " "))
    m.push_back(line.substr(line.find(" " + function + " ")));
  return m;
}

CommandResult trace_work(const std::string& binary, const std::string& spec) {
  return uscope({"trace", "-c", fixture("go/" + binary) + " 4", spec});
}

TEST(go_hints, a_declared_list_on_a_stripped_binary_prints_what_dwarf_names_print) {
  USCOPE_REQUIRE_ROOT();
  const std::pair<std::string, std::string> cases[] = {
      {R"(p::main.work "%d %s", i, tag)", R"(p::main.work(i int, tag string) "%d %s", i, tag)"},
      {R"(r::main.work (i > 0) "%d %s -> %d", i, tag, retval)",
       R"(r::main.work(i int, tag string) (i > 0) "%d %s -> %d", i, tag, retval)"},
      // argN is the Nth parameter, decoded by its type, with DWARF or a declared list.
      {R"(p::main.work "%d %s", arg1, arg2)",
       R"(p::main.work(i int, tag string) "%d %s", arg1, arg2)"},
  };
  for (const auto& [by_dwarf, declared] : cases) {
    auto d = trace_work("gowork", by_dwarf);
    ASSERT_EQ(d.exit_code, 0) << by_dwarf << "\n" << d.err;
    auto s = trace_work("gowork_stripped", declared);
    ASSERT_EQ(s.exit_code, 0) << declared << "\n" << s.err;
    auto expected = messages(d.out, "main.work");
    EXPECT_FALSE(expected.empty()) << d.out;
    EXPECT_EQ(messages(s.out, "main.work"), expected) << declared << "\n" << s.out;
  }
  auto r = trace_work("gowork_stripped", R"(r::main.work(i int, tag string) "%d %s -> %d", i, )"
                                         R"(tag, retval)");
  for (int i = 0; i < 4; ++i)
    EXPECT_NE(r.out.find(" main.work        " + std::to_string(i) + " gopher -> " +
                         std::to_string(i * 2 + 6) + "\n"),
              std::string::npos)
        << r.out;
}

// req.Method and req.URL.Path through two pointers at the offsets of the stripped server's type
// descriptors, and a method's receiver declared as its first parameter, placed under load.
TEST(go_hints, fields_of_a_stripped_server_come_from_its_type_descriptors) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  const std::string server_bin = fixture("go/gohttp_server_stripped");
  GatedProcess server({server_bin, std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  RunningCommand load({fixture("go/gohttp_client_stripped"), base, "0", "/load"});
  auto tracer = RunningCommand::uscope(
      {"trace", "-v", "-p", std::to_string(server.pid()),
       "p:" + server_bin +
           ":net/http.serverHandler.ServeHTTP(sh net/http.serverHandler, rw "
           "net/http.ResponseWriter, req *net/http.Request) \"%s %s\", req.Method, req.URL.Path",
       "r:" + server_bin +
           ":main.(*Store).Get(s *main.Store, key string) \"key=%s value=%d hits>0=%d\", key, "
           "retval, s.hits > 0"});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  ASSERT_TRUE(tracer.wait_for_output(" GET /load\n"));  // attached under load, and reading it
  auto client =
      run({fixture("go/gohttp_client_stripped"), base, "3", "/items/pear", "/items/nope"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  ASSERT_TRUE(tracer.wait_for_output("key=nope value=0 hits>0=1\n"));
  load.signal(SIGKILL);
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_with(r.out, " GET /items/pear").size(), 3u) << r.out.substr(0, 3000);
  EXPECT_EQ(lines_with(r.out, "main.(*Store).Get key=pear value=5 hits>0=1").size(), 3u);
  EXPECT_EQ(lines_with(r.out, "main.(*Store).Get key=nope value=0 hits>0=1").size(), 3u);
  // -v: where each location and offset came from.
  for (const char* said :
       {"net/http.serverHandler.ServeHTTP: req in rdi (*net/http.Request), from the declared "
        "list and the Go register ABI (amd64)",
        "net/http.serverHandler.ServeHTTP: req.URL at offset 16 in net/http.Request "
        "(*net/url.URL), from the runtime type descriptor",
        "net/http.serverHandler.ServeHTTP: req.URL.Path at offset 56 in net/url.URL (string), "
        "from the runtime type descriptor",
        "main.(*Store).Get: key saved at entry from rbx, rcx (string), from the declared list",
        "main.(*Store).Get: s.hits at offset 16 in main.Store (int), from the runtime type "
        "descriptor"})
    EXPECT_NE(r.err.find(said), std::string::npos) << said << "\n" << r.err;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(go_hints, bad_declared_lists_say_what_would_work) {
  USCOPE_REQUIRE_ROOT();
  struct Bad {
    std::string binary, spec;
    int exit_code;
    std::string message;
  };
  const Bad cases[] = {
      {"gowork_stripped", R"(p::main.work(i integer, tag string) "%d", i)", 2,
       "probe spec column 16: unknown Go type 'integer'"},
      {"gowork_stripped", R"(p::main.work(i int, tag main.Tag) "%d", i)", 1,
       "uscope cannot tell how 'tag' is passed: no Go type 'main.Tag'"},
      {"gowork_stripped", R"(p::main.work(i int, tag string) "%d", arg3)", 2,
       "arg3 is out of range: main.work declares 2 parameters (i int, tag string)"},
      // More words than Go's nine registers hold: the slice is on the stack.
      {"gowork_stripped", R"(p::main.work(a, b, c, d string, e []byte) "%s", e)", 1,
       "'e' is passed on the stack: its words do not fit in what is left of Go's 9 integer "
       "argument registers"},
      {"gowork_stripped", R"(p::main.work(f float64, tag string) "%d", f)", 1,
       "'f' is a float64, passed in Go's floating-point registers (X0..X14)"},
      {"gowork_stripped", R"(p::main.work(int i, char *tag) "%d", i)", 1,
       "is Go code, and its parameters are declared C's way"},
      // With DWARF the list is checked against it.
      {"gowork", R"(p::main.work(i int, tag int) "%d", tag)", 1,
       "'tag' is declared int but the DWARF of main.work says string; declare the list as DWARF "
       "has it, main.work(i int, tag string)"},
      {"gowork", R"(p::main.work(i int, tag string, extra int) "%d", i)", 1,
       "3 parameters declared, but the DWARF of main.work has 2"},
  };
  for (const Bad& c : cases) {
    auto r = trace_work(c.binary, c.spec);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.spec << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.spec << "\n" << r.err;
  }
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
