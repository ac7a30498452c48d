// Targets that exec, unprivileged users, and Go programs (entry probes with Go's register ABI,
// never a return probe).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>

#include <fmt/format.h>

#include "collect/trace_program.h"
#include "e2e_support.h"
#include "plan/recipe.h"

namespace uscope::e2e {
namespace {

TEST(lifecycle, target_exec_ends_the_session) {
  USCOPE_REQUIRE_ROOT();
  // It execs when told, once uscope has shown one of its calls: attached, however slow the start.
  GatedProcess target({fixture("native/exec_after"), "--until-stdin"});
  auto tracer = RunningCommand::uscope(
      {"trace", "-p", std::to_string(target.pid()), "p:" + fixture("native/exec_after") + ":work"},
      60);
  ASSERT_TRUE(tracer.wait_for_output(" work\n"));
  target.send("x");
  auto r = tracer.finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("exec'd"), std::string::npos) << r.err;
  // Ended at the exec, not at the exit: the exec'd `sleep 30` still runs.
  EXPECT_EQ(waitpid(target.pid(), nullptr, WNOHANG), 0) << "the target exited before uscope ended";
  EXPECT_TRUE(links_released("trace_"));
}

TEST(lifecycle, unprivileged_user_is_told_which_capabilities) {
  auto r = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                USCOPE_BIN, "trace", "-c", fixture("native/target_loop") + " 1", "p::work"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("CAP_BPF"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CAP_PERFMON"), std::string::npos) << r.err;
}

// Without DWARF or a declared list, argN is the Nth register of Go's ABI; with DWARF it is the
// Nth parameter, decoded by its type (work(i int, tag string): tag is arg2, RBX and RCX).
TEST(go, entry_probe_reads_go_register_abi_arguments) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "-c", fixture("go/gowork_stripped") + " 50",
                   "p::main.work (arg1 == 7) \"i=%d tag=%s\", arg1, str(arg2, arg3)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main.work        i=7 tag=gopher"), std::string::npos) << r.out;
  EXPECT_EQ(summary_count(r.err, " filtered out"), 49) << r.err;
  auto d = uscope({"trace", "-c", fixture("go/gowork") + " 50",
                   "p::main.work (arg1 == 7) \"i=%d tag=%s\", arg1, arg2"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("main.work        i=7 tag=gopher"), std::string::npos) << d.out;
}

// Return probes on Go are uprobes on RET instructions: gowork's work(i, "gopher") returns
// i*2+6, and latency times exactly the calls the program makes.
TEST(go, return_probes_use_ret_instructions) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope(
      {"trace", "-c", fixture("go/gowork") + " 5", "r::main.work \"%d %d\", $entry(arg1), retval"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 5; ++i)
    EXPECT_NE(r.out.find(fmt::format("main.work        {} {}\n", i, i * 2 + 6)), std::string::npos)
        << r.out;
  auto l = uscope({"latency", "--json", "-c", fixture("go/gowork") + " 7", "main.work"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("\"calls\":7,"), std::string::npos) << l.out;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(go, count_counts_go_functions) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "-c", fixture("go/gowork") + " 321", "main.*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main.work          321"), std::string::npos) << r.out;
}

