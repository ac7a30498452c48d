// The agent's HTTP RED: exact buckets at the advised bounds, one series per method, status and
// route, routes templated as `uscope http` templates them, the series cap, and the Prometheus
// text a scrape reads.
#include "agent/http_metrics.h"

#include <gtest/gtest.h>

#include "export/prometheus_text.h"

namespace uscope {
namespace {

HttpExchange served(std::string method, std::string path, int status, uint64_t ns) {
  HttpExchange x;
  x.side = HttpSide::Server;
  x.method = std::move(method);
  x.path = path;
  x.url = path;
  x.status = status;
  x.duration_ns = ns;
  return x;
}

const MetricPoint* find(const MetricsSnapshot& s, const std::string& route,
                        const std::string& status) {
  for (const Metric& m : s.metrics)
    for (const MetricPoint& p : m.points) {
      bool r = false, st = false;
      for (const auto& [k, v] : p.attributes) {
        r |= k == "http.route" && v == route;
        st |= k == "http.response.status_code" && v == status;
      }
      if (r && st) return &p;
    }
  return nullptr;
}

TEST(http_metrics, durations_land_in_their_advised_bucket) {
  HttpMetrics m;
  m.add(served("GET", "/a", 200, 4'000'000));       // 4 ms: (0, 5 ms]
  m.add(served("GET", "/a", 200, 5'000'000));       // 5 ms: a bound belongs to its bucket
  m.add(served("GET", "/a", 200, 5'000'001));       // just above: (5, 10 ms]
  m.add(served("GET", "/a", 200, 20'000'000'000));  // 20 s: above every bound
  m.add(served("GET", "/a", 503, 1'000'000));
  MetricsSnapshot s;
  m.snapshot(s, {{"service.name", "api"}});
  ASSERT_EQ(s.metrics.size(), 1u);
  EXPECT_EQ(s.metrics[0].name, "http.server.request.duration");
  const MetricPoint* ok = find(s, "/a", "200");
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->counts[0], 2u);
  EXPECT_EQ(ok->counts[1], 1u);
  EXPECT_EQ(ok->counts.back(), 1u);
  EXPECT_EQ(ok->count(), 4u);
  EXPECT_DOUBLE_EQ(ok->sum, 0.004 + 0.005 + 0.005000001 + 20);
  EXPECT_EQ(ok->attributes.front(), (std::pair<std::string, std::string>{"service.name", "api"}));
  const MetricPoint* err = find(s, "/a", "503");
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(err->count(), 1u);
  EXPECT_EQ(err->attributes.back(), (std::pair<std::string, std::string>{"error.type", "503"}));
}

// Rows the kernel counted (HttpJob's aggregated mode) join the series their exchanges would have:
// the kernel's bounds are the histogram's, so its buckets add one to one.
TEST(http_metrics, kernel_tallies_count_as_their_exchanges_would) {
  const std::vector<int64_t> ns = HttpMetrics::bounds_ns();
  ASSERT_EQ(ns.size(), advised_duration_bounds().size());
  EXPECT_EQ(ns.front(), 5'000'000);  // 5 ms
  EXPECT_EQ(ns.back(), 10'000'000'000);
  HttpMetrics one_by_one, tallied;
  for (uint64_t d : {4'000'000ull, 5'000'001ull, 20'000'000'000ull})
    one_by_one.add(served("GET", "/items/1", 200, d));
  HttpTally t;
  t.count = 3;
  t.sum_ns = 4'000'000 + 5'000'001 + 20'000'000'000;
  t.buckets.assign(ns.size() + 1, 0);
  t.buckets[0] = t.buckets[1] = t.buckets[ns.size()] = 1;
  tallied.add(served("GET", "/items/1", 200, 0), t);
  MetricsSnapshot a, b;
  one_by_one.snapshot(a, {});
  tallied.snapshot(b, {});
  const MetricPoint* pa = find(a, "/items/1", "200");
  const MetricPoint* pb = find(b, "/items/1", "200");
  ASSERT_NE(pa, nullptr);
  ASSERT_NE(pb, nullptr);
  EXPECT_EQ(pb->counts, pa->counts);
  EXPECT_DOUBLE_EQ(pb->sum, pa->sum);
  EXPECT_EQ(tallied.exchanges(), 3u);
  HttpTally none;  // a row read with nothing in it adds no series
  tallied.add(served("GET", "/other", 200, 0), none);
  EXPECT_EQ(tallied.series(), 1u);
}

TEST(http_metrics, ids_in_paths_become_one_route) {
  HttpMetrics m;
  for (int i = 0; i < 25; ++i) m.add(served("GET", "/items/" + std::to_string(i), 200, 1000));
  MetricsSnapshot s;
  m.snapshot(s, {});
  const MetricPoint* items = find(s, "/items/*", "200");
  ASSERT_NE(items, nullptr);
  EXPECT_EQ(items->count(), 25u);  // the 20 counted before the route widened joined it
  EXPECT_EQ(m.series(), 1u);
}

TEST(http_metrics, past_the_cap_exchanges_go_to_other_routes) {
  HttpMetrics m(3);
  for (const char* path : {"/a", "/b", "/c", "/d", "/e"}) m.add(served("GET", path, 200, 1000));
  m.add(served("GET", "/a", 200, 1000));  // a series it has: counted there
  EXPECT_EQ(m.series(), 4u);              // the cap, and "(other routes)"
  EXPECT_EQ(m.overflowed(), 2u);
  MetricsSnapshot s;
  m.snapshot(s, {});
  EXPECT_EQ(find(s, "(other routes)", "200")->count(), 2u);
  EXPECT_EQ(find(s, "/a", "200")->count(), 2u);
  EXPECT_EQ(find(s, "/d", "200"), nullptr);
  EXPECT_EQ(m.exchanges(), 6u);
}

// Exchanges that repeat one already counted take its series without templating it again: the
// counts must be those of templating each.
TEST(http_metrics, repeated_exchanges_count_where_the_first_did) {
  HttpMetrics m;
  for (int round = 0; round < 3; ++round)
    for (int i = 0; i < 25; ++i) {
      m.add(served("GET", "/items/" + std::to_string(i) + "?page=" + std::to_string(round), 200,
                   1000));
      m.add(served("GET", "/items/" + std::to_string(i), 404, 1000));
    }
  MetricsSnapshot s;
  m.snapshot(s, {});
  EXPECT_EQ(find(s, "/items/*", "200")->count(), 75u);
  EXPECT_EQ(find(s, "/items/*", "404")->count(), 75u);
  EXPECT_EQ(m.series(), 2u);
  EXPECT_EQ(m.exchanges(), 150u);

  HttpMetrics capped(1);
  capped.add(served("GET", "/a", 200, 1000));
  for (int i = 0; i < 4; ++i) capped.add(served("PUT", "/x", 200, 1000));  // past the cap
  MetricsSnapshot c;
  capped.snapshot(c, {});
  EXPECT_EQ(find(c, "(other routes)", "200")->count(), 4u);
  EXPECT_EQ(capped.overflowed(), 4u);
}

TEST(http_metrics, a_scrape_reads_prometheus_names) {
  HttpMetrics m;
  m.add(served("POST", "/api/v1/write", 204, 30'000'000));
  HttpExchange c;
  c.side = HttpSide::Client;
  c.method = "GET";
  c.url = "http://127.0.0.1:9090/api/v1/query?q=up";
  c.path = "/api/v1/query";
  c.status = 0;
  c.failed = true;
  c.duration_ns = 2'000'000;
  m.add(c);
  MetricsSnapshot s;
  m.snapshot(s, {{"service.name", "api"}});
  const std::string text = prometheus_text(s);
  EXPECT_NE(text.find("http_server_request_duration_seconds_bucket{service_name=\"api\","
                      "http_request_method=\"POST\",http_response_status_code=\"204\","
                      "http_route=\"/api/v1/write\",le=\"0.05\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("http_client_request_duration_seconds_count{service_name=\"api\","
                      "http_request_method=\"GET\",server_address=\"127.0.0.1:9090\","
                      "url_template=\"/api/v1/query\",error_type=\"request failed\"} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("q=up"), std::string::npos);  // never the query
}

}  // namespace
}  // namespace uscope
