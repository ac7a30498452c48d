// Whose profile it is: the labels Pyroscope gets for a process, from its facts and from /proc
// (this test's own process, held against what /proc and readlink say).
#include "agent/profile_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace uscope {
namespace {

TEST(profile_source, service_is_the_selector_name_else_the_executable_name) {
  ProcessFacts f;
  f.pid = 1234;
  f.exe = "/usr/bin/redis-server";
  f.comm = "redis-server";
  f.container_id = std::string(64, 'a');
  ProfileSource s = profile_source(f, "", "node-1");
  EXPECT_EQ(s.service, "redis-server");
  EXPECT_EQ(s.labels, (MetricAttributes{{"process", "redis-server"},
                                        {"executable", "/usr/bin/redis-server"},
                                        {"pid", "1234"},
                                        {"container_id", std::string(64, 'a')},
                                        {"host", "node-1"}}));
  EXPECT_EQ(profile_source(f, "cache", "node-1").service, "cache");
  f.container_id.clear();
  EXPECT_EQ(profile_source(f, "", "").labels.size(), 3u);  // no container, no host: no label
}

TEST(profile_source, reads_a_live_process_and_keeps_a_gone_one_by_its_sampled_name) {
  std::ifstream in("/proc/self/comm");
  std::string comm;
  std::getline(in, comm);
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  ProfileSourceOf of = profile_sources("node-1", [](pid_t) { return std::string(); });
  ProfileSource self = of(getpid(), comm);
  EXPECT_EQ(self.service, std::filesystem::path(exe).filename().string());
  EXPECT_EQ(self.labels[0], (std::pair<std::string, std::string>("process", comm)));
  EXPECT_EQ(self.labels[1], (std::pair<std::string, std::string>("executable", exe)));
  EXPECT_EQ(self.labels[2], (std::pair<std::string, std::string>("pid", std::to_string(getpid()))));

  // Sampled under another name (gone, its PID taken since): the sampled name is all it has.
  ProfileSource gone = profile_sources("node-1")(getpid(), "old-name");
  EXPECT_EQ(gone.service, "old-name");
  EXPECT_EQ(gone.labels,
            (MetricAttributes{
                {"process", "old-name"}, {"pid", std::to_string(getpid())}, {"host", "node-1"}}));
  EXPECT_FALSE(host_name().empty());
}

}  // namespace
}  // namespace uscope
