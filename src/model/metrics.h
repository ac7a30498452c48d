#pragma once
// The metrics model every metrics sink renders (the agent's /metrics, OTLP, and later the CLI's
// table and JSON Lines): OpenTelemetry's data model, named as OpenTelemetry's semantic conventions
// name things (`http.server.request.duration`, unit "s", attribute `http.request.method`). The
// Prometheus renderer derives the exposition names from these (`..._seconds`, `_total`,
// `http_request_method`), as OpenTelemetry's Prometheus compatibility rules say.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace uscope {

enum class MetricKind {
  Counter,    // monotonic sum since start_unix_ns (OTLP Sum, cumulative)
  Gauge,      // a value now
  Histogram,  // explicit-bucket histogram since start_unix_ns (cumulative)
};

using MetricAttributes = std::vector<std::pair<std::string, std::string>>;

struct MetricPoint {
  MetricAttributes attributes;  // in the order they should be shown
  double value = 0;             // Counter, Gauge
  // Histogram: counts[i] is the number of values in (bounds[i-1], bounds[i]], the last one
  // (counts.size() == bounds.size() + 1) those above every bound. Not cumulative.
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  double sum = 0;
  uint64_t count() const;
};

struct Metric {
  std::string name;         // OpenTelemetry name: lower case, dots between words
  std::string unit;         // UCUM: "s", "By", "1", "{request}"
  std::string description;  // one line
  MetricKind kind = MetricKind::Gauge;
  std::vector<MetricPoint> points;
};

// What one collection produces: every metric with its points, and the time they cover.
struct MetricsSnapshot {
  uint64_t start_unix_ns = 0;  // when counting began (counters and histograms)
  uint64_t time_unix_ns = 0;   // when this was read
  std::vector<Metric> metrics;

  // The metric of this name, added (empty) if it is not there yet.
  Metric& metric(const std::string& name, MetricKind kind, const std::string& unit,
                 const std::string& description);
  // A counter's or gauge's point: `value` under `attributes`, in the metric of this name.
  void add_value(const std::string& name, MetricKind kind, const std::string& unit,
                 const std::string& description, double value, MetricAttributes attributes = {});
};

// OpenTelemetry's advised bucket bounds for durations in seconds (http.server.request.duration).
const std::vector<double>& advised_duration_bounds();

}  // namespace uscope
