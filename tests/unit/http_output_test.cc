#include "sink/http_output.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace uscope {
namespace {

HttpExchange exchange(HttpSide side, std::string url, int status, bool failed, uint64_t ns) {
  HttpExchange x;
  x.side = side;
  x.method = "GET";
  x.url = url;
  x.path = side == HttpSide::Server ? url : "/hello";
  x.status = status;
  x.failed = failed;
  x.duration_ns = ns;
  return x;
}

TEST(http_output, text_lines) {
  EXPECT_EQ(http_text_line(exchange(HttpSide::Server, "/hello", 200, false, 84'000)),
            "server GET        200    0.084 ms  /hello\n");
  EXPECT_EQ(http_text_line(
                exchange(HttpSide::Client, "http://127.0.0.1:1/hello", 0, true, 1'500'000'000)),
            "client GET      error     1.500 s  http://127.0.0.1:1/hello\n");
  EXPECT_EQ(http_text_header(), "SIDE   METHOD  STATUS    DURATION  URL\n");
}

TEST(http_output, json_line_has_stable_fields) {
  auto x = exchange(HttpSide::Server, "/items/42", 404, false, 5000);
  x.route = "/items/*";  // what HttpRed::add said
  auto j = nlohmann::json::parse(http_json_line(x));
  EXPECT_EQ(j["kind"], "request");
  EXPECT_EQ(j["side"], "server");
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["path"], "/items/42");
  EXPECT_EQ(j["route"], "/items/*");
  EXPECT_EQ(j["status"], 404);
  EXPECT_EQ(j["error"], false);
  EXPECT_EQ(j["duration_ns"], 5000);
  EXPECT_FALSE(j.contains("failed"));
  auto c = nlohmann::json::parse(
      http_json_line(exchange(HttpSide::Client, "http://h/hello", 0, true, 1)));
  EXPECT_EQ(c["failed"], true);
  EXPECT_EQ(c["error"], true);
}

TEST(http_output, the_sink_renders_every_line_in_the_format_chosen_once) {
  auto x = exchange(HttpSide::Server, "/hello", 200, false, 84'000);
  const HttpSink text = http_sink(OutputFormat::Text);
  EXPECT_EQ(text.header, http_text_header());
  EXPECT_EQ(text.line(x), http_text_line(x));
  const HttpSink json = http_sink(OutputFormat::Json);
  EXPECT_EQ(json.header, "");
  EXPECT_EQ(nlohmann::json::parse(json.line(x))["kind"], "request");
}

TEST(http_output, summary_text_and_json_say_routes_and_losses) {
  HttpRed red;
  for (int i = 0; i < 20; ++i) {
    red.add(exchange(HttpSide::Server, "/hello", 200, false, 1'000'000));
    red.add(exchange(HttpSide::Server, "/fail", 500, false, 2'000'000));
  }
  HttpLosses none;
  std::string text = http_text_summary(red, none, "stopped by SIGINT");
  EXPECT_NE(text.find("40 requests on 2 routes"), std::string::npos) << text;
  EXPECT_NE(text.find("server GET          20      20    2.000 ms    2.000 ms    2.000 ms    "
                      "2.000 ms  /fail\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("nothing lost"), std::string::npos);
  HttpLosses some;
  some.ring_lost = 3;
  some.no_entry = 1;
  text = http_text_summary(red, some, "duration reached");
  EXPECT_NE(text.find("3 lost (ring buffer full), 1 returns without a recorded entry"),
            std::string::npos)
      << text;
  auto j = nlohmann::json::parse(http_json_summary(red, some, "duration reached"));
  EXPECT_EQ(j["kind"], "summary");
  EXPECT_EQ(j["requests"], 40);
  ASSERT_EQ(j["routes"].size(), 2u);
  EXPECT_EQ(j["routes"][0]["route"], "/fail");
  EXPECT_EQ(j["routes"][0]["errors"], 20);
  EXPECT_EQ(j["routes"][0]["statuses"]["500"], 20);
  EXPECT_EQ(j["routes"][0]["p99_ns"], 2'000'000);
  EXPECT_EQ(j["losses"]["ring_lost"], 3);
  EXPECT_EQ(j["losses"]["returns_without_entry"], 1);
  EXPECT_EQ(j["losses"]["read_errors"], 0);
}

}  // namespace
}  // namespace uscope
