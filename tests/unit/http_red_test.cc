#include "model/http_red.h"

#include <gtest/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <random>

namespace uscope {
namespace {

std::string learn_all(HttpRouteTemplates& t, const std::vector<std::string>& paths) {
  std::string last;
  for (const auto& p : paths) last = t.learn("", p);
  return last;
}

TEST(http_route_templates, keeps_a_fixed_vocabulary_with_digits) {
  HttpRouteTemplates t;
  for (int i = 0; i < 100; ++i)
    for (const char* p : {"/api/v1/query?query=up", "/api/v1/query_range", "/api/v1/series",
                          "/api/v2/query", "/graph", "/graph/", "/"})
      t.learn("", p);
  EXPECT_EQ(t.route("", "/api/v1/query?query=up"), "/api/v1/query");
  EXPECT_EQ(t.route("", "/api/v2/query"), "/api/v2/query");
  EXPECT_EQ(t.route("", "/graph"), "/graph");
  EXPECT_EQ(t.route("", "/graph/"), "/graph/");
  EXPECT_EQ(t.route("", "/"), "/");
  EXPECT_EQ(t.route("", "/search#frag"), "/search");
}

TEST(http_route_templates, a_position_becomes_a_wildcard_past_max_values) {
  HttpRouteTemplates t(3);
  EXPECT_EQ(learn_all(t, {"/items/1", "/items/2", "/items/3"}), "/items/3");
  EXPECT_EQ(t.route("", "/items/1"), "/items/1");
  bool widened = false;
  EXPECT_EQ(t.learn("", "/items/4", &widened), "/items/*");
  EXPECT_TRUE(widened);
  EXPECT_EQ(t.route("", "/items/1"), "/items/*");
  EXPECT_EQ(t.route("", "/items/apple"), "/items/*");
  // Other lengths and other prefixes are other positions.
  EXPECT_EQ(t.route("", "/items/1/notes"), "/items/1/notes");
  EXPECT_EQ(t.route("", "/users/1"), "/users/1");
  EXPECT_EQ(t.route("http://h", "/items/1"), "/items/1");
}

TEST(http_route_templates, wildcards_in_two_positions) {
  HttpRouteTemplates t(2);
  std::string last;
  for (int u = 0; u < 5; ++u)
    for (int o = 0; o < 5; ++o)
      last = t.learn("", fmt::format("/users/{}/orders/{}", u, o * 7 + u));
  EXPECT_EQ(last, "/users/*/orders/*");
  EXPECT_EQ(t.route("", "/users/0/orders/0"), "/users/*/orders/*");
  EXPECT_EQ(t.route("", "/users/0/profile/x"), "/users/*/profile/x");
}

TEST(http_route_templates, memory_is_bounded) {
  HttpRouteTemplates t(1'000'000);
  for (size_t i = 0; i < HttpRouteTemplates::kMaxNodes + 10; ++i)
    t.learn("", fmt::format("/a{}/b", i));
  // Past kMaxNodes positions nothing new is learnt; paths are still routed.
  EXPECT_EQ(t.route("", "/a5/b"), "/a5/b");
  EXPECT_EQ(t.learn("", "/zz/yy"), "/zz/yy");
}

TEST(duration_histogram, buckets_cover_values_without_gaps) {
  for (uint64_t v : {0ull, 1ull, 63ull, 64ull, 65ull, 127ull, 128ull, 1000ull, 123456789ull,
                     ~0ull >> 1, ~0ull}) {
    uint32_t b = DurationHistogram::bucket_of(v);
    EXPECT_LE(DurationHistogram::bucket_low(b), v) << v;
    EXPECT_GE(DurationHistogram::bucket_high(b), v) << v;
  }
  for (uint32_t b = 0; b < 3000; ++b)
    EXPECT_EQ(DurationHistogram::bucket_high(b) + 1, DurationHistogram::bucket_low(b + 1)) << b;
}

TEST(duration_histogram, quantiles_within_one_part_in_64) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(12.0, 1.5);  // ~160 us median, long tail
  std::vector<uint64_t> exact;
  DurationHistogram h;
  for (int i = 0; i < 100000; ++i) {
    auto v = static_cast<uint64_t>(dist(rng));
    exact.push_back(v);
    h.add(v);
  }
  std::sort(exact.begin(), exact.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    auto rank = static_cast<size_t>(std::ceil(q * double(exact.size())));
    double truth = double(exact[rank - 1]);
    EXPECT_NEAR(double(h.quantile(q)), truth, truth / 64) << q;
  }
  EXPECT_EQ(h.min(), exact.front());
  EXPECT_EQ(h.max(), exact.back());
  EXPECT_EQ(h.count(), exact.size());
}

TEST(duration_histogram, small_counts_are_exact_below_64ns_and_clamped) {
  DurationHistogram h;
  EXPECT_EQ(h.quantile(0.5), 0u);
  h.add(10);
  h.add(20);
  h.add(30);
  EXPECT_EQ(h.quantile(0.5), 20u);
  EXPECT_EQ(h.quantile(1.0), 30u);
  DurationHistogram one;
  one.add(1'000'001);
  EXPECT_EQ(one.quantile(0.5), 1'000'001u);  // the midpoint clamped to [min, max]
  EXPECT_EQ(one.quantile(0.99), 1'000'001u);
}

HttpExchange server(std::string path, int status, uint64_t ns) {
  HttpExchange x;
  x.method = "GET";
  x.path = path;
  x.url = path;
  x.status = status;
  x.duration_ns = ns;
  return x;
}

TEST(http_red, counts_routes_and_5xx_errors) {
  HttpRed red;
  for (int i = 0; i < 20; ++i) {
    red.add(server("/hello", 200, 1000));
    EXPECT_EQ(red.add(server("/items/" + std::to_string(i), i % 2 ? 200 : 404, 2000)),
              "/items/" + std::to_string(i));
    red.add(server("/fail", 500, 3000));
  }
  EXPECT_EQ(red.routes().size(), 22u);  // 20 values of /items/ seen: each its own route
  // The 21st value makes the position a wildcard, and the 20 routes before are merged into it.
  EXPECT_EQ(red.add(server("/items/apple", 200, 4000)), "/items/*");
  EXPECT_EQ(red.add(server("/items/3", 200, 4000)), "/items/*");
  auto routes = red.routes();
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0]->key.route, "/fail");
  EXPECT_EQ(routes[0]->count, 20u);
  EXPECT_EQ(routes[0]->errors, 20u);
  EXPECT_EQ(routes[1]->key.route, "/hello");
  EXPECT_EQ(routes[1]->errors, 0u);
  EXPECT_EQ(routes[2]->key.route, "/items/*");
  EXPECT_EQ(routes[2]->count, 22u);
  EXPECT_EQ(routes[2]->errors, 0u);  // 404 is the client's error, not the server's
  EXPECT_EQ(routes[2]->statuses.at(404), 10u);
  EXPECT_EQ(routes[2]->statuses.at(200), 12u);
  EXPECT_EQ(routes[2]->durations.count(), 22u);
  EXPECT_EQ(routes[2]->durations.min(), 2000u);
  EXPECT_EQ(routes[2]->durations.max(), 4000u);
  EXPECT_EQ(routes[2]->durations.sum(), 20u * 2000 + 2 * 4000);
  EXPECT_EQ(red.exchanges(), 62u);
}