// Stripped Go (no .symtab, no DWARF): functions come from .gopclntab, Go names included.
TEST(go, stripped_programs_are_listed_and_traced_through_gopclntab) {
  USCOPE_REQUIRE_ROOT();
  auto l = uscope({"list", fixture("go/gohttp_server_stripped"), "main.(*Store).*"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find(" main.(*Store).Get\n"), std::string::npos) << l.out;
  auto g = uscope({"list", "--json", fixture("go/gohttp_server_stripped"), "main.Sum[...]"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  // The runtime's table names every instantiation "main.Sum[...]" (.symtab adds the shape).
  EXPECT_EQ(lines_with(g.out, "\"name\":\"main.Sum[...]\"").size(), 2u) << g.out;
  EXPECT_NE(g.out.find("gopclntab"), std::string::npos) << g.out;
  auto r = uscope({"trace", "-c", fixture("go/gowork_stripped") + " 4",
                   "r::main.work \"%d %d\", $entry(arg1), retval"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main.work        3 12\n"), std::string::npos) << r.out;
}

// fmt.Println exists only inlined (into main.main, twice): each copy is a site, found through
// .gopclntab's inline trees, with symbols or without.
TEST(go, inlined_functions_are_probed_at_every_copy) {
  USCOPE_REQUIRE_ROOT();
  for (const char* bin : {"go/gohi", "go/gohi_stripped"}) {
    auto t = uscope({"trace", "-c", fixture(bin) + " 3", "p::fmt.Println"});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_EQ(lines_with(t.out, " fmt.Println").size(), 4u) << t.out;  // 3 "Hi" and "bye"
    auto c = uscope({"count", "--json", "-c", fixture(bin) + " 3", "fmt.Println"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    uint64_t calls = 0;
    for (const auto& j : json_lines(c.out))
      if (j.value("function", "") == "fmt.Println") calls += j.value("count", uint64_t{0});
    EXPECT_EQ(calls, 4u) << c.out;
  }
  for (const char* bin : {"go/gohttp_client", "go/gohttp_client_stripped"}) {
    auto l = uscope({"list", fixture(bin), "net/http.*"});
    ASSERT_EQ(l.exit_code, 0) << l.err;
    // The call site in the source, as Go's inline tree records it.
    EXPECT_NE(l.out.find("net/http.Get (inlined into main.fetch at "), std::string::npos) << l.out;
    EXPECT_NE(l.out.find("gohttp_client.go:18)"), std::string::npos) << l.out;
  }
  auto args = uscope({"trace", "-c", fixture("go/gohi") + " 1", "p::fmt.Println \"%d\", arg1"});
  EXPECT_EQ(args.exit_code, 1);
  EXPECT_NE(args.err.find("fmt.Println is inlined into main.main"), std::string::npos) << args.err;
  auto ret = uscope({"latency", "-c", fixture("go/gohi") + " 1", "fmt.Println"});
  EXPECT_EQ(ret.exit_code, 1);
  EXPECT_NE(ret.err.find("probe the return of main.main"), std::string::npos) << ret.err;
  EXPECT_TRUE(links_released("trace_"));
}

// net/http.Get is inlined into main.fetch: its `url` is read at the copy where DWARF's inlined
// subroutine places it (two registers); without DWARF the refusal names what the copy calls.
TEST(go, parameters_of_inlined_copies_come_from_dwarf) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({fixture("go/gohttp_server"), std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  const std::string client = fixture("go/gohttp_client");
  auto t = uscope({"trace", "-c", client + " " + base + " 2 /hello /items/apple",
                   "p::net/http.Get \"url=%s\", url"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(lines_with(t.out, "url=" + base + "/hello").size(), 2u) << t.out;
  EXPECT_EQ(lines_with(t.out, "url=" + base + "/items/apple").size(), 2u) << t.out;

  auto stripped =
      uscope({"trace", "-c", client + "_stripped " + base + " 1", "p::net/http.Get \"%s\", url"});
  EXPECT_EQ(stripped.exit_code, 1);
  EXPECT_NE(stripped.err.find("only DWARF says where a copy's parameters are"), std::string::npos)
      << stripped.err;
  EXPECT_NE(stripped.err.find("net/http.(*Client).Get"), std::string::npos) << stripped.err;
  EXPECT_TRUE(links_released("trace_"));
}

// A stripped Go program's profile names its frames from .gopclntab and expands inlined calls
// into frames of their own (http.Get, inlined into main.fetch), as `go tool pprof` shows them.
TEST(go, profiles_of_stripped_programs_expand_inlined_frames) {
  USCOPE_REQUIRE_ROOT();
  // Requests to a closed port: the client spends its time under main.fetch -> http.Get.
  auto r = uscope({"profile", "-F", "999", "--format", "folded", "-c",
                   fixture("go/gohttp_client_stripped") + " http://127.0.0.1:1 20000"},
                  120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(";main.main;main.fetch;net/http.Get;net/http.(*Client).Get;"),
            std::string::npos)
      << r.out.substr(0, 3000);
}

// The attach layer refuses a uretprobe in Go code whatever planned it.
TEST(go, attach_refuses_a_uretprobe_in_go_code) {
  USCOPE_REQUIRE_ROOT();
  std::vector<uscope_recipe> recipes = {latency_return_recipe(0)};
  auto program = TraceProgram::load(recipes, TargetFilter{}, false);
  ASSERT_TRUE(program.has_value()) << program.error().message;
  AttachSite site;
  site.path = fixture("go/gowork");
  site.offset = 0x1000;  // refused before the kernel sees it
  site.retprobe = true;
  site.go_code = true;
  auto r = program->attach({site});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("refusing a return probe (uretprobe)"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
