#include "collect/http_red.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace uscope {

namespace {

// Exact values below 2^kSubBits, then 2^kSubBits buckets per power of two.
constexpr uint32_t kSubBits = 6;
constexpr uint64_t kSub = uint64_t{1} << kSubBits;

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

uint32_t DurationHistogram::bucket_of(uint64_t ns) {
  if (ns < kSub) return static_cast<uint32_t>(ns);
  uint32_t e = 63 - static_cast<uint32_t>(std::countl_zero(ns));  // ns in [2^e, 2^(e+1))
  uint64_t sub = (ns >> (e - kSubBits)) & (kSub - 1);
  return static_cast<uint32_t>(kSub + (e - kSubBits) * kSub + sub);
}

uint64_t DurationHistogram::bucket_low(uint32_t b) {
  if (b < kSub) return b;
  uint32_t e = (b - kSub) / kSub + kSubBits;
  uint64_t sub = (b - kSub) % kSub;
  return (uint64_t{1} << e) + (sub << (e - kSubBits));
}

uint64_t DurationHistogram::bucket_high(uint32_t b) {
  if (b < kSub) return b;
  uint32_t e = (b - kSub) / kSub + kSubBits;
  return bucket_low(b) + (uint64_t{1} << (e - kSubBits)) - 1;
}

void DurationHistogram::add(uint64_t ns) {
  ++buckets_[bucket_of(ns)];
  min_ = count_ ? std::min(min_, ns) : ns;
  max_ = std::max(max_, ns);
  sum_ += ns;
  ++count_;
}

uint64_t DurationHistogram::quantile(double q) const {
  if (!count_) return 0;
  auto rank = static_cast<uint64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * double(count_)));
  rank = std::max<uint64_t>(rank, 1);
  uint64_t seen = 0;
  for (auto [b, n] : buckets_) {
    seen += n;
    if (seen < rank) continue;
    uint64_t low = bucket_low(b), high = bucket_high(b);
    return std::clamp(low + (high - low) / 2, min(), max_);
  }
  return max_;
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
