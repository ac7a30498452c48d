// The agent's config: every key read, and each mistake named with its line, column and a fix.
#include "agent/agent_config.h"

#include <yaml-cpp/yaml.h>

#include <gtest/gtest.h>

namespace uscope {
namespace {

TEST(agent_config, a_whole_config) {
  auto c = parse_agent_config(R"(listen: 127.0.0.1:9999
select:
  - exe: /usr/bin/redis-server
    service: cache
  - go_http: true
  - cgroup: /system.slice/api.service
  - container: 3f2a
  - port: 8080
metrics:
  http: false
  go_runtime: true
  functions:
    - /usr/bin/redis-server:processCommand
profiles:
  hz: 49
  period: 15s
  push: http://127.0.0.1:4040
otlp:
  endpoint: https://collector:4318
  period: 1m
limits:
  series: 500
  stacks: 2000
)",
                              "agent.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->listen.text(), "127.0.0.1:9999");
  ASSERT_EQ(c->select.size(), 5u);
  EXPECT_EQ(c->select[0].exe, "/usr/bin/redis-server");
  EXPECT_EQ(c->select[0].service, "cache");
  EXPECT_EQ(c->select[0].line, 3);
  EXPECT_TRUE(c->select[1].go_http);
  EXPECT_EQ(c->select[2].cgroup, "/system.slice/api.service");
  EXPECT_EQ(c->select[3].container, "3f2a");
  EXPECT_EQ(c->select[4].port, 8080);
  EXPECT_FALSE(c->http_metrics);
  EXPECT_TRUE(c->go_runtime_metrics);
  EXPECT_EQ(c->functions, std::vector<std::string>{"/usr/bin/redis-server:processCommand"});
  EXPECT_TRUE(c->profiles);
  EXPECT_EQ(c->profile_hz, 49);
  EXPECT_EQ(c->profile_period, std::chrono::seconds(15));
  EXPECT_EQ(c->profile_push, "http://127.0.0.1:4040");
  EXPECT_EQ(c->otlp_endpoint, "https://collector:4318");
  EXPECT_EQ(c->otlp_period, std::chrono::minutes(1));
  EXPECT_EQ(c->max_series, 500u);
  EXPECT_EQ(c->max_stacks, 2000u);
}

TEST(agent_config, empty_means_the_defaults) {
  auto c = parse_agent_config("", "agent.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->listen.text(), "127.0.0.1:9464");
  EXPECT_TRUE(c->listen.loopback());
  EXPECT_TRUE(c->http_metrics);
  EXPECT_FALSE(c->profiles);
  EXPECT_EQ(c->profile_hz, 19);
}

TEST(agent_config, mistakes_name_the_line_and_the_fix) {
  for (auto [yaml, says] : {
           std::pair{"listne: 1.2.3.4:1\n",
                     "agent.yaml:1:1: unknown key 'listne' in the config "
                     "(did you mean 'listen'?)"},
           {"listen: 127.0.0.1\n", "agent.yaml:1:9: listen address '127.0.0.1' has no port"},
           {"select:\n  - exe: /bin/x\n    servise: a\n",
            "agent.yaml:3:5: unknown key 'servise' in a select entry (did you mean 'service'?)"},
           {"select:\n  - service: a\n", "agent.yaml:2:5: a select entry needs one of exe"},
           {"select:\n  - port: 70000\n", "agent.yaml:2:11: 'port' must be a whole number from 1"},
           {"metrics:\n  http: maybe\n",
            "agent.yaml:2:9: 'http' must be true or false, not 'maybe'"},
           {"profiles:\n  hz: 19\n", "agent.yaml:2:3: profiles need somewhere to go"},
           {"profiles:\n  push: ftp://x\n",
            "agent.yaml:2:9: 'ftp://x': uscope pushes over http://"},
           {"profiles:\n  directory: /tmp\n  period: soon\n",
            "agent.yaml:3:11: 'period' must be a duration such as 10s"},
           {"otlp:\n  period: 10s\n", "agent.yaml:2:3: otlp needs 'endpoint: URL'"},
           {"select: [\n", "agent.yaml:2:1: not valid YAML"},
           {"- a\n- b\n", "agent.yaml:1:1: the config must be a mapping"},
           {"? [listen, select]\n: 1\n",
            "agent.yaml:1:3: keys in the config must be plain names; known: listen"},
           {"select:\n  - ? {exe: a}\n    : b\n",
            "agent.yaml:2:7: keys in a select entry must be plain names"},
       }) {
    auto c = parse_agent_config(yaml, "agent.yaml");
    ASSERT_FALSE(c) << yaml;
    EXPECT_TRUE(c.error().message.starts_with(says)) << yaml << " -> " << c.error().message;
  }
  auto missing = load_agent_config("/nonexistent/agent.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot read the config /nonexistent/agent.yaml"),
            std::string::npos);
}

}  // namespace
}  // namespace uscope

namespace uscope {
namespace {

// The DaemonSet's ConfigMap holds a config the agent accepts, and the pod runs with the host's
// PIDs, the config mounted where its args say, and /healthz probes on the port it listens on.
TEST(agent_config, the_kubernetes_manifest_is_consistent) {
  const auto docs = YAML::LoadAllFromFile(USCOPE_SOURCE_DIR "/deploy/kubernetes/uscope-agent.yaml");
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "ConfigMap");
  auto c = parse_agent_config(docs[1]["data"]["agent.yaml"].as<std::string>(), "configmap");
  ASSERT_TRUE(c) << c.error().message;
  const YAML::Node pod = docs[2]["spec"]["template"]["spec"];
  EXPECT_TRUE(pod["hostPID"].as<bool>());
  const YAML::Node box = pod["containers"][0];
  EXPECT_EQ(box["args"][2].as<std::string>(), "/etc/uscope/agent.yaml");
  EXPECT_EQ(box["volumeMounts"][0]["mountPath"].as<std::string>(), "/etc/uscope");
  EXPECT_EQ(box["ports"][0]["containerPort"].as<int>(), c->listen.port);
  EXPECT_EQ(box["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
}

}  // namespace
}  // namespace uscope
