// Code that another session probes reads as it is in the file: the kernel writes each uprobe's
// int3 into every executable-capable private mapping of the file, which includes a read-only
// mapping of it that uscope makes to read the ELF.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

TEST(probed_code, list_and_planning_see_the_file_not_the_breakpoints) {
  USCOPE_REQUIRE_ROOT();
  const std::string target = fixture("native/target_loop");
  // A system-wide probe on work()'s moved entry site (push rbp after endbr64), held meanwhile.
  const std::string spec = "p:" + target + ":work";  // before the fork: the child must not allocate
  pid_t holder = fork();
  if (holder == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(USCOPE_BIN, USCOPE_BIN, "trace", spec.c_str(), nullptr);
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (bpf_links_of_programs("trace_", holder).empty() &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a condition
  bool attached = !bpf_links_of_programs("trace_", holder).empty();

  auto r = uscope({"list", "--json", target, "work"});
  kill(holder, SIGTERM);
  int status = 0;
  waitpid(holder, &status, 0);
  ASSERT_TRUE(attached) << "the holding session never attached";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(j["entry_site"]["insn"], "push rbp") << r.out;
  EXPECT_EQ(j["entry_site"]["cost"], "emulated") << r.out;
}

}  // namespace
}  // namespace uscope::e2e
