// `uscope agent`: the per-node agent (cli/node_agent.h). This file reads its options and its
// config, and runs it.
#include <fmt/core.h>

#include <memory>
#include <string>

#include "agent/agent_config.h"
#include "attach/bpf_features.h"
#include "cli/command.h"
#include "cli/node_agent.h"
#include "export/http_push.h"

namespace uscope::cli {

namespace {

struct AgentCommandOptions {
  std::string config;
  std::string listen;
  std::string otlp;
  bool verbose = false;
};

// The config file (or the defaults), with the flags over it: at the start and at each SIGHUP.
Result<AgentConfig> read_config(const AgentCommandOptions& o) {
  auto config =
      o.config.empty() ? Result<AgentConfig>(default_agent_config()) : load_agent_config(o.config);
  if (!config) return config;
  if (!o.listen.empty()) {
    auto where = parse_listen_address(o.listen);
    if (!where) return fail("--listen: {}", where.error().message);
    config->listen = *where;
  }
  if (!o.otlp.empty()) {
    if (auto r = check_push_url(o.otlp); !r) return fail("--otlp: {}", r.error().message);
    config->otlp_endpoint = o.otlp;
  }
  return config;
}

int run_agent(const AgentCommandOptions& o) {
  auto config = read_config(o);
  if (!config) return report_error(config.error().message, kExitUsage);
  if (auto r = require_tracing_capabilities(false); !r) return report_error(r.error().message);
  NodeAgent::ConfigReader reread;
  if (!o.config.empty()) reread = [o] { return read_config(o); };
  auto agent = NodeAgent::create(std::move(*config), std::move(reread), o.verbose);
  if (!agent) return report_error(agent.error().message);
  return (*agent)->run();
}

}  // namespace

constexpr const char* kAgentExamples = R"(Examples:
  uscope agent --listen 127.0.0.1:9464
      every Go HTTP server on the host: RED metrics on http://127.0.0.1:9464/metrics
  uscope agent --config /etc/uscope/agent.yaml
      the processes, metrics and exports the file names (docs/AGENT.md shows one)
  uscope agent --otlp http://127.0.0.1:4318
      and the same metrics pushed to an OpenTelemetry collector every 30 s

Reference: docs/AGENT.md)";

void add_agent_command(CLI::App& app, Run& run) {
  auto opts = std::make_shared<AgentCommandOptions>();
  auto* cmd = app.add_subcommand(
      "agent", "Keep measuring this node's processes: RED metrics on /metrics, pushed to OTLP");
  cmd->add_option("--config", opts->config, "The agent's YAML config (docs/AGENT.md)");
  cmd->add_option("--listen", opts->listen,
                  "Serve /metrics and /healthz on ADDRESS:PORT (default 127.0.0.1:9464)");
  cmd->add_option("--otlp", opts->otlp,
                  "Push the metrics to this OTLP/HTTP collector (/v1/metrics is appended)");
  cmd->add_flag("-v,--verbose", opts->verbose,
                "Say which processes are picked, dropped, and why one could not be measured");
  add_examples(cmd, kAgentExamples);
  cmd->callback([&run, opts] { run = [opts] { return run_agent(*opts); }; });
}

}  // namespace uscope::cli
