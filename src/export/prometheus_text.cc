#include "export/prometheus_text.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <cctype>
#include <limits>

namespace uscope {
namespace {

std::string sanitized(const std::string& s) {
  // A name must not start with a digit.
  std::string out = !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])) ? "_" : "";
  for (char c : s) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
    if (!ok && !out.empty() && out.back() == '_') continue;  // one _ for a run of bad characters
    out += ok ? c : '_';
  }
  return out;
}

// UCUM units to the words Prometheus names end with; annotations ({request}) say nothing there.
std::string unit_word(const std::string& unit, MetricKind kind) {
  if (unit.empty() || unit.front() == '{') return "";
  if (unit == "s") return "seconds";
  if (unit == "ms") return "milliseconds";
  if (unit == "By") return "bytes";
  if (unit == "1") return kind == MetricKind::Gauge ? "ratio" : "";
  return sanitized(unit);
}

bool ends_with_word(const std::string& name, const std::string& word) {
  return name.size() > word.size() && name.ends_with(word) &&
         name[name.size() - word.size() - 1] == '_';
}

prometheus::ClientMetric client(const MetricPoint& p) {
  prometheus::ClientMetric c;
  for (const auto& [k, v] : p.attributes) c.label.push_back({prometheus_label(k), v});
  return c;
}

}  // namespace

std::string prometheus_label(const std::string& attribute) {
  return sanitized(attribute);
}

std::string prometheus_name(const Metric& m) {
  std::string name = sanitized(m.name);
  if (const std::string w = unit_word(m.unit, m.kind); !w.empty() && !ends_with_word(name, w))
    name += "_" + w;
  if (m.kind == MetricKind::Counter && !ends_with_word(name, "total")) name += "_total";
  return name;
}

std::string prometheus_text(const MetricsSnapshot& snapshot) {
  std::vector<prometheus::MetricFamily> families;
  for (const Metric& m : snapshot.metrics) {
    prometheus::MetricFamily f;
    f.name = prometheus_name(m);
    f.help = m.description;
    f.type = m.kind == MetricKind::Counter     ? prometheus::MetricType::Counter
             : m.kind == MetricKind::Histogram ? prometheus::MetricType::Histogram
                                               : prometheus::MetricType::Gauge;
    for (const MetricPoint& p : m.points) {
      prometheus::ClientMetric c = client(p);
      switch (m.kind) {
        case MetricKind::Counter:
          c.counter.value = p.value;
          break;
        case MetricKind::Gauge:
          c.gauge.value = p.value;
          break;
        case MetricKind::Histogram: {
          uint64_t cumulative = 0;
          for (size_t i = 0; i < p.counts.size(); ++i) {
            cumulative += p.counts[i];
            const double le =
                i < p.bounds.size() ? p.bounds[i] : std::numeric_limits<double>::infinity();
            c.histogram.bucket.push_back({cumulative, le});
          }
          c.histogram.sample_count = cumulative;
          c.histogram.sample_sum = p.sum;
          break;
        }
      }
      f.metric.push_back(std::move(c));
    }
    families.push_back(std::move(f));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace uscope
