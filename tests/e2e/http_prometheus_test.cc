// `uscope http` on Debian's prometheus (/usr/bin/prometheus: stripped Go, its router
// julienschmidt/httprouter behind prometheus/common/route), serving on loopback.
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>

#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// curl's status for GET `url`, the request a test compares uscope's line with.
std::string curl_status(const std::string& url) {
  auto r = run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url});
  EXPECT_EQ(r.exit_code, 0) << url << ": " << r.err;
  return r.out;
}

// httprouter answers /graph with a redirect to /graph/ and assigns req.URL.Path = "/graph/" on
// the way: the path is the one the request came with. /api/v1/query is a route of its own
// (prometheus's own metrics name its handler so), not /api/*/query.
TEST(http_prometheus, paths_as_requested_and_routes_from_what_varies) {
  USCOPE_REQUIRE_ROOT();
  std::string tmpl = ::testing::TempDir() + "/http_prometheus.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/prometheus.yml") << "global:\n  scrape_interval: 1h\n";  // no scrapes
  const int port = free_port();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  RunningCommand prometheus({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                             "--storage.tsdb.path=" + dir + "/data",
                             "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                            300);
  ASSERT_TRUE(wait_for_port(port));
  auto tracer = RunningCommand::uscope(
      {"http", "--server", "--json", "-p", std::to_string(prometheus.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  constexpr int kRequests = 7;
  std::map<std::string, std::string> status_of = {{"/graph", ""}, {"/api/v1/query", ""}};
  for (int i = 0; i < kRequests; ++i) {
    status_of["/graph"] = curl_status(base + "/graph");
    status_of["/api/v1/query"] = curl_status(base + "/api/v1/query?query=up");
  }
  EXPECT_EQ(status_of["/graph"], "301");
  EXPECT_EQ(status_of["/api/v1/query"], "200");
  // Each response left after ServeHTTP returned: its event is in the ring, read at the stop.
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto objs = json_lines(r.out);
  std::map<std::string, int> requests;  // "path status route" -> count
  for (const auto& j : objs)
    if (j["kind"] == "request")
      ++requests[fmt::format("{} {} {}", j["path"].get<std::string>(), j["status"].get<int>(),
                             j["route"].get<std::string>())];
  const std::map<std::string, int> want = {
      {"/graph 301 /graph", kRequests},
      {"/api/v1/query 200 /api/v1/query", kRequests},
  };
  EXPECT_EQ(requests, want) << r.out;
  ASSERT_FALSE(objs.empty());
  const auto& s = objs.back();
  ASSERT_EQ(s["kind"], "summary") << r.out;
  ASSERT_EQ(s["routes"].size(), 2u) << s.dump();
  EXPECT_EQ(s["routes"][0]["route"], "/api/v1/query");
  EXPECT_EQ(s["routes"][0]["count"], kRequests);
  EXPECT_EQ(s["routes"][0]["statuses"]["200"], kRequests);
  EXPECT_EQ(s["routes"][1]["route"], "/graph");
  EXPECT_EQ(s["routes"][1]["count"], kRequests);
  EXPECT_EQ(s["routes"][1]["statuses"]["301"], kRequests);
  for (const auto& [cause, n] : s["losses"].items()) EXPECT_EQ(n, 0) << cause;
  // Prometheus's own count of the route (its router's pattern), now that uscope is gone.
  auto metrics = run({"curl", "-s", base + "/metrics"});
  EXPECT_NE(metrics.out.find(fmt::format(
                "prometheus_http_requests_total{{code=\"200\",handler=\"/api/v1/query\"}} {}\n",
                kRequests)),
            std::string::npos)
      << lines_with(metrics.out, "prometheus_http_requests_total").size();
  prometheus.signal(SIGKILL);
  prometheus.finish();
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
