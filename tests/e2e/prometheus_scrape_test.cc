// Debian's prometheus scrapes the agent's listener and exposition on loopback: its query API
// gives back the request counts and bucket counts the test fed in, and the target is up with no
// scrape error. (The agent runs these parts on its runner; here the test serves them itself.)
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "agent/http_metrics.h"
#include "e2e_support.h"
#include "export/http_listener.h"
#include "export/prometheus_text.h"

namespace uscope::e2e {
namespace {

TEST(prometheus_scrape, prometheus_reads_the_counts_the_agent_exposes) {
  HttpMetrics red;
  auto served = [&](const std::string& path, int status, uint64_t ns) {
    HttpExchange x;
    x.method = "GET";
    x.path = x.url = path;
    x.status = status;
    x.duration_ns = ns;
    red.add(x);
  };
  for (int i = 0; i < 7; ++i) served("/api/items", 200, 3'000'000);    // 3 ms
  for (int i = 0; i < 2; ++i) served("/api/items", 500, 300'000'000);  // 300 ms
  MetricsSnapshot snapshot;
  red.snapshot(snapshot, {{"service.name", "fixture"}});
  const std::string text = prometheus_text(snapshot);

  auto listener = HttpListener::start(*parse_listen_address("127.0.0.1:0"),
                                      {{"/metrics", [&] {
                                          return HttpReply{200, kPrometheusTextType, text};
                                        }}});
  ASSERT_TRUE(listener) << listener.error().message;
  const int stop = eventfd(0, EFD_CLOEXEC);
  std::thread serve([&] {
    for (;;) {
      pollfd fds[2] = {{(*listener)->fd(), POLLIN, 0}, {stop, POLLIN, 0}};
      poll(fds, 2, 1000);
      if (fds[1].revents) return;
      (*listener)->serve();
    }
  });

  std::string dir = ::testing::TempDir() + "/prometheus_scrape.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::ofstream(dir + "/prometheus.yml") << fmt::format(
      "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: uscope\n"
      "    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
      (*listener)->port());
  const int port = free_port();
  RunningCommand prometheus({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                             "--storage.tsdb.path=" + dir + "/data",
                             "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                            300);
  ASSERT_TRUE(wait_for_port(port));
  const std::string count =
      "http_server_request_duration_seconds_count{job=\"uscope\",http_route=\"/api/items\","
      "http_response_status_code=\"200\",service_name=\"fixture\"}";
  ASSERT_TRUE(wait_until(
      "prometheus has scraped the agent", [&] { return !prometheus_query(port, count).empty(); },
      std::chrono::seconds(120)));
  EXPECT_EQ(prometheus_query(port, count), "7");
  EXPECT_EQ(
      prometheus_query(
          port,
          "sum(http_server_request_duration_seconds_count{http_response_status_code=\"500\"})"),
      "2");
  // The 300 ms requests sit above the 250 ms bound and within 500 ms.
  EXPECT_EQ(prometheus_query(
                port,
                "http_server_request_duration_seconds_bucket{http_response_status_code=\"500\","
                "le=\"0.25\"}"),
            "0");
  EXPECT_EQ(prometheus_query(
                port,
                "http_server_request_duration_seconds_bucket{http_response_status_code=\"500\","
                "le=\"0.5\"}"),
            "2");
  EXPECT_EQ(prometheus_query(port, "up{job=\"uscope\"}"), "1");
  const std::string targets =
      shell(fmt::format("curl -s http://127.0.0.1:{}/api/v1/targets", port));
  auto t = nlohmann::json::parse(targets, nullptr, false);
  ASSERT_FALSE(t.is_discarded()) << targets;
  EXPECT_EQ(t["data"]["activeTargets"][0]["lastError"], "") << targets;
  EXPECT_GE((*listener)->served(), 1u);
  EXPECT_EQ((*listener)->refused(), 0u);

  prometheus.signal(SIGTERM);
  prometheus.finish();
  uint64_t one = 1;
  (void)!write(stop, &one, sizeof one);
  serve.join();
  close(stop);
}

}  // namespace
}  // namespace uscope::e2e
