// Targets that exec, unprivileged users, and Go programs (entry probes with Go's register ABI,
// never a return probe).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(lifecycle, target_exec_ends_the_session) {
  USCOPE_REQUIRE_ROOT();
  GatedProcess target({fixture("native/exec_after"), "600"});
  target.start();
  auto r = uscope(
      {"trace", "-p", std::to_string(target.pid()), "p:" + fixture("native/exec_after") + ":work"},
      30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("exec'd"), std::string::npos) << r.err;
  // Ended at the exec, not at the exit: the exec'd `sleep 30` still runs.
  EXPECT_EQ(waitpid(target.pid(), nullptr, WNOHANG), 0) << "the target exited before uscope ended";
  EXPECT_NE(r.out.find(" work\n"), std::string::npos);
  EXPECT_TRUE(bpf_links_of_programs("trace_").empty());
}

TEST(lifecycle, unprivileged_user_is_told_which_capabilities) {
  auto r = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                USCOPE_BIN, "trace", "-c", fixture("native/target_loop") + " 1", "p::work"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("CAP_BPF"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("CAP_PERFMON"), std::string::npos) << r.err;
}

TEST(go, entry_probe_reads_go_register_abi_arguments) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"trace", "-c", fixture("go/gowork") + " 50",
                   "p::main.work (arg1 == 7) \"i=%d tag=%s\", arg1, str(arg2, arg3)"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main.work        i=7 tag=gopher"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("49 filtered out"), std::string::npos) << r.err;
}

TEST(go, return_probes_are_refused) {
  USCOPE_REQUIRE_ROOT();
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"trace", "-c", fixture("go/gowork") + " 5", "r::main.work"},
           {"latency", "-c", fixture("go/gowork") + " 5", "main.work"}}) {
    auto r = uscope(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("is a Go program"), std::string::npos) << r.err;
    EXPECT_TRUE(bpf_links_of_programs("trace_").empty());
  }
}

TEST(go, count_counts_go_functions) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"count", "-c", fixture("go/gowork") + " 321", "main.*"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("main.work          321"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace uscope::e2e
