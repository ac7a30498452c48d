// `uscope http` against the Go fixtures: a net/http server under load and a client, each with
// DWARF and stripped.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

// A port nothing listens on now (the kernel's pick for port 0), for a server to take.
// How many lines of `text` match `pattern` whole.
size_t matching_lines(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  size_t n = 0;
  for (const auto& l : lines_with(text, ""))
    if (std::regex_match(l, re)) ++n;
  return n;
}

// 20 rounds of four routes while `uscope http -p` watches the server, itself under a load of
// requests to another path since before the probes went in.
void serves_red_per_route(const std::string& server_name) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({fixture("go/" + server_name), std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  RunningCommand load({fixture("go/gohttp_client"), base, "0", "/load"});
  auto tracer = RunningCommand::uscope({"http", "-p", std::to_string(server.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  ASSERT_TRUE(tracer.wait_for_output(" /load\n"));  // attached under load, and seeing it
  auto client = run(
      {fixture("go/gohttp_client"), base, "20", "/hello", "/items/apple", "/items/nope", "/fail"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  EXPECT_NE(client.out.find("done ok=80 failed=0"), std::string::npos) << client.out;
  // Every event is in the ring by now: a request ends at finishRequest's entry, before it flushes
  // the response, and uscope reads what the ring holds at the stop.
  load.signal(SIGKILL);
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"/hello", "200"}, {"/items/apple", "200"}, {"/items/nope", "404"}, {"/fail", "500"}};
  for (const auto& [path, status] : routes) {
    // Live lines ("server GET  200  0.019 ms  /hello"), not the summary's row.
    EXPECT_EQ(matching_lines(r.out, "server GET +[0-9a-z+]+ +[0-9.]+ m?s  " + path), 20u)
        << path << "\n"
        << r.out;
    EXPECT_EQ(matching_lines(r.out, "server GET +" + status + " +[0-9.]+ m?s  " + path), 20u)
        << path;
  }
  // The summary: 20 per route, the 500s as errors.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("server GET +20 +0 .*  /hello\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("server GET +20 +0 .*  /items/apple\n")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("server GET +20 +0 .*  /items/nope\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("server GET +20 +20 .*  /fail\n"))) << r.out;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(http, server_red_per_route) {
  serves_red_per_route("gohttp_server");
}
TEST(http, server_red_per_route_stripped) {
  serves_red_per_route("gohttp_server_stripped");
}

// A served request ends at the entry of (*response).finishRequest (emulated), not at
// ServeHTTP's RETs (single-stepped): each request is there, with its method, route and status as
// the clients asked and the handler answered, and a duration that holds the handler's own time
// (the fixture's clock); nothing is lost.
TEST(http, server_request_ends_at_finish_request) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({fixture("go/gohttp_server_stripped"), std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto tracer = RunningCommand::uscope(
      {"http", "--server", "--json", "-v", "-p", std::to_string(server.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  auto client = run({fixture("go/gohttp_client"), base, "10", "/timed", "/empty", "/items/nope"});
  ASSERT_EQ(client.exit_code, 0) << client.err;
  ASSERT_NE(client.out.find("done ok=30 failed=0"), std::string::npos) << client.out;
  auto post = run({"curl", "-sS", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-X",
                   "POST", "-d", "x", base + "/timed", base + "/timed", base + "/timed"});
  ASSERT_EQ(post.exit_code, 0) << post.err;
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto quit = run({fixture("go/gohttp_client"), base, "1", "/quit"});
  ASSERT_EQ(quit.exit_code, 0) << quit.err;
  std::string served;
  ASSERT_EQ(server.wait(&served), 0);

  // Six sites, all entries, emulated; no RET: ServeHTTP's, finishRequest's, handlerDone's (the
  // binary has net/http's HTTP/2 server too), and where a request still recorded is dropped: an
  // HTTP/1 connection's deferred end and start, and an HTTP/2 stream's start (this server cannot
  // hijack).
  EXPECT_EQ(matching_lines(r.err, "site net/http\\.serverHandler\\.ServeHTTP +entry .*"), 6u)
      << r.err;
  EXPECT_EQ(matching_lines(r.err,
                           "site .* emulated \\([^)]*\\): the call's end: entry of "
                           "net/http\\.\\(\\*response\\)\\.finishRequest.*"),
            1u)
      << r.err;
  EXPECT_EQ(matching_lines(r.err, "site .* @ 0x[0-9a-f]+  single-stepped .*"), 0u) << r.err;

  std::map<std::string, size_t> seen;  // "METHOD STATUS PATH ROUTE"
  std::vector<uint64_t> timed_ns;
  auto objs = json_lines(r.out);
  ASSERT_FALSE(objs.empty()) << r.out;
  for (const auto& j : objs) {
    if (j["kind"] != "request") continue;
    EXPECT_EQ(j["side"], "server");
    EXPECT_EQ(j["pid"], server.pid());
    ++seen[fmt::format("{} {} {} {}", j["method"].get<std::string>(), j["status"].get<int>(),
                       j["path"].get<std::string>(), j["route"].get<std::string>())];
    if (j["path"] == "/timed") timed_ns.push_back(j["duration_ns"].get<uint64_t>());
  }
  const std::map<std::string, size_t> asked = {{"GET 202 /timed /timed", 10},
                                               {"POST 202 /timed /timed", 3},
                                               {"GET 200 /empty /empty", 10},
                                               {"GET 404 /items/nope /items/nope", 10}};
  EXPECT_EQ(seen, asked) << r.out;
  const auto& s = objs.back();
  ASSERT_EQ(s["kind"], "summary") << r.out;
  EXPECT_EQ(s["requests"], 33);
  for (const auto& [cause, n] : s["losses"].items()) EXPECT_EQ(n, 0) << cause;

  // The handler's own times, one line per /timed request: each request's duration holds its
  // handler's, so the i-th shortest duration is at least the i-th shortest handler time.
  std::vector<uint64_t> handler_ns;
  std::istringstream lines(served);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("timed ", 0) == 0) handler_ns.push_back(std::stoull(l.substr(6)));
  ASSERT_EQ(handler_ns.size(), 13u) << served;
  ASSERT_EQ(timed_ns.size(), 13u);
  std::sort(handler_ns.begin(), handler_ns.end());
  std::sort(timed_ns.begin(), timed_ns.end());
  for (size_t i = 0; i < timed_ns.size(); ++i) EXPECT_GE(timed_ns[i], handler_ns[i]) << i;
  EXPECT_TRUE(links_released("trace_"));
}

// HTTP/2 over TLS (curl --http2, one connection) and HTTP/1.1 requests that never finish: every
// h2 request is there with its method, path, status and protocol, ended at handlerDone's entry;
// each hijacked connection and each handler that panicked is counted unfinished, never served.
// The counts are the clients' own (curl's status lines) and the fixture's (its hijack and panic
// lines).
void serves_http2_and_counts_unfinished(const std::string& server_name) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({fixture("go/" + server_name), std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "https://127.0.0.1:" + std::to_string(port);
  auto tracer = RunningCommand::uscope(
      {"http", "--server", "--json", "-v", "-p", std::to_string(server.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));

  // N = 20 HTTP/2 requests on one connection, 5 per route; curl prints each one's version and
  // status.
  const std::vector<std::pair<std::string, int>> routes = {
      {"/ok", 200}, {"/created", 201}, {"/missing", 404}, {"/fail", 500}};
  std::vector<std::string> argv = {"curl", "--http2", "-k",
                                   "-sS",  "-w",      "%{http_version} %{response_code}\n"};
  for (int i = 0; i < 5; ++i)
    for (const auto& [path, status] : routes) {
      argv.insert(argv.end(), {"-o", "/dev/null", base + path});
    }
  auto h2 = run(argv);
  ASSERT_EQ(h2.exit_code, 0) << h2.err;
  for (const auto& [path, status] : routes)
    EXPECT_EQ(matching_lines(h2.out, "2 " + std::to_string(status)), 5u) << h2.out;
  // K = 3 hijacked HTTP/1.1 connections, and 2 handlers that panic (HTTP/2, HTTP/1.1).
  const int hijacks = 3;
  for (int i = 0; i < hijacks; ++i) {
    auto hj = run({"curl", "--http1.1", "-k", "-sS", base + "/hijack"});
    ASSERT_EQ(hj.exit_code, 0) << hj.err;
    EXPECT_EQ(hj.out, "hijacked\n");
    ASSERT_TRUE(server.wait_for_line("hijacked " + std::to_string(i + 1)));
  }
  auto panic2 = run({"curl", "--http2", "-k", "-sS", "-o", "/dev/null", base + "/panic"});
  EXPECT_NE(panic2.exit_code, 0);  // the stream reset
  ASSERT_TRUE(server.wait_for_line("panicking 1"));
  auto panic1 = run({"curl", "--http1.1", "-k", "-sS", "-o", "/dev/null", base + "/panic"});
  EXPECT_NE(panic1.exit_code, 0);  // the connection dropped
  ASSERT_TRUE(server.wait_for_line("panicking 2"));
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto quit = run({"curl", "-k", "-sS", base + "/quit"});
  ASSERT_EQ(quit.exit_code, 0) << quit.err;
  ASSERT_EQ(server.wait(), 0);

  // Every end an emulated entry: finishRequest's, handlerDone's; dropped at a hijack, at an
  // HTTP/1 connection's deferred end and start, and at an HTTP/2 stream's start (never at each
  // goroutine's exit: net/http's background read would make that a trap a request); no RET.
  EXPECT_EQ(matching_lines(r.err,
                           "site .* emulated \\([^)]*\\): the call's end: entry of "
                           "net/http\\.\\(\\*http2responseWriter\\)\\.handlerDone.*"),
            1u)
      << r.err;
  for (const char* drop :
       {"net/http\\.\\(\\*conn\\)\\.hijackLocked", "net/http\\.\\(\\*conn\\)\\.serve\\.func1",
        "net/http\\.\\(\\*conn\\)\\.serve", "net/http\\.\\(\\*http2serverConn\\)\\.runHandler"})
    EXPECT_EQ(matching_lines(r.err, fmt::format("site .* emulated \\([^)]*\\): where the call is "
                                                "dropped unfinished: entry of {},.* \\[abandon\\]",
                                                drop)),
              1u)
        << drop << "\n"
        << r.err;
  EXPECT_EQ(matching_lines(r.err, "runtime\\.goexit1"), 0u) << r.err;
  EXPECT_EQ(matching_lines(r.err, "site .* @ 0x[0-9a-f]+  single-stepped .*"), 0u) << r.err;
  // The HTTP/2 state's status field placed from the binary, with its source.
  EXPECT_EQ(matching_lines(r.err,
                           "uscope: net/http\\.http2responseWriterState\\.status at offset "
                           "80 \\(from .*\\)"),
            1u)
      << r.err;

  std::map<std::string, size_t> seen;  // "PROTOCOL METHOD STATUS PATH"
  auto objs = json_lines(r.out);
  ASSERT_FALSE(objs.empty()) << r.out;
  for (const auto& j : objs) {
    if (j["kind"] != "request") continue;
    EXPECT_EQ(j["pid"], server.pid());
    ++seen[fmt::format("{} {} {} {}", j.value("protocol", "?"), j["method"].get<std::string>(),
                       j["status"].get<int>(), j["path"].get<std::string>())];
  }
  std::map<std::string, size_t> asked;
  for (const auto& [path, status] : routes)
    asked[fmt::format("HTTP/2.0 GET {} {}", status, path)] = 5;
  EXPECT_EQ(seen, asked) << r.out;
  const auto& s = objs.back();
  ASSERT_EQ(s["kind"], "summary") << r.out;
  EXPECT_EQ(s["requests"], 20);
  EXPECT_EQ(s["losses"]["unfinished"], hijacks + 2) << s.dump();
  for (const auto& [cause, n] : s["losses"].items()) {
    if (cause != "unfinished") {
      EXPECT_EQ(n, 0) << cause;
    }
  }
  EXPECT_TRUE(links_released("trace_"));
}

TEST(http, http2_served_and_unfinished_counted) {
  serves_http2_and_counts_unfinished("gohttp2_server");
}
TEST(http, http2_served_and_unfinished_counted_stripped) {
  serves_http2_and_counts_unfinished("gohttp2_server_stripped");
}

TEST(http, json_summary_with_duration) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({fixture("go/gohttp_server_stripped"), std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto r = uscope(
      {"http", "--json", "-c", fixture("go/gohttp_client") + " " + base + " 5 /hello /fail"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto objs = json_lines(r.out);
  ASSERT_FALSE(objs.empty()) << r.out;
  size_t requests = 0;
  for (const auto& j : objs)
    if (j["kind"] == "request") {
      ++requests;
      EXPECT_EQ(j["side"], "client");
      EXPECT_EQ(j["method"], "GET");
      EXPECT_GT(j["duration_ns"].get<uint64_t>(), 0u);
    }
  EXPECT_EQ(requests, 10u) << r.out;
  const auto& s = objs.back();
  ASSERT_EQ(s["kind"], "summary") << r.out;
  ASSERT_EQ(s["routes"].size(), 2u) << s.dump();
  EXPECT_EQ(s["routes"][0]["route"], base + "/fail");
  EXPECT_EQ(s["routes"][0]["count"], 5);
  EXPECT_EQ(s["routes"][0]["errors"], 5);
  EXPECT_EQ(s["routes"][0]["statuses"]["500"], 5);
  EXPECT_EQ(s["routes"][1]["route"], base + "/hello");
  EXPECT_EQ(s["routes"][1]["errors"], 0);
  // Probes in before the command started: every call has its entry, nothing is missing.
  for (const auto& [cause, n] : s["losses"].items()) EXPECT_EQ(n, 0) << cause;
}

// `uscope http -p` attached to a client that keeps calling the server.
void client_under_load(const std::string& client_name) {
  USCOPE_REQUIRE_ROOT();
  const int port = free_port();
  GatedProcess server({fixture("go/gohttp_server"), std::to_string(port)});
  server.start();
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  RunningCommand client({fixture("go/" + client_name), base, "0", "/hello"});
  auto tracer = RunningCommand::uscope({"http", "-p", std::to_string(client.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  EXPECT_TRUE(tracer.wait_for_output("client GET        200"));
  EXPECT_TRUE(tracer.wait_for_output("  " + base + "/hello\n"));
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  client.signal(SIGKILL);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(matching_lines(r.out, "client GET +200 +[0-9.]+ m?s  " + base + "/hello"), 0u) << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("client GET +[0-9]+ +0 .*  " + base + "/hello\n")))
      << r.out;
  EXPECT_TRUE(links_released("trace_"));
}

TEST(http, client_under_load) {
  client_under_load("gohttp_client");
}
TEST(http, client_under_load_stripped) {
  client_under_load("gohttp_client_stripped");
}

// Nothing listens on port 1: every call fails, and each is an error.
void connection_refused(const std::string& client_name) {
  USCOPE_REQUIRE_ROOT();
  auto r = uscope({"http", "-c", fixture("go/" + client_name) + " http://127.0.0.1:1 3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(matching_lines(r.out, "client GET +error +[0-9.]+ m?s  http://127.0.0.1:1/hello"), 3u)
      << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("client GET +3 +3 .*  http://127.0.0.1:1/hello\n")))
      << r.out;
}

TEST(http, client_connection_refused) {
  connection_refused("gohttp_client");
}
TEST(http, client_connection_refused_stripped) {
  connection_refused("gohttp_client_stripped");
}

TEST(http, refuses_what_is_not_a_go_http_program) {
  USCOPE_REQUIRE_ROOT();
  auto native = uscope({"http", "-c", fixture("native/target_loop") + " 1"});
  EXPECT_EQ(native.exit_code, 1);
  EXPECT_NE(native.err.find("is not a Go program"), std::string::npos) << native.err;
  auto plain_go = uscope({"http", "-c", fixture("go/gowork_stripped") + " 1"});
  EXPECT_EQ(plain_go.exit_code, 1);
  EXPECT_NE(plain_go.err.find("does not use net/http's server or client"), std::string::npos)
      << plain_go.err;
  EXPECT_TRUE(links_released("trace_"));
}

}  // namespace
}  // namespace uscope::e2e