TEST(http_red, client_errors_are_failed_calls_and_5xx) {
  HttpRed red;
  HttpExchange x;
  x.side = HttpSide::Client;
  x.method = "GET";
  x.path = "/hello";
  x.url = "http://127.0.0.1:8080/hello";
  x.status = 200;
  red.add(x);
  x.status = 503;
  red.add(x);
  x.status = 0;
  x.failed = true;
  x.url = "http://127.0.0.1:1/hello";
  red.add(x);
  auto routes = red.routes();
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0]->key.route, "http://127.0.0.1:1/hello");
  EXPECT_EQ(routes[0]->errors, 1u);
  EXPECT_EQ(routes[1]->key.route, "http://127.0.0.1:8080/hello");
  EXPECT_EQ(routes[1]->count, 2u);
  EXPECT_EQ(routes[1]->errors, 1u);
}

TEST(http_red, client_routes_widen_per_host) {
  HttpRed red(HttpRed::kDefaultMaxRoutes, 2);
  HttpExchange x;
  x.side = HttpSide::Client;
  x.method = "GET";
  x.status = 200;
  for (const char* host : {"http://a:1", "http://b:2"})
    for (int i = 0; i < 3; ++i) {
      x.path = "/users/" + std::to_string(i) + "?full=1";
      x.url = host + x.path;
      red.add(x);
    }
  x.path = "/users/0";
  x.url = "http://c:3/users/0";
  EXPECT_EQ(red.add(x), "http://c:3/users/0");  // one value seen at c:3
  auto routes = red.routes();
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0]->key.route, "http://a:1/users/*");
  EXPECT_EQ(routes[0]->count, 3u);
  EXPECT_EQ(routes[1]->key.route, "http://b:2/users/*");
  EXPECT_EQ(routes[1]->count, 3u);
  EXPECT_EQ(routes[2]->key.route, "http://c:3/users/0");
}

