#include "model/metrics.h"

#include <numeric>

namespace uscope {

uint64_t MetricPoint::count() const {
  return std::accumulate(counts.begin(), counts.end(), 0ull);
}

Metric& MetricsSnapshot::metric(const std::string& name, MetricKind kind, const std::string& unit,
                                const std::string& description) {
  for (Metric& m : metrics)
    if (m.name == name) return m;
  metrics.push_back({name, unit, description, kind, {}});
  return metrics.back();
}

void MetricsSnapshot::add_value(const std::string& name, MetricKind kind, const std::string& unit,
                                const std::string& description, double value,
                                MetricAttributes attributes) {
  MetricPoint p;
  p.attributes = std::move(attributes);
  p.value = value;
  metric(name, kind, unit, description).points.push_back(std::move(p));
}

const std::vector<double>& advised_duration_bounds() {
  // From the semantic conventions of http.server.request.duration.
  static const std::vector<double> b = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
                                        0.5,   0.75, 1,     2.5,  5,     7.5, 10};
  return b;
}

}  // namespace uscope
