#pragma once
// HTTP RED as OpenTelemetry's semantic conventions name it, for the agent's /metrics and OTLP:
// http.server.request.duration and http.client.request.duration, histograms over the advised
// bounds (seconds), one series per method, status and route (server) or server address and
// route (client). Each exchange's duration is exact, so each lands in its true bucket. Routes
// are templated as `uscope http` templates them (HttpRouteTemplates): never a query string, an
// id or other request data in a label. Series are capped: past the cap, exchanges are counted
// under the route "(other routes)" of their method and status, and overflowed() says how many.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "model/http_red.h"
#include "model/metrics.h"

namespace uscope {

class HttpMetrics {
 public:
  explicit HttpMetrics(size_t max_series = 2000) : max_series_(max_series) {}
  void add(const HttpExchange& x);
  // Adds this process's series to `out`, each with `resource` (service.name, process.pid, ...)
  // in front of its own attributes.
  void snapshot(MetricsSnapshot& out, const MetricAttributes& resource) const;
  uint64_t exchanges() const { return exchanges_; }
  // Exchanges counted under "(other routes)" because a new series would pass the cap.
  uint64_t overflowed() const { return overflowed_; }
  size_t series() const { return series_.size(); }

 private:
  struct Key {
    HttpSide side;
    std::string method;
    int status;          // 0: no response (a client call that failed)
    std::string prefix;  // client: scheme://host
    std::string route;
    auto operator<=>(const Key&) const = default;
  };
  Key key_of(const HttpExchange& x, bool* widened);
  void rekey();
  size_t max_series_;
  HttpRouteTemplates templates_;
  std::map<Key, MetricPoint> series_;
  uint64_t exchanges_ = 0, overflowed_ = 0;
};

}  // namespace uscope
