#include "model/http_red.h"

#include <fmt/core.h>

#include <algorithm>
#include <type_traits>

namespace uscope {

namespace {

const DecodedValue* field(const DecodedEvent& ev, size_t i) {
  return i < ev.n_values ? &ev.values[i] : nullptr;
}

}  // namespace

std::optional<HttpExchange> http_exchange(HttpSide side, const DecodedEvent& ev) {
  namespace f = http_field;
  const size_t need = side == HttpSide::Server ? f::kServerFields : f::kClientFields;
  if (ev.n_values < need) return std::nullopt;
  HttpExchange x;
  x.side = side;
  x.ts_ns = ev.header.ts;
  x.pid = ev.header.tgid;
  x.tid = ev.header.tid;
  x.duration_ns = ev.header.duration_ns;
  x.cut = ev.truncated();
  if (side == HttpSide::Server) {
    x.method = field(ev, f::kServerMethod)->text;
    x.path = field(ev, f::kServerPath)->text;
    x.url = x.path;
    // Each writer's status is -1 unless that writer ended this request (http_probe).
    auto status = static_cast<int64_t>(field(ev, f::kServerStatus)->number);
    if (status < 0) status = static_cast<int64_t>(field(ev, f::kServerH2Status)->number);
    // A handler that wrote nothing has not set the status: net/http answers 200 after it returns.
    x.status = status == 0 ? 200 : status < 0 ? kHttpStatusUnknown : static_cast<int>(status);
    auto proto = static_cast<int64_t>(field(ev, f::kServerProto)->number);
    if (proto > 0 && proto < 100) x.protocol = static_cast<int>(proto);
    return x;
  }
  x.method = field(ev, f::kClientMethod)->text;
  // net/http sends a request without a method as GET.
  if (x.method.empty()) x.method = "GET";
  x.path = field(ev, f::kClientPath)->text;
  x.url = field(ev, f::kClientScheme)->text + "://" + field(ev, f::kClientHost)->text + x.path;
  x.failed = field(ev, f::kClientError)->number != 0;
  if (field(ev, f::kClientResponse)->number != 0)
    x.status = static_cast<int>(static_cast<int64_t>(field(ev, f::kClientStatus)->number));
  return x;
}

std::string HttpRouteTemplates::learn(std::string_view prefix, std::string_view path,
                                      bool* widened) {
  return walk(nodes_, max_values_, prefix, path, widened);
}

std::string HttpRouteTemplates::route(std::string_view prefix, std::string_view path) const {
  return walk(nodes_, max_values_, prefix, path, nullptr);
}

template <class NodeMap>
std::string HttpRouteTemplates::walk(NodeMap& nodes, size_t max_values, std::string_view prefix,
                                     std::string_view path, bool* widened) {
  constexpr bool learning = !std::is_const_v<NodeMap>;
  path = http_path_only(path);
  std::vector<std::string_view> segments;
  const bool rooted = !path.empty() && path.front() == '/';
  if (rooted) path.remove_prefix(1);
  for (size_t pos = 0; pos <= path.size();) {
    size_t slash = std::min(path.find('/', pos), path.size());
    segments.push_back(path.substr(pos, slash - pos));
    pos = slash + 1;
  }
  if (!rooted && segments.size() == 1 && segments[0].empty()) segments.clear();
  // A node is a position: the group, the number of segments and the route before it.
  std::string node_key = fmt::format("{}\n{}\n", prefix, segments.size());
  std::string out = rooted ? "/" : "";
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string_view seg = segments[i];
    auto it = nodes.find(node_key);
    bool wild = it != nodes.end() && it->second.wild;
    if constexpr (learning) {
      if (it == nodes.end() && nodes.size() < kMaxNodes) it = nodes.try_emplace(node_key).first;
      if (it != nodes.end() && !wild) {
        Node& n = it->second;
        const bool seen = std::find(n.values.begin(), n.values.end(), seg) != n.values.end();
        if (!seen && n.values.size() < max_values) {
          n.values.emplace_back(seg);
        } else if (!seen) {  // one value more than max_values: the position varies
          n.values.clear();
          n.wild = wild = true;
          if (widened) *widened = true;
        }
      }
    }
    const std::string_view shown = wild ? std::string_view("*") : seg;
    if (i) out += '/';
    out += shown;
    node_key += shown;
    node_key += '/';
  }
  return out;
}

std::string http_protocol_name(int protocol) {
  if (protocol <= 0) return "";
  return fmt::format("HTTP/{}.{}", protocol / 10, protocol % 10);
}

std::string_view http_path_only(std::string_view path) {
  return path.substr(0, path.find_first_of("?#"));
}

std::string_view http_origin(std::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return url;
  return url.substr(0, url.find('/', scheme_end + 3));
}

namespace {

// Where a route's path starts: after a client's scheme://host, 0 for a server's.
size_t path_start(const HttpRouteKey& k) {
  if (k.side == HttpSide::Server || k.route.find("://") == std::string::npos) return 0;
  return http_origin(k.route).size();
}

}  // namespace

std::string HttpRed::add(const HttpExchange& x) {
  ++exchanges_;
  bool widened = false;
  HttpRouteKey key{x.side, x.method, ""};
  if (x.side == HttpSide::Server) {
    key.route = templates_.learn("", x.path, &widened);
    if (key.route.empty()) key.route = "/";
  } else {
    const std::string prefix(http_origin(x.url));
    key.route = prefix + templates_.learn(prefix, x.path, &widened);
  }
  if (widened) widen();
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    if (routes_.size() >= max_routes_) {
      ++overflowed_;
      key.route = kOtherRoutes;
    }
    it = routes_.try_emplace(key).first;
    it->second.key = key;
  }
  HttpRouteStats& s = it->second;
  ++s.count;
  if (x.error()) ++s.errors;
  ++s.statuses[x.status];
  s.durations.add(x.duration_ns);
  return key.route;
}

void HttpRed::widen() {
  std::map<HttpRouteKey, HttpRouteStats> merged;
  for (auto& [k, s] : routes_) {
    HttpRouteKey key = k;
    if (key.route != kOtherRoutes) {
      const size_t start = path_start(k);
      const std::string_view route = k.route;
      key.route = std::string(route.substr(0, start)) +
                  templates_.route(route.substr(0, start), route.substr(start));
    }
    auto [it, fresh] = merged.try_emplace(key);
    HttpRouteStats& m = it->second;
    if (fresh) {
      m = std::move(s);
      m.key = key;
      continue;
    }
    m.count += s.count;
    m.errors += s.errors;
    for (auto [status, n] : s.statuses) m.statuses[status] += n;
    m.durations.merge(s.durations);
  }
  routes_ = std::move(merged);
}

std::vector<const HttpRouteStats*> HttpRed::routes() const {
  std::vector<const HttpRouteStats*> out;
  for (const auto& [k, s] : routes_) out.push_back(&s);
  std::stable_sort(out.begin(), out.end(), [](const HttpRouteStats* a, const HttpRouteStats* b) {
    return std::tie(a->key.side, a->key.route, a->key.method) <
           std::tie(b->key.side, b->key.route, b->key.method);
  });
  return out;
}

}  // namespace uscope
