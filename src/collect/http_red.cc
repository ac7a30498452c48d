#include "collect/http_red.h"

#include <algorithm>

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
    auto status = static_cast<int64_t>(field(ev, f::kServerStatus)->number);
    // A handler that wrote nothing has not set the status: net/http answers 200 after it returns.
    // -1: the ResponseWriter was not net/http's HTTP/1 *response (http_probe).
    x.status = status == 0 ? 200 : status < 0 ? kHttpStatusUnknown : static_cast<int>(status);
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

std::string http_route(std::string_view path) {
  path = path.substr(0, path.find_first_of("?#"));
  std::string out;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view seg = path.substr(pos, slash - pos);
    bool id = seg.size() > 40 ||
              std::any_of(seg.begin(), seg.end(), [](char c) { return c >= '0' && c <= '9'; });
    out += id ? std::string_view("*") : seg;
    if (slash < path.size()) out += '/';
    pos = slash + 1;
  }
  return out.empty() ? "/" : out;
}

void HttpRed::add(const HttpExchange& x) {
  ++exchanges_;
  HttpRouteKey key{x.side, x.method, http_route(x.path)};
  if (x.side == HttpSide::Client) {
    auto scheme_end = x.url.find("://");
    auto host_end =
        scheme_end == std::string::npos ? std::string::npos : x.url.find('/', scheme_end + 3);
    key.route = x.url.substr(0, host_end) + (x.path.empty() ? "" : key.route);
  }
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
