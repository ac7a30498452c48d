#include "agent/http_metrics.h"

#include <algorithm>
#include <cmath>

namespace uscope {
namespace {

void start(MetricPoint& p) {
  if (p.counts.empty()) {
    p.bounds = advised_duration_bounds();
    p.counts.assign(p.bounds.size() + 1, 0);
  }
}

void count(MetricPoint& p, double seconds) {
  start(p);
  // Bucket i holds (bounds[i-1], bounds[i]]: the first bound not below the value.
  const size_t i = static_cast<size_t>(std::lower_bound(p.bounds.begin(), p.bounds.end(), seconds) -
                                       p.bounds.begin());
  ++p.counts[i];
  p.sum += seconds;
}

// The kernel bucketed over bounds_ns(), which are these bounds.
void count(MetricPoint& p, const HttpTally& t) {
  start(p);
  for (size_t i = 0; i < p.counts.size() && i < t.buckets.size(); ++i) p.counts[i] += t.buckets[i];
  p.sum += static_cast<double>(t.sum_ns) / 1e9;
}

void merge(MetricPoint& into, const MetricPoint& from) {
  if (into.counts.empty()) {
    into = from;
    return;
  }
  for (size_t i = 0; i < into.counts.size() && i < from.counts.size(); ++i)
    into.counts[i] += from.counts[i];
  into.sum += from.sum;
}

}  // namespace

HttpMetrics::Key HttpMetrics::key_of(const HttpExchange& x, bool* widened) {
  Key k{x.side, x.method, x.status, "", ""};
  if (x.side == HttpSide::Client) k.prefix = http_origin(x.url);
  k.route = templates_.learn(k.prefix, x.path, widened);
  if (k.route.empty()) k.route = "/";
  return k;
}

std::vector<int64_t> HttpMetrics::bounds_ns() {
  std::vector<int64_t> out;
  for (double b : advised_duration_bounds()) out.push_back(std::llround(b * 1e9));
  return out;
}

void HttpMetrics::add(const HttpExchange& x) {
  count(point_of(x, 1), static_cast<double>(x.duration_ns) / 1e9);
}

void HttpMetrics::add(const HttpExchange& x, const HttpTally& t) {
  if (t.count) count(point_of(x, t.count), t);
}

MetricPoint& HttpMetrics::point_of(const HttpExchange& x, uint64_t n) {
  exchanges_ += n;
  const std::string_view origin =
      x.side == HttpSide::Client ? http_origin(x.url) : std::string_view();
  const std::string_view path = http_path_only(x.path);
  seen_key_.clear();
  seen_key_ += x.side == HttpSide::Server ? 's' : 'c';
  seen_key_ += x.method;
  seen_key_ += '\n';
  seen_key_ += std::to_string(x.status);
  seen_key_ += '\n';
  seen_key_ += origin;
  seen_key_ += '\n';
  seen_key_ += path;
  if (auto hit = seen_.find(std::string_view(seen_key_)); hit != seen_.end()) {
    if (hit->second.overflowed) overflowed_ += n;
    return *hit->second.point;
  }
  bool widened = false;
  Key k = key_of(x, &widened);
  if (widened) rekey();
  bool overflowed = false;
  auto it = series_.find(k);
  if (it == series_.end()) {
    if (series_.size() >= max_series_) {  // counted, under its side and method's "other" route
      overflowed_ += n;
      overflowed = true;
      k.prefix.clear();
      k.route = HttpRed::kOtherRoutes;
    }
    it = series_.try_emplace(std::move(k)).first;
  }
  if (seen_.size() >= kMaxSeen) seen_.clear();
  seen_.emplace(seen_key_, Seen{&it->second, overflowed});
  return it->second;
}

// A route position became "*": series counted under the narrower routes join the wider one.
void HttpMetrics::rekey() {
  std::map<Key, MetricPoint> merged;
  for (auto& [k, p] : series_) {
    Key wider = k;
    if (k.route != HttpRed::kOtherRoutes) wider.route = templates_.route(k.prefix, k.route);
    merge(merged[wider], p);
  }
  series_ = std::move(merged);
  seen_.clear();  // its points were in the old map, and routes have widened
}

void HttpMetrics::snapshot(MetricsSnapshot& out, const MetricAttributes& resource) const {
  for (const auto& [k, p] : series_) {
    const bool server = k.side == HttpSide::Server;
    Metric& m = out.metric(
        server ? "http.server.request.duration" : "http.client.request.duration",
        MetricKind::Histogram, "s",
        server ? "Duration of HTTP server requests." : "Duration of HTTP client requests.");
    MetricPoint point = p;
    point.attributes = resource;
    point.attributes.emplace_back("http.request.method", k.method);
    if (k.status > 0)  // 0: no response; kHttpStatusUnknown: an HTTP/2 writer, not read
      point.attributes.emplace_back("http.response.status_code", std::to_string(k.status));
    if (server) {
      point.attributes.emplace_back("http.route", k.route);
    } else {
      const size_t host = k.prefix.find("://");
      point.attributes.emplace_back(
          "server.address", host == std::string::npos ? k.prefix : k.prefix.substr(host + 3));
      point.attributes.emplace_back("url.template", k.route);
      if (!k.status) point.attributes.emplace_back("error.type", "request failed");
    }
    if (k.status >= 500) point.attributes.emplace_back("error.type", std::to_string(k.status));
    m.points.push_back(std::move(point));
  }
}

}  // namespace uscope
