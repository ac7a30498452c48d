// Selectors against process facts: each field alone and together, container ids as the runtimes
// write their cgroups, and the facts of this very process against /proc and its own socket.
#include "agent/process_match.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace uscope {
namespace {

// A selector with some fields set (designated initializers would warn of the others).
ProcessSelector pick(const std::function<void(ProcessSelector&)>& set) {
  ProcessSelector s;
  set(s);
  return s;
}

const std::string kId = "3f2a9c1b8e7d6c5b4a3928170605f4e3d2c1b0a99887766554433221100ffeed";

TEST(process_match, container_ids_as_runtimes_name_cgroups) {
  EXPECT_EQ(container_id_of("/system.slice/docker-" + kId + ".scope"), kId);
  EXPECT_EQ(container_id_of("/docker/" + kId), kId);
  EXPECT_EQ(
      container_id_of("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
                      "cri-containerd-" +
                      kId + ".scope"),
      kId);
  EXPECT_EQ(container_id_of("/kubepods/besteffort/pod1234/" + kId), kId);
  EXPECT_EQ(container_id_of("/machine.slice/libpod-" + kId + ".scope/container"), kId);
  EXPECT_EQ(container_id_of("/system.slice/redis-server.service"), "");
  EXPECT_EQ(container_id_of("/user.slice/" + kId.substr(1)), "");  // 63 digits
  EXPECT_EQ(container_id_of(""), "");
}

TEST(process_match, every_field_the_selector_sets_must_hold) {
  ProcessFacts f{42,    "/usr/bin/redis-server", "redis-server", "/system.slice/redis.service", kId,
                 {6379}};
  auto no = [] { return false; };
  auto yes = [] { return true; };
  EXPECT_TRUE(selects(pick([](ProcessSelector& s) { s.exe = "/usr/bin/redis-server"; }), f, no));
  EXPECT_TRUE(selects(pick([](ProcessSelector& s) { s.exe = "redis-*"; }), f,
                      no));  // a bare name: the executable's name
  EXPECT_TRUE(selects(pick([](ProcessSelector& s) { s.exe = "/usr/*/redis-server"; }), f, no));
  EXPECT_FALSE(selects(pick([](ProcessSelector& s) { s.exe = "/bin/redis-server"; }), f, no));
  EXPECT_TRUE(selects(pick([](ProcessSelector& s) { s.cgroup = "/system.slice"; }), f, no));
  EXPECT_TRUE(
      selects(pick([](ProcessSelector& s) { s.cgroup = "/system.slice/redis.service"; }), f, no));
  EXPECT_FALSE(selects(pick([](ProcessSelector& s) { s.cgroup = "/system.sl"; }), f,
                       no));  // whole components only
  EXPECT_TRUE(selects(pick([](ProcessSelector& s) { s.container = "3f2a"; }), f, no));
  EXPECT_FALSE(selects(pick([](ProcessSelector& s) { s.container = "4f2a"; }), f, no));
  EXPECT_TRUE(selects(pick([](ProcessSelector& s) { s.port = 6379; }), f, no));
  EXPECT_FALSE(selects(pick([](ProcessSelector& s) { s.port = 6380; }), f, no));
  EXPECT_FALSE(selects(pick([](ProcessSelector& s) { s.go_http = true; }), f, no));
  EXPECT_TRUE(selects(pick([](ProcessSelector& s) { s.go_http = true; }), f, yes));
  EXPECT_FALSE(selects(pick([](ProcessSelector& s) {
                         s.exe = "redis-server";
                         s.port = 1;
                       }),
                       f, yes));
  // The binary is opened only when the rest holds.
  bool asked = false;
  EXPECT_FALSE(selects(pick([](ProcessSelector& s) {
                         s.exe = "nginx";
                         s.go_http = true;
                       }),
                       f, [&] { return asked = true; }));
  EXPECT_FALSE(asked);
  EXPECT_EQ(service_name(pick([](ProcessSelector& s) { s.exe = "redis-*"; }), f), "redis-server");
  EXPECT_EQ(service_name(pick([](ProcessSelector& s) {
                           s.exe = "redis-*";
                           s.service = "cache";
                         }),
                         f),
            "cache");
}

TEST(process_match, facts_of_this_process) {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(s, 1), 0);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  auto f = process_facts(getpid(), true);
  ASSERT_TRUE(f) << f.error().message;
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe);
  EXPECT_EQ(f->exe, std::string(exe, static_cast<size_t>(n)));
  EXPECT_EQ(f->comm, std::string(program_invocation_short_name).substr(0, 15));
  EXPECT_EQ(f->listen_ports, std::vector<int>{ntohs(a.sin_port)});
  close(s);
  EXPECT_FALSE(process_facts(0x3ffffff, false));
}

}  // namespace
}  // namespace uscope
