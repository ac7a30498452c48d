// uscope run by an ordinary user holding only CAP_BPF and CAP_PERFMON, against that user's own
// processes: a command it starts (-c) and a process already running (-p). Without CAP_SYS_ADMIN
// it cannot open /proc/PID/map_files, so it reaches the files through /proc/PID/root.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "session_support.h"

namespace uscope::e2e {
namespace {

// `argv` run as user nobody with only `caps` ("+bpf,+perfmon"), inherited through exec.
std::vector<std::string> as_nobody(const std::string& caps, std::vector<std::string> argv) {
  std::vector<std::string> out{"/usr/bin/setpriv", "--reuid=65534",      "--regid=65534",
                               "--clear-groups",   "--inh-caps=" + caps, "--ambient-caps=" + caps};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

uint64_t count_of(const std::string& out, const std::string& function) {
  uint64_t n = 0;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("{")) {
      auto j = nlohmann::json::parse(line);
      if (j["kind"] == "count" && j["function"] == function) n += j["count"].get<uint64_t>();
    }
  return n;
}

// The binaries run as `nobody`, copied to a directory anyone may enter: the build tree may sit
// under a home directory nobody can (a fresh root builds in /root).
std::string staged(const std::string& path) {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/uscope-unprivileged-XXXXXX";
    std::string d = mkdtemp(tmpl) ? tmpl : "/tmp";
    chmod(d.c_str(), 0755);
    return d;
  }();
  std::string to = dir + "/" + path.substr(path.rfind('/') + 1);
  if (access(to.c_str(), X_OK) != 0) {
    shell("cp '" + path + "' '" + to + "' && chmod 0755 '" + to + "'");
  }
  return to;
}

TEST(unprivileged, traces_a_command_it_starts) {
  USCOPE_REQUIRE_ROOT();  // to become nobody with capabilities
  auto r = run(as_nobody("+bpf,+perfmon",
                         {staged(USCOPE_BIN), "trace", "-c",
                          staged(fixture("native/target_loop")) + " 5", "p::work \"%d\", arg1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" work "), std::string::npos) << r.out;
  auto c =
      run(as_nobody("+bpf,+perfmon", {staged(USCOPE_BIN), "count", "--json", "-c",
                                      staged(fixture("native/target_loop")) + " 321", "work"}));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(count_of(c.out, "work"), 321u) << c.out;
  // Stacks are symbolized and strings read from the user's own process.
  auto u = run(as_nobody("+bpf,+perfmon", {staged(USCOPE_BIN), "trace", "-U", "-M", "1", "-c",
                                           staged(fixture("native/target_loop")) + " 100000000",
                                           "p::work \"%s\", arg2"}));
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_NE(u.out.find("xyz"), std::string::npos) << u.out;
  EXPECT_NE(u.out.find("main+"), std::string::npos) << u.out;
}

TEST(unprivileged, traces_a_running_process_of_the_same_user) {
  USCOPE_REQUIRE_ROOT();
  const std::string exe = staged(fixture("native/exec_after"));
  GatedProcess target(as_nobody("-all", {exe, "100000000"}));
  ASSERT_TRUE(wait_until([&] {
    return shell("cat /proc/" + std::to_string(target.pid()) + "/maps").find("libc") !=
           std::string::npos;
  }));
  const std::string pid = std::to_string(target.pid());
  // A library and the program: both are reached through /proc/PID/root, not map_files.
  auto t = run(as_nobody("+bpf,+perfmon", {staged(USCOPE_BIN), "trace", "-M", "3", "-p", pid,
                                           "p:" + exe + ":work \"%d\", arg1", "p:c:usleep"}));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find(" work "), std::string::npos) << t.out;
  auto c = run(as_nobody("+bpf,+perfmon", {staged(USCOPE_BIN), "count", "--json", "-d", "0.5", "-p",
                                           pid, exe + ":work", "c:usleep"}));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_GT(count_of(c.out, "work"), 0u) << c.out;
  EXPECT_GT(count_of(c.out, "usleep"), 0u) << c.out;
}

TEST(unprivileged, one_missing_capability_is_named) {
  USCOPE_REQUIRE_ROOT();
  auto r = run(as_nobody("+bpf", {staged(USCOPE_BIN), "trace", "-c",
                                  staged(fixture("native/target_loop")) + " 1", "p::work"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("CAP_PERFMON"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("CAP_BPF"), std::string::npos) << "CAP_BPF is held: " << r.err;
}

}  // namespace
}  // namespace uscope::e2e