TEST(http_red, routes_past_the_limit_are_counted_as_other) {
  HttpRed red(2);
  red.add(server("/a", 200, 1));
  red.add(server("/b", 200, 1));
  red.add(server("/c", 200, 1));
  red.add(server("/d", 200, 1));
  red.add(server("/a", 200, 1));
  EXPECT_EQ(red.overflowed(), 2u);
  auto routes = red.routes();
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0]->key.route, HttpRed::kOtherRoutes);
  EXPECT_EQ(routes[0]->count, 2u);
  EXPECT_EQ(routes[1]->count, 2u);  // /a
}

DecodedValue str(std::string s) {
  DecodedValue v;
  v.is_string = true;
  v.text = std::move(s);
  return v;
}

DecodedValue num(uint64_t n) {
  DecodedValue v;
  v.number = n;
  return v;
}

TEST(http_exchange, server_event_fields) {
  DecodedEvent ev;
  ev.header.duration_ns = 1234;
  ev.header.tgid = 9;
  const uint64_t none = static_cast<uint64_t>(-1);
  ev.values = {str("POST"), str("/items/apple"), num(0), num(none), num(11)};
  ev.n_values = 5;
  auto x = http_exchange(HttpSide::Server, ev);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->method, "POST");
  EXPECT_EQ(x->url, "/items/apple");
  EXPECT_EQ(x->status, 200);  // nothing written yet: net/http answers 200
  EXPECT_EQ(x->duration_ns, 1234u);
  EXPECT_EQ(x->protocol, 11);
  EXPECT_EQ(http_protocol_name(x->protocol), "HTTP/1.1");
  ev.values[2] = num(404);
  EXPECT_EQ(http_exchange(HttpSide::Server, ev)->status, 404);
  ev.values[2] = num(none);  // HTTP/2's writer ended it
  ev.values[3] = num(503);
  ev.values[4] = num(20);
  EXPECT_EQ(http_exchange(HttpSide::Server, ev)->status, 503);
  EXPECT_EQ(http_protocol_name(http_exchange(HttpSide::Server, ev)->protocol), "HTTP/2.0");
  ev.values[3] = num(none);  // neither writer
  EXPECT_EQ(http_exchange(HttpSide::Server, ev)->status, kHttpStatusUnknown);
  EXPECT_FALSE(http_exchange(HttpSide::Server, ev)->error());
  ev.n_values = 4;
  EXPECT_FALSE(http_exchange(HttpSide::Server, ev));
}

TEST(http_exchange, client_event_fields) {
  DecodedEvent ev;
  ev.values = {str(""),  str("http"), str("127.0.0.1:80"), str("/x"), num(0xc000123000),
               num(201), num(0)};
  ev.n_values = 7;
  auto x = http_exchange(HttpSide::Client, ev);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->method, "GET");
  EXPECT_EQ(x->url, "http://127.0.0.1:80/x");
  EXPECT_EQ(x->status, 201);
  EXPECT_FALSE(x->error());
  ev.values[4] = num(0);  // no response: the status word is not one
  ev.values[6] = num(0x7a0000);
  x = http_exchange(HttpSide::Client, ev);
  EXPECT_EQ(x->status, 0);
  EXPECT_TRUE(x->failed);
  EXPECT_TRUE(x->error());
}

}  // namespace
}  // namespace uscope
