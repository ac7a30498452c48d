#include "collect/http_red.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace uscope {
namespace {

TEST(http_route, keeps_words_and_collapses_ids) {
  EXPECT_EQ(http_route("/hello"), "/hello");
  EXPECT_EQ(http_route("/items/apple"), "/items/apple");
  EXPECT_EQ(http_route("/items/42"), "/items/*");
  EXPECT_EQ(http_route("/users/7/orders/a1b2"), "/users/*/orders/*");
  EXPECT_EQ(http_route("/v2/x"), "/*/x");
  EXPECT_EQ(http_route("/search?q=1"), "/search");
  EXPECT_EQ(http_route(""), "/");
  EXPECT_EQ(http_route("/"), "/");
  EXPECT_EQ(http_route("/a/"), "/a/");
  EXPECT_EQ(http_route("/" + std::string(41, 'x')), "/*");
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
    red.add(server("/items/" + std::to_string(i), i % 2 ? 200 : 404, 2000));
    red.add(server("/fail", 500, 3000));
  }
  auto routes = red.routes();
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0]->key.route, "/fail");
  EXPECT_EQ(routes[0]->count, 20u);
  EXPECT_EQ(routes[0]->errors, 20u);
  EXPECT_EQ(routes[1]->key.route, "/hello");
  EXPECT_EQ(routes[1]->errors, 0u);
  EXPECT_EQ(routes[2]->key.route, "/items/*");
  EXPECT_EQ(routes[2]->count, 20u);
  EXPECT_EQ(routes[2]->errors, 0u);  // 404 is the client's error, not the server's
  EXPECT_EQ(routes[2]->statuses.at(404), 10u);
  EXPECT_EQ(red.exchanges(), 60u);
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
  ev.values = {str("POST"), str("/items/apple"), num(0)};
  ev.n_values = 3;
  auto x = http_exchange(HttpSide::Server, ev);
  ASSERT_TRUE(x);
  EXPECT_EQ(x->method, "POST");
  EXPECT_EQ(x->url, "/items/apple");
  EXPECT_EQ(x->status, 200);  // nothing written yet: net/http answers 200
  EXPECT_EQ(x->duration_ns, 1234u);
  ev.values[2] = num(404);
  EXPECT_EQ(http_exchange(HttpSide::Server, ev)->status, 404);
  ev.values[2] = num(static_cast<uint64_t>(-1));  // not an HTTP/1 *response
  EXPECT_EQ(http_exchange(HttpSide::Server, ev)->status, kHttpStatusUnknown);
  EXPECT_FALSE(http_exchange(HttpSide::Server, ev)->error());
  ev.n_values = 2;
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
