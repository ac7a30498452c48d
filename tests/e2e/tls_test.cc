// `uscope tls` against real TLS on loopback: openssl s_server with curl and openssl s_client,
// python3.11's ssl module (libssl dlopen()ed at import), and the Go HTTPS fixtures with and
// without symbols. Certificates are made at test time with `openssl req`.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "e2e_support.h"

namespace uscope::e2e {
namespace {

constexpr const char* kOpenssl = "/usr/bin/openssl";
constexpr const char* kPython = "/usr/bin/python3.11";

// A self-signed certificate for 127.0.0.1 in a directory of its own, removed at the end.
struct TestCert {
  std::string dir, cert, key;
  TestCert() {
    char tmpl[] = "/tmp/uscope-tls-XXXXXX";
    dir = mkdtemp(tmpl);
    cert = dir + "/cert.pem";
    key = dir + "/key.pem";
    shell(std::string(kOpenssl) +
          " req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "
          "/CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
          key + " -out " + cert + " 2>/dev/null");
  }
  ~TestCert() { shell("rm -rf " + dir); }
  std::string file(const std::string& name, const std::string& text) const {
    std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
};

// Tests against `openssl s_server -www` on a free loopback port with a certificate of its own:
// it answers a GET with a page about itself (HTTP/1.0) and closes the connection.
class tls_www : public testing::Test {
 protected:
  void SetUp() override {
    USCOPE_REQUIRE_ROOT();
    ASSERT_TRUE(wait_for_port(port));
  }
  TestCert c;
  const int port = free_port();
  RunningCommand server{{kOpenssl, "s_server", "-quiet", "-www", "-accept",
                         "127.0.0.1:" + std::to_string(port), "-cert", c.cert, "-key", c.key}};
};

std::vector<nlohmann::json> tls_records(const std::vector<nlohmann::json>& objs) {
  std::vector<nlohmann::json> out;
  for (const auto& j : objs)
    if (j["kind"] == "tls") out.push_back(j);
  return out;
}

// Index of the first record from `from` on in `direction` whose data starts with `prefix`; -1 if
// none.
int find_record(const std::vector<nlohmann::json>& recs, const std::string& direction,
                const std::string& prefix, size_t from = 0) {
  for (size_t i = from; i < recs.size(); ++i)
    if (recs[i]["direction"] == direction && recs[i]["encoding"] == "text" &&
        recs[i]["data"].get<std::string>().starts_with(prefix))
      return static_cast<int>(i);
  return -1;
}

// The request written, then the response read, by the client side; or the request read, then the
// response written, by the server side. Returns the request's index (-1 when missing). A process
// watched mid-stream may show a response first: the one after the request counts. `same_thread`:
// one thread makes both calls, so the events come in call order; else (Go's client writes and
// reads on two goroutines) the response's read may return before the request's write does, and
// only its return after the write began is checked.
int expect_exchange(const std::vector<nlohmann::json>& recs, bool client,
                    const std::string& request, const std::string& response, const std::string& out,
                    bool same_thread = true) {
  int req = find_record(recs, client ? "write" : "read", request);
  EXPECT_GE(req, 0) << out;
  if (req < 0) return -1;
  const uint64_t began =
      recs[req]["ts_ns"].get<uint64_t>() - recs[req]["duration_ns"].get<uint64_t>();
  int resp = find_record(recs, client ? "read" : "write", response,
                         same_thread ? static_cast<size_t>(req) + 1 : 0);
  EXPECT_GE(resp, 0) << out;
  if (resp < 0) return -1;
  if (same_thread) {
    EXPECT_GT(resp, req) << out;
  }
  EXPECT_LE(began, recs[resp]["ts_ns"].get<uint64_t>()) << out;
  return req;
}

void expect_nothing_lost(const nlohmann::json& summary, bool cut_allowed = false) {
  ASSERT_EQ(summary["kind"], "summary") << summary.dump();
  for (const auto& [cause, n] : summary["losses"].items()) {
    if (cut_allowed && cause.starts_with("cut_")) continue;
    EXPECT_EQ(n, 0) << cause;
  }
}

TEST_F(tls_www, curl_to_s_server_request_then_response_redacted) {
  auto r = uscope({"tls", "--json", "-c",
                   "/usr/bin/curl -s -o /dev/null -H 'Cookie: id=s3cr3t' --cacert " + c.cert +
                       " https://127.0.0.1:" + std::to_string(port) + "/curl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto objs = json_lines(r.out);
  auto recs = tls_records(objs);
  int req = expect_exchange(recs, true, "GET /curl HTTP/1.1\r\n", "HTTP/1.0 200 ok\r\n", r.out);
  ASSERT_GE(req, 0);
  const std::string data = recs[req]["data"];
  EXPECT_NE(data.find("Cookie: [redacted 9 bytes]\r\n"), std::string::npos) << data;
  EXPECT_EQ(r.out.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(recs[req]["function"], "SSL_write");
  EXPECT_EQ(recs[req]["comm"], "curl");
  // The page is longer than the default --max-bytes: the rest is counted, call by call.
  uint64_t not_captured = 0;
  for (const auto& j : recs) not_captured += j["not_captured"].get<uint64_t>();
  ASSERT_FALSE(objs.empty());
  EXPECT_EQ(objs.back()["losses"]["cut_bytes"], not_captured);
  expect_nothing_lost(objs.back(), true);
  EXPECT_TRUE(links_released("trace_"));
}

// s_server without -www reads and writes with SSL_read and SSL_write (with -www it goes through
// OpenSSL's SSL BIO, which calls libssl's internal functions: nothing exported to probe). What
// it reads it prints; what its stdin gives it sends.
TEST(tls, s_server_seen_from_its_side_with_fd) {
  USCOPE_REQUIRE_ROOT();
  TestCert c;
  const int port = free_port();
  GatedProcess server({kOpenssl, "s_server", "-quiet", "-accept",
                       "127.0.0.1:" + std::to_string(port), "-cert", c.cert, "-key", c.key});
  ASSERT_TRUE(wait_for_port(port));
  auto tracer = RunningCommand::uscope({"tls", "--json", "-p", std::to_string(server.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  RunningCommand curl({"/usr/bin/curl", "-s", "--cacert", c.cert,
                       "https://127.0.0.1:" + std::to_string(port) + "/server-side"});
  ASSERT_TRUE(tracer.wait_for_output("GET /server-side"));
  server.send("HTTP/1.0 200 ok\r\nContent-Length: 5\r\n\r\nhello");
  auto got = curl.finish();
  EXPECT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(got.out, "hello");
  ASSERT_TRUE(tracer.wait_for_output("HTTP/1.0 200 ok"));
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto objs = json_lines(r.out);
  auto recs = tls_records(objs);
  int req =
      expect_exchange(recs, false, "GET /server-side HTTP/1.1\r\n", "HTTP/1.0 200 ok\r\n", r.out);
  ASSERT_GE(req, 0);
  EXPECT_EQ(recs[req]["function"], "SSL_read");
  // s_server reads through a socket BIO: the fd is known, and the client is still connected.
  EXPECT_GE(recs[req]["fd"].get<int>(), 3) << recs[req].dump();
  EXPECT_TRUE(
      std::regex_match(recs[req]["peer"].get<std::string>(), std::regex("127\\.0\\.0\\.1:[0-9]+")))
      << recs[req].dump();
  expect_nothing_lost(objs.back());
}

TEST_F(tls_www, s_client_request_then_response) {
  // -quiet implies -ign_eof: s_client sends what its stdin gives and ends when the server closes.
  GatedProcess client({kOpenssl, "s_client", "-quiet", "-connect",
                       "127.0.0.1:" + std::to_string(port), "-CAfile", c.cert});
  // Exec'd is not yet linked: uscope -p finds no libssl until the loader has mapped it.
  ASSERT_TRUE(wait_for_mapping(client.pid(), "libssl.so"));
  auto tracer = RunningCommand::uscope({"tls", "--json", "-p", std::to_string(client.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  client.send("GET /s_client HTTP/1.0\r\n\r\n");
  std::string client_out;
  client.wait(&client_out);
  auto r = tracer.finish();  // the target exited
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto objs = json_lines(r.out);
  auto recs = tls_records(objs);
  int req = expect_exchange(recs, true, "GET /s_client HTTP/1.0\r\n", "HTTP/1.0 200 ok\r\n", r.out);
  ASSERT_GE(req, 0);
  EXPECT_EQ(recs[req]["comm"], "openssl");
  EXPECT_GE(recs[req]["fd"].get<int>(), 3) << recs[req].dump();
  expect_nothing_lost(objs.back(), true);
}

TEST_F(tls_www, openssl_linked_into_the_program) {
  auto r = uscope({"tls", "--json", "-v", "-c",
                   fixture("native/tls_static_client") + " " + std::to_string(port) + " " + c.cert +
                       " /static"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tls_static_client (OpenSSL linked statically): SSL_read, SSL_write"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("libssl.so"), std::string::npos) << r.err;  // nothing else probed
  auto objs = json_lines(r.out);
  auto recs = tls_records(objs);
  int req = expect_exchange(recs, true, "GET /static HTTP/1.0\r\n", "HTTP/1.0 200 ok\r\n", r.out);
  ASSERT_GE(req, 0);
  EXPECT_EQ(recs[req]["function"], "SSL_write");
  EXPECT_GE(recs[req]["fd"].get<int>(), 3) << recs[req].dump();  // a socket BIO (SSL_set_fd)
  expect_nothing_lost(objs.back(), true);
}

constexpr const char* kPythonClient = R"(import socket, sys
print("ready", flush=True)
sys.stdin.read(1)  # the gate: ssl (and libssl) is imported only after it
import ssl
ctx = ssl.create_default_context(cafile=sys.argv[2])
with socket.create_connection(("127.0.0.1", int(sys.argv[1]))) as s:
    with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
        t.sendall(b"GET /python HTTP/1.0\r\nAuthorization: Basic dXNlcjpwYXNz\r\n\r\n")
        while t.recv(65536):
            pass
# stderr: under -c the script shares stdout with uscope, whose records longer than PIPE_BUF
# reach the pipe in pieces that a line of the script's could split.
print("done", file=sys.stderr)
)";

TEST_F(tls_www, python_ssl_started_by_uscope_loads_libssl_later) {
  // uscope's tests run it with stdin at /dev/null: the script's gate reads EOF and goes on.
  const std::string script = c.file("client.py", kPythonClient);
  auto r =
      uscope({"tls", "--json", "-c",
              std::string(kPython) + " " + script + " " + std::to_string(port) + " " + c.cert});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto objs = json_lines(r.out);
  auto recs = tls_records(objs);
  int req = expect_exchange(recs, true, "GET /python HTTP/1.0\r\n", "HTTP/1.0 200 ok\r\n", r.out);
  ASSERT_GE(req, 0);
  EXPECT_EQ(recs[req]["function"], "SSL_write_ex");
  EXPECT_NE(recs[req]["data"].get<std::string>().find("Authorization: [redacted 18 bytes]"),
            std::string::npos);
  expect_nothing_lost(objs.back(), true);
}

TEST_F(tls_www, python_process_that_has_not_loaded_libssl) {
  const std::string script = c.file("client.py", kPythonClient);
  GatedProcess py({kPython, script, std::to_string(port), c.cert});
  ASSERT_TRUE(py.wait_for_line("ready"));
  // Not loaded yet: an error that says what was looked at and what to do.
  auto none = uscope({"tls", "-p", std::to_string(py.pid())});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no TLS library to probe"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("--lib ssl"), std::string::npos) << none.err;
  // Named: probed before python imports ssl.
  auto tracer =
      RunningCommand::uscope({"tls", "--json", "--lib", "ssl", "-p", std::to_string(py.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  py.start();
  std::string py_out;
  EXPECT_EQ(py.wait(&py_out), 0);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto recs = tls_records(json_lines(r.out));
  expect_exchange(recs, true, "GET /python HTTP/1.0\r\n", "HTTP/1.0 200 ok\r\n", r.out);
}

// The Go fixtures: `client` GETs /hello over one keep-alive connection, forever.
void go_exchange(const std::string& server_name) {
  USCOPE_REQUIRE_ROOT();
  TestCert c;
  const int port = free_port();
  GatedProcess server({fixture("go/" + server_name), c.cert, c.key, std::to_string(port)});
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/hello";
  RunningCommand client({fixture("go/gotls_client"), url, c.cert, "0"});
  auto tracer = RunningCommand::uscope({"tls", "--json", "-p", std::to_string(server.pid())});
  ASSERT_TRUE(wait_for_links(tracer.pid(), "trace_"));
  ASSERT_TRUE(tracer.wait_for_output("hello over tls"));
  tracer.signal(SIGINT);
  auto r = tracer.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto recs = tls_records(json_lines(r.out));
  int req = expect_exchange(recs, false, "GET /hello HTTP/1.1\r\n", "HTTP/1.1 200 OK\r\n", r.out);
  ASSERT_GE(req, 0);
  EXPECT_EQ(recs[req]["library"], "go");
  EXPECT_EQ(recs[req]["function"], "crypto/tls.(*Conn).Read");
  const std::string data = recs[req]["data"];
  EXPECT_NE(data.find("Authorization: [redacted 12 bytes]"), std::string::npos) << data;
  int resp = find_record(recs, "write", "HTTP/1.1 200 OK", static_cast<size_t>(req) + 1);
  ASSERT_GT(resp, req);
  EXPECT_NE(recs[resp]["data"].get<std::string>().find("Set-Cookie: [redacted 14 bytes]"),
            std::string::npos);
  // The client's connection stays open: its peer is found. The *net.TCPConn itab comes from
  // .symtab, or without it from .itablink and the type descriptors' names.
  EXPECT_GE(recs[req]["fd"].get<int>(), 3) << recs[req].dump();
  EXPECT_TRUE(
      std::regex_match(recs[req]["peer"].get<std::string>(), std::regex("127\\.0\\.0\\.1:[0-9]+")))
      << recs[req].dump();
}
TEST(tls, go_server_with_symbols) {
  go_exchange("gotls_server");
}
TEST(tls, go_server_stripped) {
  go_exchange("gotls_server_stripped");
}

TEST(tls, go_client_started_by_uscope) {
  USCOPE_REQUIRE_ROOT();
  TestCert c;
  const int port = free_port();
  GatedProcess server({fixture("go/gotls_server"), c.cert, c.key, std::to_string(port)});
  ASSERT_TRUE(server.wait_for_line("listening on"));
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/hello";
  for (const std::string name : {"gotls_client", "gotls_client_stripped"}) {
    auto r = uscope({"tls", "--json", "-c", fixture("go/" + name) + " " + url + " " + c.cert});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto objs = json_lines(r.out);
    expect_exchange(tls_records(objs), true, "GET /hello HTTP/1.1\r\n", "HTTP/1.1 200 OK\r\n",
                    r.out, false);
    expect_nothing_lost(objs.back());
  }
}

TEST_F(tls_www, text_output_and_a_private_output_file) {
  const std::string out = c.dir + "/capture.jsonl";
  const std::string curl = "/usr/bin/curl -s -o /dev/null --cacert " + c.cert +
                           " https://127.0.0.1:" + std::to_string(port) + "/text";
  auto r = uscope({"tls", "--max-bytes", "16", "-c", curl});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SSL_write          write"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    GET /text HTTP/1\n"), std::string::npos) << r.out;  // 16 bytes
  EXPECT_NE(r.out.find("more bytes not captured: --max-bytes 16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uscope tls: target exited; 1 reads"), std::string::npos) << r.out;
  auto f = uscope({"tls", "-o", out, "-c", curl});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(out);
  std::string first;
  std::getline(in, first);
  EXPECT_TRUE(first.starts_with("{\"bytes\"")) << first;
}

TEST(tls, bad_input_says_what_was_found) {
  USCOPE_REQUIRE_ROOT();
  // A library without the functions.
  auto libc = uscope({"tls", "--lib", "c", "-c", "/bin/true"});
  EXPECT_EQ(libc.exit_code, 1);
  EXPECT_NE(libc.err.find("has none of the functions uscope tls probes (SSL_read, SSL_write"),
            std::string::npos)
      << libc.err;
  // A Go program without crypto/tls.
  auto go = uscope({"tls", "-c", fixture("go/gowork") + " 1"});
  EXPECT_EQ(go.exit_code, 1);
  EXPECT_NE(go.err.find("Go, no crypto/tls"), std::string::npos) << go.err;
  // Options.
  EXPECT_EQ(uscope({"tls", "-c", "/bin/true", "--max-bytes", "0"}).exit_code, 2);
  EXPECT_EQ(uscope({"tls"}).exit_code, 2);
}

}  // namespace
}  // namespace uscope::e2e
