#pragma once
// The agent's config file (YAML), validated whole before anything attaches: an error names the
// file, line and column, what was wrong and what would work (the closest known key).
//
//   listen: 127.0.0.1:9464          # /metrics and /healthz; loopback unless told otherwise
//   select:                          # which processes; none: every Go HTTP server on the host
//     - exe: /usr/bin/redis-server   # a path or a glob over the executable's path
//       service: cache               # service_name (default: the executable's name)
//     - go_http: true                # every Go program that serves HTTP
//     - cgroup: /system.slice/api.service
//     - container: 3f2a...           # a container id (a prefix of it)
//     - port: 8080                   # whatever listens on this TCP port
//   metrics:
//     http: true                     # RED metrics of Go HTTP servers and clients
//     go_runtime: true               # stat's Go runtime metrics
//     runtime: true                  # stat's Java, Python and Ruby metrics (their GC probes)
//     functions:                     # latency histograms, as `uscope latency`
//       - /usr/bin/redis-server:processCommand
//   profiles:
//     hz: 19
//     period: 10s
//     push: http://127.0.0.1:4040    # Pyroscope's push API
//     directory: /var/lib/uscope/profiles
//   otlp:
//     endpoint: http://127.0.0.1:4318   # OTLP/HTTP; /v1/metrics is appended
//     period: 30s
//   limits:
//     series: 10000                  # metric series kept; beyond, dropped and counted
//     stacks: 100000                 # distinct stacks per profile period
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "export/listen_address.h"
#include "util/result.h"

namespace uscope {

struct ProcessSelector {
  std::string exe;      // path or glob
  std::string service;  // service_name override
  bool go_http = false;
  std::string cgroup;
  std::string container;  // id prefix
  int port = 0;
  int line = 0;  // where it is in the file, for messages
};

struct AgentConfig {
  ListenAddress listen;
  std::vector<ProcessSelector> select;
  bool http_metrics = true;
  bool go_runtime_metrics = false;
  bool runtime_metrics = false;  // managed runtimes (Java, Python, Ruby): uscope stat's counts
  std::vector<std::string> functions;
  bool profiles = false;
  int profile_hz = 19;
  std::chrono::milliseconds profile_period{10'000};
  std::string profile_push;
  std::string profile_directory;
  std::string otlp_endpoint;
  std::chrono::milliseconds otlp_period{30'000};
  size_t max_series = 10'000;
  size_t max_stacks = 100'000;
};

// The defaults, as `uscope agent` runs without a config.
AgentConfig default_agent_config();

// `source` names the file in messages.
Result<AgentConfig> parse_agent_config(const std::string& yaml, const std::string& source);
Result<AgentConfig> load_agent_config(const std::string& path);

}  // namespace uscope
