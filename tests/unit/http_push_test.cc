// Pushes received by a one-connection-at-a-time HTTP server in the test: what arrives on the wire
// (method, path and query, headers, multipart body) and what the counters say.
#include "export/http_push.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "export/pyroscope_push.h"

namespace uscope {
namespace {

// Accepts `n` requests, keeps each whole, answers each with `status`.
struct Receiver {
  int fd = -1;
  uint16_t port = 0;
  std::vector<std::string> requests;
  std::thread thread;

  Receiver(int n, int status) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    listen(fd, 8);
    thread = std::thread([this, n, status] {
      for (int i = 0; i < n; ++i) {
        const int c = accept(fd, nullptr, nullptr);
        std::string req;
        char buf[65536];
        size_t want = std::string::npos;
        while (req.size() < want) {
          const ssize_t got = read(c, buf, sizeof buf);
          if (got <= 0) break;
          req.append(buf, static_cast<size_t>(got));
          const size_t end = req.find("\r\n\r\n");
          const size_t cl = req.find("Content-Length: ");
          if (end != std::string::npos && cl != std::string::npos && cl < end)
            want = end + 4 + std::stoul(req.substr(cl + 16));
        }
        requests.push_back(req);
        const std::string reply = fmt::format(
            "HTTP/1.1 {} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", status);
        (void)!write(c, reply.data(), reply.size());
        close(c);
      }
    });
  }
  ~Receiver() {
    if (thread.joinable()) thread.join();
    close(fd);
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port); }
};

TEST(http_push, pyroscope_push_sends_name_labels_times_and_the_profile_part) {
  Receiver rx(1, 200);
  ProfilePush p{rx.url() + "/",
                "redis-server",
                {{"process", "redis-server"}, {"pid", "42"}, {"host", "node 1"}},
                1700000000,
                1700000010,
                19,
                std::string("\x1f\x8b pprof bytes", 14)};
  auto reply = http_push(pyroscope_request(p), std::chrono::seconds(10));
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "ok");
  rx.thread.join();
  ASSERT_EQ(rx.requests.size(), 1u);
  const std::string& r = rx.requests[0];
  // name=redis-server{service_name=redis-server,process=redis-server,pid=42,host=node_1}
  EXPECT_TRUE(
      r.starts_with("POST /ingest?name=redis-server%7Bservice_name%3Dredis-server%2C"
                    "process%3Dredis-server%2Cpid%3D42%2Chost%3Dnode_1%7D&from=1700000000"
                    "&until=1700000010&format=pprof&sampleRate=19&spyName=uscope HTTP/1.1"))
      << r;
  EXPECT_NE(r.find("Content-Type: multipart/form-data; boundary="), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\""),
            std::string::npos)
      << r;
  EXPECT_NE(r.find(std::string("\x1f\x8b pprof bytes", 14)), std::string::npos) << r;
}

TEST(http_push, pusher_counts_sent_failed_and_refused_pushes) {
  Receiver ok(1, 204), refused(1, 400);
  Pusher pusher;
  pusher.push({ok.url() + "/v1/metrics", "application/x-protobuf", "abc", {}, {}});
  pusher.push({refused.url() + "/v1/metrics", "application/x-protobuf", "abc", {}, {}});
  pusher.drain();
  PushCounters c = pusher.counters();
  EXPECT_EQ(c.sent, 1u);
  EXPECT_EQ(c.failed, 1u);
  EXPECT_NE(c.last_error.find("answered 400"), std::string::npos) << c.last_error;
  ok.thread.join();
  EXPECT_NE(ok.requests[0].find("Content-Type: application/x-protobuf"), std::string::npos);
  EXPECT_TRUE(ok.requests[0].ends_with("\r\n\r\nabc")) << ok.requests[0];

  // Nobody listening: the error names the URL.
  auto none = http_push({"http://127.0.0.1:1/x", "", "", {}, {}}, std::chrono::seconds(5));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("cannot push to http://127.0.0.1:1/x"), std::string::npos)
      << none.error().message;
}

TEST(http_push, only_http_and_https_urls) {
  EXPECT_TRUE(check_push_url("http://127.0.0.1:4040"));
  EXPECT_TRUE(check_push_url("https://pyroscope.example:443/base"));
  auto file = check_push_url("file:///etc/passwd");
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("http:// or https:// only"), std::string::npos);
  EXPECT_FALSE(check_push_url("not a url"));
}

}  // namespace
}  // namespace uscope
