#pragma once
// HTTP RED as OpenTelemetry's semantic conventions name it, for the agent's /metrics and OTLP:
// http.server.request.duration and http.client.request.duration, histograms over the advised
// bounds (seconds), one series per method, status and route (server) or server address and
// route (client). Each exchange's duration is exact, so each lands in its true bucket. Routes
// are templated as `uscope http` templates them (HttpRouteTemplates): never a query string, an
// id or other request data in a label. Series are capped: past the cap, exchanges are counted
// under the route "(other routes)" of their method and status, and overflowed() says how many.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "model/http_red.h"
#include "model/metrics.h"

namespace uscope {

class HttpMetrics {
 public:
  explicit HttpMetrics(size_t max_series = 2000) : max_series_(max_series) {}
  void add(const HttpExchange& x);
  // `t.count` exchanges like `x` (its duration unused), counted in the kernel over bounds_ns().
  void add(const HttpExchange& x, const HttpTally& t);
  // The histograms' bounds in nanoseconds, for the kernel to bucket by (OpenTelemetry's advised
  // bounds of http.server.request.duration).
  static std::vector<int64_t> bounds_ns();
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
  // The series `n` exchanges like `x` count into (counted in exchanges() and overflowed()).
  MetricPoint& point_of(const HttpExchange& x, uint64_t n);
  void rekey();
  // The series an exchange went to, by what decides it (side, method, status, origin and path
  // without its query): a server's requests mostly repeat a few, and templating a path and
  // finding its series was most of what an exchange cost the agent. Learning a path seen before
  // changes nothing, so a hit skips both; a widened route or a rekey() empties it.
  struct Seen {
    MetricPoint* point;
    bool overflowed;  // counted under "(other routes)": each such exchange is counted as one
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr size_t kMaxSeen = 4096;
  size_t max_series_;
  HttpRouteTemplates templates_;
  std::map<Key, MetricPoint> series_;
  std::unordered_map<std::string, Seen, StringHash, std::equal_to<>> seen_;
  std::string seen_key_;  // reused: a hit allocates nothing
  uint64_t exchanges_ = 0, overflowed_ = 0;
};

}  // namespace uscope
