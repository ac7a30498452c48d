#pragma once
// `uscope http`'s model: one HTTP exchange per event of the server or client probe
// (plan/http_plan.h), and RED per route (rate: count, errors, duration percentiles). Pure: no
// BPF, no target; the sink formats what this holds.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/decoded_event.h"
#include "model/duration_histogram.h"
#include "model/event_losses.h"
#include "plan/http_plan.h"

namespace uscope {

// The status of a request whose end was not net/http's HTTP/1 or HTTP/2 writer: not read.
inline constexpr int kHttpStatusUnknown = -1;

struct HttpExchange {
  HttpSide side = HttpSide::Server;
  uint64_t ts_ns = 0;  // bpf_ktime_get_ns() at the return
  uint32_t pid = 0, tid = 0;
  std::string method;  // "GET"
  std::string url;     // server: the path ("/items/apple"); client: scheme://host/path
  std::string path;    // the path alone (the route is made from it)
  std::string route;   // the route it was counted under when it came (HttpRed::add)
  int status = 0;      // 0: none (a client call that failed)
  int protocol = 0;  // server: ProtoMajor * 10 + ProtoMinor (11: HTTP/1.1, 20: HTTP/2); 0: unknown
  bool failed = false;  // client: the call returned an error
  bool cut = false;     // a string was longer than what was read (shown with "…")
  uint64_t duration_ns = 0;
  // An error: a server answered 5xx; a client call returned an error or a 5xx response.
  bool error() const { return failed || status >= 500; }
};

// Exchanges counted in the kernel as one row (HttpPlanOptions::aggregate_bounds_ns): how many,
// the sum of their durations, and how many fell in each bucket of the plan's bounds (one more
// bucket than bounds: the last holds those above them all).
struct HttpTally {
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  std::vector<uint64_t> buckets;
};

// The exchange an event of `side`'s probe holds; nullopt for an event without its fields
// (malformed: counted by the decoder).
std::optional<HttpExchange> http_exchange(HttpSide side, const DecodedEvent& ev);

// A client URL's "scheme://host", the part its route keeps as it is (the whole URL when it has
// no scheme).
std::string_view http_origin(std::string_view url);
// A request path without its query string and fragment: what a route is made of.
std::string_view http_path_only(std::string_view path);

// Routes made from the paths seen, since net/http of Go 1.19 keeps no mux pattern on the request:
// a segment position becomes "*" once the paths that share the segments before it (and their
// number of segments) have shown more than `max_values` distinct values there. Ids, hashes and
// dates vary and are collapsed ("/items/1".."/items/21" -> "/items/*"); a fixed vocabulary
// ("/api/v1/query", "/api/v1/query_range") never reaches the bound and stays as it is, digits
// or not. The query is never part of a route. Memory is bounded: past kMaxNodes positions,
// new ones are not learnt (their segments stay as they are).
class HttpRouteTemplates {
 public:
  static constexpr size_t kMaxValues = 20;
  static constexpr size_t kMaxNodes = 4096;
  explicit HttpRouteTemplates(size_t max_values = kMaxValues) : max_values_(max_values) {}
  // Learns from `path` (of the group `prefix`, e.g. a client's "scheme://host") and returns its
  // route; sets *widened when a position became "*" (routes made before may now be wider).
  std::string learn(std::string_view prefix, std::string_view path, bool* widened = nullptr);
  // The route of `path` from what is learnt so far.
  std::string route(std::string_view prefix, std::string_view path) const;

 private:
  struct Node {
    std::vector<std::string> values;  // distinct, at most max_values_
    bool wild = false;
  };
  using Nodes = std::map<std::string, Node, std::less<>>;
  // One walk for both: learns when `nodes` is not const.
  template <class NodeMap>
  static std::string walk(NodeMap& nodes, size_t max_values, std::string_view prefix,
                          std::string_view path, bool* widened);
  size_t max_values_;
  Nodes nodes_;
};

struct HttpRouteKey {
  HttpSide side = HttpSide::Server;
  std::string method;
  std::string route;  // server: the path's route; client: scheme://host + the path's route
  auto operator<=>(const HttpRouteKey&) const = default;
};

struct HttpRouteStats {
  HttpRouteKey key;
  uint64_t count = 0;
  uint64_t errors = 0;
  std::map<int, uint64_t> statuses;  // status -> count (0: no response)
  DurationHistogram durations;
};

// RED per route. Past `max_routes` distinct routes, new ones are counted under the route
// "(other routes)" of their side and method, and overflowed() says how many exchanges were.
class HttpRed {
 public:
  static constexpr size_t kDefaultMaxRoutes = 1000;
  static constexpr std::string_view kOtherRoutes = "(other routes)";
  explicit HttpRed(size_t max_routes = kDefaultMaxRoutes,
                   size_t max_values = HttpRouteTemplates::kMaxValues)
      : max_routes_(max_routes), templates_(max_values) {}
  // Counts `x`; returns the route it is counted under now. When a position of a route becomes
  // "*", the routes counted before are merged into it.
  std::string add(const HttpExchange& x);
  // Sorted by side (servers first), then route, then method.
  std::vector<const HttpRouteStats*> routes() const;
  uint64_t exchanges() const { return exchanges_; }
  uint64_t overflowed() const { return overflowed_; }

 private:
  void widen();
  size_t max_routes_;
  HttpRouteTemplates templates_;
  std::map<HttpRouteKey, HttpRouteStats> routes_;
  uint64_t exchanges_ = 0;
  uint64_t overflowed_ = 0;
};

// What the session lost, each cause on its own (the summary and the JSON say all of them).
struct HttpLosses : EventLosses {
  uint64_t status_unknown = 0;  // ended through a writer that is not net/http's: no status
  // Served requests that began and never ended while watched: the handler hijacked the
  // connection (a WebSocket upgrade) or panicked (net/http drops the connection or stream), the
  // request was still running at the stop, or its entry was dropped from the full entry map.
  // None of them is in the requests counted.
  uint64_t unfinished = 0;
};

// "HTTP/1.1", "HTTP/2.0" (Go's Request.Proto) for HttpExchange::protocol; "" when unknown.
std::string http_protocol_name(int protocol);

}  // namespace uscope
