// The metrics model rendered for Prometheus (checked by Debian's promtool, the format's own
// linter) and for OTLP (decoded by protoc --decode_raw, which knows nothing of our .proto: the
// field numbers and values on the wire are what a collector reads).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "export/otlp_metrics.h"
#include "export/prometheus_text.h"

namespace uscope {
namespace {

MetricsSnapshot sample() {
  MetricsSnapshot s;
  s.start_unix_ns = 1'700'000'000'000'000'000;
  s.time_unix_ns = 1'700'000'010'000'000'000;
  Metric& d = s.metric("http.server.request.duration", MetricKind::Histogram, "s",
                       "Duration of HTTP server requests.");
  MetricPoint p;
  p.attributes = {{"http.request.method", "GET"},
                  {"http.response.status_code", "200"},
                  {"http.route", "/api/v1/query"}};
  p.bounds = {0.005, 0.01, 0.025};
  p.counts = {3, 1, 0, 2};  // 2 above 25 ms
  p.sum = 0.5;
  d.points.push_back(p);
  Metric& c =
      s.metric("uscope.events.lost", MetricKind::Counter, "{event}", "Events lost, by cause.");
  c.points.push_back({{{"cause", "ring buffer full"}}, 7, {}, {}, 0});
  c.points.push_back({{{"cause", "stack map full"}}, 0, {}, {}, 0});
  Metric& g = s.metric("uscope.probes.attached", MetricKind::Gauge, "{probe}", "Probes attached.");
  g.points.push_back({{}, 12, {}, {}, 0});
  return s;
}

std::string run(const std::string& command) {
  std::string out;
  FILE* f = popen(command.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(f), 0) << command << "\n" << out;
  return out;
}

TEST(metrics_export, prometheus_names_follow_the_otel_compatibility_rules) {
  EXPECT_EQ(prometheus_name({"http.server.request.duration", "s", "", MetricKind::Histogram, {}}),
            "http_server_request_duration_seconds");
  EXPECT_EQ(prometheus_name({"uscope.events.lost", "{event}", "", MetricKind::Counter, {}}),
            "uscope_events_lost_total");
  EXPECT_EQ(prometheus_name({"process.memory.usage", "By", "", MetricKind::Gauge, {}}),
            "process_memory_usage_bytes");
  EXPECT_EQ(prometheus_name({"cpu.utilization", "1", "", MetricKind::Gauge, {}}),
            "cpu_utilization_ratio");
  EXPECT_EQ(prometheus_name({"requests.total", "", "", MetricKind::Counter, {}}), "requests_total");
  EXPECT_EQ(prometheus_label("http.response.status_code"), "http_response_status_code");
  EXPECT_EQ(prometheus_label("1st label"), "_1st_label");
}

TEST(metrics_export, prometheus_text_is_what_promtool_accepts) {
  const std::string text = prometheus_text(sample());
  EXPECT_NE(text.find("# TYPE http_server_request_duration_seconds histogram"), std::string::npos)
      << text;
  EXPECT_NE(
      text.find("http_server_request_duration_seconds_bucket{http_request_method=\"GET\","
                "http_response_status_code=\"200\",http_route=\"/api/v1/query\",le=\"0.01\"} 4"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("le=\"+Inf\"} 6"), std::string::npos) << text;
  EXPECT_NE(text.find("http_server_request_duration_seconds_count{"), std::string::npos) << text;
  EXPECT_NE(text.find("uscope_events_lost_total{cause=\"ring buffer full\"} 7"), std::string::npos)
      << text;
  EXPECT_NE(text.find("uscope_probes_attached 12"), std::string::npos) << text;
  const std::string path = ::testing::TempDir() + "/metrics.txt";
  std::ofstream(path) << text;
  // promtool reads the exposition from stdin; it fails on a malformed line and prints lint
  // problems (names, help, units) otherwise: none expected.
  EXPECT_EQ(run("promtool check metrics < " + path + " 2>&1"), "");
}

TEST(metrics_export, otlp_request_carries_the_published_field_numbers) {
  const std::string bytes = otlp_metrics_request(sample(), {{"host.name", "node-1"}}, "0.1");
  const std::string path = ::testing::TempDir() + "/otlp.bin";
  std::ofstream(path, std::ios::binary) << bytes;
  const std::string raw = run("protoc --decode_raw < " + path);
  // ExportMetricsServiceRequest.resource_metrics(1).resource(1).attributes(1): host.name
  EXPECT_NE(
      raw.find("1 {\n  1 {\n    1 {\n      1: \"host.name\"\n      2 {\n        1: \"node-1\""),
      std::string::npos)
      << raw;
  // ScopeMetrics(2).metrics(2): name(1), description(2), unit(3), histogram(9) whose point has
  // count(4) 6, sum(5) 0.5, bucket_counts(6) and explicit_bounds(7).
  EXPECT_NE(raw.find("1: \"http.server.request.duration\""), std::string::npos) << raw;
  EXPECT_NE(raw.find("3: \"s\"\n      9 {"), std::string::npos) << raw;
  EXPECT_NE(raw.find("4: 0x0000000000000006"), std::string::npos) << raw;
  EXPECT_NE(raw.find("5: 0x3fe0000000000000"), std::string::npos) << raw;  // 0.5
  // A counter is a monotonic cumulative Sum(7): aggregation_temporality(2) 2, is_monotonic(3) 1.
  EXPECT_NE(raw.find("2: 2\n        3: 1"), std::string::npos) << raw;
  // Times: start(2) and time(3) as fixed64.
  EXPECT_NE(raw.find(fmt::format("2: 0x{:016x}", 1'700'000'000'000'000'000ull)), std::string::npos)
      << raw;
}

}  // namespace
}  // namespace uscope
