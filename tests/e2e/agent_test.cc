// `uscope agent` against real processes: the Go HTTP fixture's requests reach Debian's
// prometheus through the agent's /metrics; servers started after the agent are measured from
// their exec and dropped at their exit; SIGHUP re-reads the config (a bad one is refused with its
// line); SIGTERM detaches every probe; 200 servers coming and going leave nothing behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>

#include "../unit/pprof_decode.h"
#include "../unit/pyroscope_receiver.h"
#include "e2e_support.h"
#include "otlp_metrics.pb.h"

namespace uscope::e2e {
namespace {

std::string metrics(int port) {
  return shell(fmt::format("curl -s http://127.0.0.1:{}/metrics", port));
}

// The value of the first exposition line that starts with `series` (name and labels, up to the
// closing brace); -1 when there is none.
double metric_value(const std::string& text, const std::string& series) {
  for (const auto& line : lines_with(text, series))
    if (line.starts_with(series)) return std::stod(line.substr(line.rfind(' ') + 1));
  return -1;
}

std::string server_count(pid_t pid, const std::string& service, const std::string& route,
                         int status) {
  return fmt::format(
      "http_server_request_duration_seconds_count{{service_name=\"{}\",process_pid=\"{}\","
      "http_request_method=\"GET\",http_response_status_code=\"{}\",http_route=\"{}\"",
      service, pid, status, route);
}

// A Go HTTP fixture server on a port of its own (`any_port`: the one it gets), and its base URL.
struct Server {
  explicit Server(const std::string& name, bool any_port = false)
      : port(any_port ? 0 : free_port()) {
    process = std::make_unique<GatedProcess>(
        std::vector<std::string>{fixture("go/" + name), std::to_string(port)});
    process->start();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port); }
  int port;
  std::unique_ptr<GatedProcess> process;
};

// The agent, started with `args` on a port of its own, serving once it says so.
struct Agent {
  explicit Agent(std::vector<std::string> args) : port(free_port()) {
    args.insert(args.begin(),
                {USCOPE_BIN, "agent", "-v", "--listen", "127.0.0.1:" + std::to_string(port)});
    command = std::make_unique<RunningCommand>(args, 200);
  }
  int port;
  std::unique_ptr<RunningCommand> command;
};

// A config that selects only this build's `fixture` (other Go servers may run on the host), and
// then `more`.
std::string config_selecting(const std::string& name, const std::string& more = "") {
  std::string dir = ::testing::TempDir() + "/agent_config.XXXXXX";
  if (!mkdtemp(dir.data())) return "";
  const std::string path = dir + "/agent.yaml";
  std::ofstream(path) << "select:\n  - exe: " << fixture("go/" + name) << "\n" << more;
  return path;
}

size_t fds_of_kind(pid_t pid, const std::string& kind) {
  return std::stoul(
      shell(fmt::format("ls -l /proc/{}/fd | grep -c 'anon_inode:{}' || true", pid, kind)));
}

TEST(agent, prometheus_reads_the_requests_a_go_server_served) {
  USCOPE_REQUIRE_ROOT();
  Server server("gohttp_server");
  ASSERT_TRUE(server.process->wait_for_line("listening on"));
  Agent agent({});
  // Found by the agent's first look at /proc.
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (gohttp_server): HTTP RED", server.process->pid())));
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  auto client = run({fixture("go/gohttp_client"), server.base(), "20", "/hello", "/items/apple",
                     "/items/nope", "/fail"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  ASSERT_NE(client.out.find("done ok=80 failed=0"), std::string::npos) << client.out;

  std::string dir = ::testing::TempDir() + "/agent_prometheus.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::ofstream(dir + "/prometheus.yml") << fmt::format(
      "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: uscope\n"
      "    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
      agent.port);
  const int prom_port = free_port();
  RunningCommand prometheus({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                             "--storage.tsdb.path=" + dir + "/data",
                             "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                            300);
  ASSERT_TRUE(wait_for_port(prom_port));
  auto count = [&](const std::string& route, int status) {
    return fmt::format(
        "http_server_request_duration_seconds_count{{job=\"uscope\",http_route=\"{}\","
        "http_response_status_code=\"{}\",process_pid=\"{}\",service_name=\"gohttp_server\"}}",
        route, status, server.process->pid());
  };
  // Each request is counted in the kernel as its response is written; the agent reads those
  // rows every half second, so the scrape that holds 20 is waited for, and no later one may hold
  // more.
  ASSERT_TRUE(wait_until(
      "prometheus has scraped all of the fixture's /hello requests",
      [&] { return prometheus_query(prom_port, count("/hello", 200)) == "20"; },
      std::chrono::seconds(120)));
  ASSERT_TRUE(wait_until(
      "prometheus has scraped the rest",
      [&] { return prometheus_query(prom_port, count("/fail", 500)) == "20"; },
      std::chrono::seconds(60)));
  EXPECT_EQ(prometheus_query(prom_port, count("/items/apple", 200)), "20");
  EXPECT_EQ(prometheus_query(prom_port, count("/items/nope", 404)), "20");
  // Every Go server on the host is measured: only this one's series are the test's to count.
  EXPECT_EQ(
      prometheus_query(prom_port, fmt::format("sum(http_server_request_duration_seconds_count{{"
                                              "process_pid=\"{}\"}})",
                                              server.process->pid())),
      "80");
  EXPECT_EQ(prometheus_query(prom_port, "up{job=\"uscope\"}"), "1");
  const auto targets = nlohmann::json::parse(
      shell(fmt::format("curl -s http://127.0.0.1:{}/api/v1/targets", prom_port)), nullptr, false);
  ASSERT_FALSE(targets.is_discarded());
  EXPECT_EQ(targets["data"]["activeTargets"][0]["lastError"], "");
  // What promtool says of the exposition itself.
  const std::string file = dir + "/metrics.txt";
  std::ofstream(file) << metrics(agent.port);
  EXPECT_EQ(shell(fmt::format("promtool check metrics < {} 2>&1; echo rc=$?", file)), "rc=0\n");

  prometheus.signal(SIGTERM);
  prometheus.finish();
  agent.command->signal(SIGTERM);
  auto r = agent.command->finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(links_released("trace_", agent.command->pid()));
}

TEST(agent, a_server_started_later_is_measured_from_its_exec_and_dropped_at_its_exit) {
  USCOPE_REQUIRE_ROOT();
  Agent agent({"--config", config_selecting("gohttp_server_stripped")});
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  Server server("gohttp_server_stripped");
  const pid_t pid = server.process->pid();
  // The server waits on its gate until start(): the agent's verdict came at its exec.
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (gohttp_server_stripped): HTTP RED", pid)));
  ASSERT_TRUE(server.process->wait_for_line("listening on"));
  auto client = run({fixture("go/gohttp_client"), server.base(), "7", "/hello"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  const std::string hello = server_count(pid, "gohttp_server_stripped", "/hello", 200) + "}";
  ASSERT_TRUE(wait_until("the agent has read the 7 requests",
                         [&] { return metric_value(metrics(agent.port), hello) == 7; }));
  const std::string during = metrics(agent.port);
  EXPECT_EQ(metric_value(during, hello), 7);
  EXPECT_EQ(metric_value(during, "uscope_jobs"), 1);
  for (const char* cause : {"ring_full", "read_error", "no_entry", "malformed", "truncated"})
    EXPECT_EQ(metric_value(during, fmt::format("uscope_events_lost_total{{cause=\"{}\"}}", cause)),
              0)
        << cause;
  EXPECT_EQ(bpf_links_held_by(agent.command->pid(), "trace_").size(), 1u);

  server.process.reset();  // killed
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("process {} (gohttp_server_stripped) dropped", pid)));
  const std::string after = metrics(agent.port);
  EXPECT_EQ(after.find(fmt::format("process_pid=\"{}\"", pid)), std::string::npos) << after;
  EXPECT_EQ(metric_value(after, "uscope_jobs"), 0);
  EXPECT_TRUE(wait_until("the agent holds no link", [&] {
    return bpf_links_held_by(agent.command->pid(), "trace_").empty();
  }));
  agent.command->signal(SIGINT);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
}

// A binary replaced under a running service (a package upgrade renames a new file over the old
// path, and the service restarts): the new process is planned from the new file, never from what
// was read of the old one at the same path (Beyla's issue #2350). The two builds differ (one with
// DWARF, one stripped: other addresses), so a plan read from the old file would miss every request.
TEST(agent, a_binary_replaced_at_its_path_is_read_again) {
  USCOPE_REQUIRE_ROOT();
  std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "agent_replaced.XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string exe = dir + "/svc";
  auto install = [&](const std::string& build) {
    // As dpkg does: the new file written beside, then renamed over the path.
    return shell(fmt::format("cp {} {}.new && chmod 755 {}.new && mv -f {}.new {} && echo ok",
                             fixture("go/" + build), exe, exe, exe, exe)) == "ok\n";
  };
  ASSERT_TRUE(install("gohttp_server"));
  const std::string config = dir + "/agent.yaml";
  std::ofstream(config) << "select:\n  - exe: " << exe << "\n";
  Agent agent({"--config", config});
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  struct Build {
    const char* name;
    int requests;
    const char* route;
  };
  for (const Build& build :
       {Build{"gohttp_server", 5, "/hello"}, Build{"gohttp2_server", 9, "/ok"}}) {
    SCOPED_TRACE(build.name);
    ASSERT_TRUE(install(build.name));
    const int port = free_port();
    auto server =
        std::make_unique<GatedProcess>(std::vector<std::string>{exe, std::to_string(port)});
    server->start();
    const pid_t pid = server->pid();
    ASSERT_TRUE(
        agent.command->wait_for_stderr(fmt::format("watching process {} (svc): HTTP RED", pid)));
    ASSERT_TRUE(server->wait_for_line("listening on"));
    if (build.route == std::string("/hello")) {
      auto client = run({fixture("go/gohttp_client"), "http://127.0.0.1:" + std::to_string(port),
                         std::to_string(build.requests), build.route});
      ASSERT_EQ(client.exit_code, 0) << client.err;
    } else {  // the second program serves TLS (HTTP/1.1 asked for here)
      std::vector<std::string> argv = {"curl", "--http1.1", "-k", "-sS", "-o", "/dev/null"};
      for (int i = 0; i < build.requests; ++i)
        argv.push_back(fmt::format("https://127.0.0.1:{}{}", port, build.route));
      auto client = run(argv);
      ASSERT_EQ(client.exit_code, 0) << client.err;
    }
    const std::string count = server_count(pid, "svc", build.route, 200) + "}";
    ASSERT_TRUE(wait_until(fmt::format("the agent has read the {} requests", build.requests), [&] {
      return metric_value(metrics(agent.port), count) == build.requests;
    })) << metrics(agent.port);
    server.reset();  // killed: the service stops before its upgrade
    ASSERT_TRUE(agent.command->wait_for_stderr(fmt::format("process {} (svc) dropped", pid)));
  }
  agent.command->signal(SIGTERM);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
}

// HTTP/2 requests are measured as HTTP/1 ones are; each hijacked connection is counted lost as
// `unfinished` while the agent runs (at the hijack), never as a request served. The counts
// are curl's own (its status lines) and the fixture's (its hijack lines).
TEST(agent, http2_requests_measured_and_hijacked_ones_counted_unfinished) {
  USCOPE_REQUIRE_ROOT();
  Agent agent({"--config", config_selecting("gohttp2_server_stripped")});
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  Server server("gohttp2_server_stripped");
  const pid_t pid = server.process->pid();
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (gohttp2_server_stripped): HTTP RED", pid)));
  ASSERT_TRUE(server.process->wait_for_line("listening on"));
  const std::string base = "https://127.0.0.1:" + std::to_string(server.port);
  std::vector<std::string> argv = {"curl", "--http2", "-k",
                                   "-sS",  "-w",      "%{http_version} %{response_code}\n"};
  for (int i = 0; i < 6; ++i) argv.insert(argv.end(), {"-o", "/dev/null", base + "/created"});
  auto h2 = run(argv);
  ASSERT_EQ(h2.exit_code, 0) << h2.err;
  EXPECT_EQ(h2.out, "2 201\n2 201\n2 201\n2 201\n2 201\n2 201\n");
  const int hijacks = 4;
  for (int i = 0; i < hijacks; ++i) {
    auto hj = run({"curl", "--http1.1", "-k", "-sS", base + "/hijack"});
    ASSERT_EQ(hj.exit_code, 0) << hj.err;
    ASSERT_TRUE(server.process->wait_for_line("hijacked " + std::to_string(i + 1)));
  }
  const std::string created = server_count(pid, "gohttp2_server_stripped", "/created", 201) + "}";
  const std::string unfinished = "uscope_events_lost_total{cause=\"unfinished\"}";
  ASSERT_TRUE(wait_until("the agent has read the 6 HTTP/2 requests",
                         [&] { return metric_value(metrics(agent.port), created) == 6; }));
  ASSERT_TRUE(wait_until("the hijacked requests are counted unfinished",
                         [&] { return metric_value(metrics(agent.port), unfinished) == hijacks; }));
  const std::string m = metrics(agent.port);
  EXPECT_EQ(metric_value(m, created), 6);
  EXPECT_EQ(lines_with(m, "http_route=\"/hijack\"").size(), 0u) << m;
  for (const char* cause : {"ring_full", "read_error", "no_entry", "malformed", "status_unknown"})
    EXPECT_EQ(metric_value(m, fmt::format("uscope_events_lost_total{{cause=\"{}\"}}", cause)), 0)
        << cause;
  agent.command->signal(SIGTERM);
  auto r = agent.command->finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(links_released("trace_", agent.command->pid()));
}

TEST(agent, sighup_rereads_the_config_and_a_bad_one_is_refused_with_its_line) {
  USCOPE_REQUIRE_ROOT();
  std::string dir = ::testing::TempDir() + "/agent_config.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/agent.yaml";
  std::ofstream(path) << "select:\n  - exe: " << fixture("go/gohttp_server_stripped")
                      << "\n    service: shop\n";
  Server plain("gohttp_server"), stripped("gohttp_server_stripped");
  ASSERT_TRUE(plain.process->wait_for_line("listening on"));
  ASSERT_TRUE(stripped.process->wait_for_line("listening on"));
  Agent agent({"--config", path});
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (shop)", stripped.process->pid())));
  auto client = run({fixture("go/gohttp_client"), stripped.base(), "3", "/hello"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  const std::string shop = server_count(stripped.process->pid(), "shop", "/hello", 200) + "}";
  ASSERT_TRUE(wait_until("the agent has read the 3 requests",
                         [&] { return metric_value(metrics(agent.port), shop) == 3; }));
  EXPECT_EQ(metrics(agent.port).find(fmt::format("process_pid=\"{}\"", plain.process->pid())),
            std::string::npos);

  std::ofstream(path) << "select:\n  - exe: " << fixture("go/gohttp_server")
                      << "\nmetrix:\n  http: true\n";
  agent.command->signal(SIGHUP);
  ASSERT_TRUE(agent.command->wait_for_stderr("going on with the config read before"));
  EXPECT_TRUE(agent.command->wait_for_stderr(path + ":3:1"));
  EXPECT_TRUE(agent.command->wait_for_stderr("metrics"));  // the closest key
  EXPECT_EQ(metric_value(metrics(agent.port), shop), 3);   // still measured

  std::ofstream(path) << "select:\n  - exe: " << fixture("go/gohttp_server") << "\n";
  agent.command->signal(SIGHUP);
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (gohttp_server)", plain.process->pid())));
  ASSERT_TRUE(agent.command->wait_for_stderr("config re-read; watching 1 process(es)"));
  const std::string after = metrics(agent.port);
  EXPECT_EQ(after.find(fmt::format("process_pid=\"{}\"", stripped.process->pid())),
            std::string::npos);
  EXPECT_EQ(metric_value(after, "uscope_config_reloads_total{result=\"ok\"}"), 1);
  EXPECT_EQ(metric_value(after, "uscope_config_reloads_total{result=\"failed\"}"), 1);
  agent.command->signal(SIGTERM);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
  EXPECT_TRUE(links_released("trace_", agent.command->pid()));
}

// 200 Go servers come and go, 10 at a time: each is measured and dropped, and afterwards the
// agent holds no BPF link, program or map, and its memory is back near where the first round
// left it.
TEST(agent, two_hundred_processes_coming_and_going_leave_nothing_behind) {
  USCOPE_REQUIRE_ROOT();
  // Under ASan (build-asan), freed memory is held in a quarantine (256 MiB by default) on purpose:
  // the agent's level is measured without it; other builds ignore the variable. Leaks themselves
  // fail the agent's exit there (detect_leaks).
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_before = asan ? asan : "";
  setenv("ASAN_OPTIONS",
         (asan_before + (asan_before.empty() ? "" : ":") +
          "quarantine_size_mb=0:thread_local_quarantine_size_kb=0")
             .c_str(),
         1);
  Agent agent({"--config", config_selecting("gohttp_server_stripped")});
  if (asan)
    setenv("ASAN_OPTIONS", asan_before.c_str(), 1);
  else
    unsetenv("ASAN_OPTIONS");
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  const pid_t apid = agent.command->pid();
  auto rss_kib = [&] {
    return std::stoul(shell(fmt::format("awk '/VmRSS/ {{print $2}}' /proc/{}/status", apid)));
  };
  constexpr int kRounds = 20, kPerRound = 10;
  unsigned long after_first = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::unique_ptr<Server>> servers;
    for (int i = 0; i < kPerRound; ++i)
      servers.push_back(std::make_unique<Server>("gohttp_server_stripped", true));
    for (const auto& s : servers) {
      ASSERT_TRUE(agent.command->wait_for_stderr(
          fmt::format("watching process {} (gohttp_server_stripped)", s->process->pid())));
    }
    EXPECT_EQ(bpf_links_held_by(apid, "trace_").size(), static_cast<size_t>(kPerRound));
    std::vector<pid_t> pids;
    for (const auto& s : servers) pids.push_back(s->process->pid());
    servers.clear();  // each killed
    for (pid_t pid : pids)
      ASSERT_TRUE(agent.command->wait_for_stderr(
          fmt::format("process {} (gohttp_server_stripped) dropped", pid)));
    if (round == 0) after_first = rss_kib();
  }
  EXPECT_TRUE(wait_until("the agent holds no link",
                         [&] { return bpf_links_held_by(apid, "trace_").empty(); }));
  // The agent says "dropped" once a job's probes are detached, and frees its programs and maps
  // just after: waited for, as the link above.
  EXPECT_TRUE(wait_until("the agent holds no BPF program or map", [&] {
    return fds_of_kind(apid, "bpf-prog") == 0 && fds_of_kind(apid, "bpf-map") == 0;
  }));
  EXPECT_EQ(metric_value(metrics(agent.port), "uscope_jobs"), 0);
  const unsigned long after_all = rss_kib();
  // Back to its level: what 19 more rounds left is within 8 MiB (the allocator keeps some).
  EXPECT_LT(after_all, after_first + 8 * 1024) << after_first << " KiB after the first round";
  agent.command->signal(SIGTERM);
  auto r = agent.command->finish();
  EXPECT_EQ(r.exit_code, 0);
  // Why a process was watched without its probes (an attach that failed), when a count was off.
  if (::testing::Test::HasFailure())
    for (const auto& line : lines_with(r.err, "uscope: process "))
      if (line.find("): ") != std::string::npos) ADD_FAILURE() << line;
}

// The Go runtime's figures on /metrics equal what the fixture's runtime counted itself over the
// rounds it ran once the agent had attached.
TEST(agent, go_runtime_metrics_equal_what_the_runtime_counted) {
  USCOPE_REQUIRE_ROOT();
  Agent agent(
      {"--config", config_selecting("goruntime", "metrics:\n  http: false\n  go_runtime: true\n")});
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  const int rounds = 8, workers = 16;
  GatedProcess go({fixture("go/goruntime"), std::to_string(rounds), std::to_string(workers)});
  const pid_t pid = go.pid();
  ASSERT_TRUE(go.wait_for_line("ready"));
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (goruntime): Go runtime", pid)));
  go.start();
  ASSERT_TRUE(go.wait_for_line("gc_cycles="));
  // "gc_cycles=C goroutines=G" (GatedProcess keeps the lines it read).
  const std::string line = go.last_line();
  uint64_t cycles = 0, goroutines = 0;
  ASSERT_EQ(std::sscanf(line.c_str(), "gc_cycles=%lu goroutines=%lu", &cycles, &goroutines), 2)
      << line;
  ASSERT_GE(cycles, uint64_t(rounds)) << line;
  const std::string labels = fmt::format("{{service_name=\"goruntime\",process_pid=\"{}\"}}", pid);
  // The agent reads the counts every 5 s.
  ASSERT_TRUE(wait_until("the agent has the fixture's GC cycles", [&] {
    return metric_value(metrics(agent.port), "uscope_go_gc_cycles_total" + labels) ==
           static_cast<double>(cycles);
  }));
  ASSERT_TRUE(wait_until("the agent's census has the fixture's goroutines", [&] {
    return metric_value(metrics(agent.port), "go_goroutine_count" + labels) ==
           static_cast<double>(goroutines);
  }));
  const std::string m = metrics(agent.port);
  // Each cycle stops the world twice (sweep and mark termination); nothing else in the fixture
  // stops it.
  EXPECT_EQ(metric_value(m, "uscope_go_stw_duration_seconds_count" + labels),
            static_cast<double>(2 * cycles));
  const double created = metric_value(m, "uscope_go_goroutine_created_total" + labels);
  EXPECT_GE(created, rounds * workers);  // the workers, and the runtime's own few
  EXPECT_LE(created, rounds * workers + 64);
  EXPECT_EQ(metric_value(m, "uscope_events_lost_total{cause=\"ring_full\"}"), 0);
  EXPECT_EQ(metric_value(m, "uscope_events_lost_total{cause=\"census_failed\"}"), 0);
  agent.command->signal(SIGTERM);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
  EXPECT_TRUE(links_released("trace_", agent.command->pid()));
  EXPECT_TRUE(links_released("count_hit", agent.command->pid()));
}

// A config that selects the program at `exe` as service `service`, and then `more`.
std::string config_selecting_exe(const std::string& exe, const std::string& service,
                                 const std::string& more) {
  std::string dir = ::testing::TempDir() + "/agent_config.XXXXXX";
  if (!mkdtemp(dir.data())) return "";
  const std::string path = dir + "/agent.yaml";
  std::ofstream(path) << "select:\n  - exe: " << exe << "\n    service: " << service << "\n"
                      << more;
  return path;
}

// metrics.runtime: a Ruby and a Java process's counters move by what the programs themselves
// counted while they worked (GC.stat's collections and the exceptions raised; the JVM's MXBeans'
// collections and the threads started).
TEST(agent, managed_runtime_counters_move_by_what_the_runtimes_counted) {
  USCOPE_REQUIRE_ROOT();
  const std::string java_exe = std::filesystem::canonical("/usr/bin/java").string();
  std::string config = config_selecting_exe("/usr/bin/ruby3.1", "rb", "");
  std::ofstream(config, std::ios::app) << "  - exe: " << java_exe << "\n    service: jvm\n"
                                       << "metrics:\n  http: false\n  runtime: true\n";
  Agent agent({"--config", config});
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  GatedProcess ruby({"/usr/bin/ruby", fixture("runtime/runtime_events.rb")});
  // No compiler thread started on the JVM's own account while the fixture works.
  GatedProcess java({"/usr/bin/java", "-Xmx64m", "-XX:-UseDynamicNumberOfCompilerThreads", "-cp",
                     fixture("runtime"), "RuntimeEvents"});
  ASSERT_TRUE(ruby.wait_for_line("ready"));
  ASSERT_TRUE(java.wait_for_line("ready"));
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (rb): Ruby (CRuby) runtime", ruby.pid())));
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (jvm): Java (HotSpot) runtime", java.pid())));
  auto series = [](const std::string& name, const std::string& service, pid_t pid,
                   const std::string& runtime) {
    return fmt::format("{}{{service_name=\"{}\",process_pid=\"{}\",process_runtime_name=\"{}\"}}",
                       name, service, pid, runtime);
  };
  const std::string rb_gc = series("uscope_runtime_gc_collections_total", "rb", ruby.pid(), "ruby");
  const std::string rb_raised = series("uscope_runtime_exceptions_total", "rb", ruby.pid(), "ruby");
  const std::string jvm_gc =
      series("uscope_runtime_gc_collections_total", "jvm", java.pid(), "java");
  const std::string jvm_threads =
      series("uscope_runtime_threads_started_total", "jvm", java.pid(), "java");
  // Every counter is there from the attach; what the JVM did while it started is in it already.
  std::string before;
  ASSERT_TRUE(wait_until("the agent shows both processes' counters", [&] {
    before = metrics(agent.port);
    return metric_value(before, rb_gc) >= 0 && metric_value(before, jvm_threads) >= 0;
  }));
  auto ask = [](GatedProcess& p, const std::string& command) {
    p.send(command + "\n");
    const std::string word = command.substr(0, command.find(' '));
    EXPECT_TRUE(p.wait_for_line(word));
    return std::stoll(p.last_line().substr(word.size()));
  };
  const int64_t rb_collections = ask(ruby, "gc 3");
  ask(ruby, "raise 5");
  const int64_t jvm_collections = ask(java, "gc 2");
  ask(java, "threads 4");
  ASSERT_TRUE(wait_until("the agent has counted what the programs did", [&] {
    const std::string m = metrics(agent.port);
    return metric_value(m, rb_gc) - metric_value(before, rb_gc) == rb_collections &&
           metric_value(m, rb_raised) - metric_value(before, rb_raised) == 5 &&
           metric_value(m, jvm_gc) - metric_value(before, jvm_gc) == jvm_collections &&
           metric_value(m, jvm_threads) - metric_value(before, jvm_threads) == 4;
  })) << metrics(agent.port);
  const std::string m = metrics(agent.port);
  EXPECT_GT(
      metric_value(m, series("uscope_runtime_gc_duration_seconds_total", "rb", ruby.pid(), "ruby")),
      0);
  EXPECT_EQ(metric_value(m, "uscope_jobs"), 2);
  EXPECT_EQ(metric_value(m, "uscope_events_lost_total{cause=\"ring_full\"}"), 0);
  ruby.send("exit\n");
  java.send("exit\n");
  ruby.wait();
  java.wait();
  ASSERT_TRUE(agent.command->wait_for_stderr(fmt::format("process {} (rb) dropped", ruby.pid())));
  ASSERT_TRUE(agent.command->wait_for_stderr(fmt::format("process {} (jvm) dropped", java.pid())));
  agent.command->signal(SIGTERM);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
  EXPECT_TRUE(links_released("trace_", agent.command->pid()));
}

// Profiles reach a Pyroscope stand-in every period: one push per selected process, labelled with
// it, whose pprof names the function the fixture spends its time in; no other process's samples.
TEST(agent, profiles_of_the_selected_processes_are_pushed_each_period) {
  USCOPE_REQUIRE_ROOT();
  test::PyroscopeReceiver pyroscope;
  Server server("gohttp_server");
  ASSERT_TRUE(server.process->wait_for_line("listening on"));
  Agent agent({"--config", config_selecting("gohttp_server",
                                            "profiles:\n  hz: 99\n  period: 1s\n"
                                            "  push: " +
                                                pyroscope.url() + "\n")});
  ASSERT_TRUE(agent.command->wait_for_stderr("agent serving"));
  RunningCommand load({fixture("go/gohttp_client"), server.base(), "0", "/slow"});
  const std::string pid = std::to_string(server.process->pid());
  ASSERT_TRUE(wait_until(
      "two pushes with main.busy",
      [&] {
        int with_busy = 0;
        for (const auto& push : pyroscope.received())
          if (push.parts.contains("profile"))
            for (const auto& [stack, n] :
                 test::pprof_stacks(test::pprof_decoded(push.parts.at("profile"))))
              if (stack.find("main.busy") != std::string::npos) {
                ++with_busy;
                break;
              }
        return with_busy >= 2;
      },
      std::chrono::seconds(60)));
  load.signal(SIGKILL);
  for (const auto& push : pyroscope.received()) {
    EXPECT_EQ(push.path, "/ingest");
    const std::string& name = push.query.at("name");
    EXPECT_TRUE(name.starts_with("gohttp_server{")) << name;
    EXPECT_NE(name.find("pid=" + pid), std::string::npos) << name;
    EXPECT_EQ(push.query.at("sampleRate"), "99");
  }
  const std::string m = metrics(agent.port);
  EXPECT_EQ(metric_value(m, "uscope_profile_pushes_total{result=\"failed\"}"), 0);
  agent.command->signal(SIGTERM);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
}

// The metrics go to an OTLP collector stand-in as /v1/metrics protobuf pushes: the request count
// of the fixture's route, as the fixture made them, under the process's attributes.
TEST(agent, otlp_pushes_carry_the_requests_the_fixture_made) {
  USCOPE_REQUIRE_ROOT();
  test::PyroscopeReceiver collector;
  Server server("gohttp_server");
  ASSERT_TRUE(server.process->wait_for_line("listening on"));
  Agent agent(
      {"--config", config_selecting("gohttp_server",
                                    "otlp:\n  endpoint: " + collector.url() + "\n  period: 1s\n")});
  ASSERT_TRUE(agent.command->wait_for_stderr(
      fmt::format("watching process {} (gohttp_server)", server.process->pid())));
  auto client = run({fixture("go/gohttp_client"), server.base(), "9", "/hello"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  const std::string pid = std::to_string(server.process->pid());
  // The /hello count of the latest push, -1 before one has it.
  auto pushed_count = [&]() -> int64_t {
    int64_t count = -1;
    for (const auto& push : collector.received()) {
      EXPECT_EQ(push.path, "/v1/metrics");
      EXPECT_EQ(push.content_type, "application/x-protobuf");
      otlp::ExportMetricsServiceRequest req;
      if (!req.ParseFromString(push.body)) {
        ADD_FAILURE() << "a push that does not parse";
        continue;
      }
      for (const auto& rm : req.resource_metrics())
        for (const auto& sm : rm.scope_metrics())
          for (const auto& m : sm.metrics()) {
            if (m.name() != "http.server.request.duration") continue;
            for (const auto& p : m.histogram().data_points()) {
              std::map<std::string, std::string> attrs;
              for (const auto& kv : p.attributes()) attrs[kv.key()] = kv.value().string_value();
              if (attrs["process.pid"] == pid && attrs["http.route"] == "/hello")
                count = static_cast<int64_t>(p.count());
            }
          }
    }
    return count;
  };
  ASSERT_TRUE(wait_until("a push with the 9 requests", [&] { return pushed_count() == 9; }));
  const std::string m = metrics(agent.port);
  EXPECT_GE(metric_value(m, "uscope_pushes_total{result=\"sent\"}"), 1);
  EXPECT_EQ(metric_value(m, "uscope_pushes_total{result=\"failed\"}"), 0);
  agent.command->signal(SIGTERM);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
}

// A function the config names is timed in the process that runs it: every call of main.busy the
// fixture's /slow requests made (one each), none without its entry.
TEST(agent, functions_the_config_names_are_timed_call_by_call) {
  USCOPE_REQUIRE_ROOT();
  Server server("gohttp_server");
  ASSERT_TRUE(server.process->wait_for_line("listening on"));
  Agent agent({"--config", config_selecting("gohttp_server",
                                            "metrics:\n  http: false\n  functions:\n    - " +
                                                fixture("go/gohttp_server") + ":main.busy\n")});
  ASSERT_TRUE(agent.command->wait_for_stderr(fmt::format(
      "watching process {} (gohttp_server): 1 function(s) timed", server.process->pid())));
  auto client = run({fixture("go/gohttp_client"), server.base(), "6", "/slow"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  const std::string labels = fmt::format(
      "{{service_name=\"gohttp_server\",process_pid=\"{}\",code_function=\"main.busy\"}}",
      server.process->pid());
  ASSERT_TRUE(wait_until("the agent has the 6 calls", [&] {
    return metric_value(metrics(agent.port), "uscope_function_duration_seconds_count" + labels) ==
           6;
  }));
  EXPECT_EQ(
      metric_value(metrics(agent.port), "uscope_function_returns_without_entry_total" + labels), 0);
  agent.command->signal(SIGTERM);
  EXPECT_EQ(agent.command->finish().exit_code, 0);
  EXPECT_TRUE(links_released("trace_", agent.command->pid()));
}

}  // namespace
}  // namespace uscope::e2e
