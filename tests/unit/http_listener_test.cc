// The agent's HTTP listener, served the way the event loop serves it (poll its fd, then serve()),
// talked to by a plain socket client: status lines, bodies, refused paths and methods.
#include "export/http_listener.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace uscope {
namespace {

// Sends `request` to 127.0.0.1:port and serves the listener until the server closes the reply.
std::string exchange(HttpListener& l, const std::string& request) {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(l.port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(write(s, request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string reply;
  for (;;) {
    pollfd fds[2] = {{l.fd(), POLLIN, 0}, {s, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) break;
    if (fds[0].revents) l.serve();
    if (fds[1].revents) {
      char buf[4096];
      const ssize_t n = read(s, buf, sizeof buf);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
  }
  close(s);
  return reply;
}

TEST(listen_address, forms_and_errors) {
  auto v4 = parse_listen_address("127.0.0.1:9464");
  ASSERT_TRUE(v4) << v4.error().message;
  EXPECT_EQ(v4->port, 9464);
  EXPECT_TRUE(v4->loopback());
  EXPECT_EQ(v4->text(), "127.0.0.1:9464");
  auto v6 = parse_listen_address("[::1]:80");
  ASSERT_TRUE(v6);
  EXPECT_TRUE(v6->loopback());
  EXPECT_EQ(v6->text(), "[::1]:80");
  auto any = parse_listen_address(":9464");
  ASSERT_TRUE(any);
  EXPECT_FALSE(any->loopback());
  EXPECT_EQ(any->text(), "*:9464");
  EXPECT_FALSE(parse_listen_address("10.1.2.3:1")->loopback());
  EXPECT_TRUE(parse_listen_address("localhost:1")->loopback());
  for (auto [bad, says] : {std::pair{"9464", "no port"},
                           {"127.0.0.1:http", "not a port"},
                           {"127.0.0.1:70000", "not a port"},
                           {"::1:80", "in brackets"},
                           {"[::1:80", "unclosed"},
                           {"example.com:80", "not an IP address"}}) {
    auto r = parse_listen_address(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  }
}

TEST(http_listener, answers_routes_and_refuses_the_rest) {
  int scrapes = 0;
  auto l = HttpListener::start(*parse_listen_address("127.0.0.1:0"),
                               {{"/metrics", [&] {
                                   ++scrapes;
                                   return HttpReply{200, "text/plain; version=0.0.4", "up 1\n"};
                                 }}});
  ASSERT_TRUE(l) << l.error().message;
  ASSERT_NE((*l)->port(), 0);
  std::string r = exchange(**l, "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_TRUE(r.ends_with("\r\n\r\nup 1\n")) << r;
  EXPECT_EQ(scrapes, 1);

  r = exchange(**l, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");  // the query is not part of the path
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  r = exchange(**l, "GET /etc/passwd HTTP/1.0\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 404")) << r;
  r = exchange(**l, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 405")) << r;
  EXPECT_NE(r.find("Allow: GET, HEAD"), std::string::npos) << r;
  r = exchange(**l, "HEAD /metrics HTTP/1.0\r\n\r\n");
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200")) << r;
  EXPECT_TRUE(r.ends_with("\r\n\r\n")) << r;
  EXPECT_EQ(scrapes, 3);
  EXPECT_EQ((*l)->served(), 3u);
  EXPECT_EQ((*l)->refused(), 2u);
}

TEST(http_listener, a_port_in_use_is_named) {
  auto first = HttpListener::start(*parse_listen_address("127.0.0.1:0"), {});
  ASSERT_TRUE(first);
  auto again = parse_listen_address(fmt::format("127.0.0.1:{}", (*first)->port()));
  auto second = HttpListener::start(*again, {});
  ASSERT_FALSE(second);
  EXPECT_NE(
      second.error().message.find(fmt::format("cannot listen on 127.0.0.1:{}", (*first)->port())),
      std::string::npos)
      << second.error().message;
}

}  // namespace
}  // namespace uscope
