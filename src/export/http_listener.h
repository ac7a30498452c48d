#pragma once
// The agent's own HTTP endpoints (/metrics, /healthz). libmicrohttpd serves them in its external
// mode: its sockets sit behind one epoll fd that uscope's event loop watches, so requests are
// answered on the loop's thread, between jobs' batches, and no thread of its own ever runs.
// Only GET and HEAD of the registered paths are answered; anything else gets 404 or 405.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "export/listen_address.h"
#include "util/result.h"

struct MHD_Daemon;

namespace uscope {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};
using HttpRoute = std::function<HttpReply()>;

class HttpListener {
 public:
  // Binds `where` (port 0: one the kernel picks, see port()) and serves `routes` by exact path.
  static Result<std::unique_ptr<HttpListener>> start(const ListenAddress& where,
                                                     std::map<std::string, HttpRoute> routes);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Readable when a connection wants serving: then call serve().
  int fd() const;
  // Accepts, reads and answers what is ready, without blocking.
  void serve();
  // When serve() must run even if fd() stays quiet (idle connections time out); nullopt: never.
  std::optional<std::chrono::milliseconds> next_timeout() const;
  // The port bound (the kernel's choice when 0 was asked for).
  uint16_t port() const { return port_; }
  // Requests answered and refused (wrong path or method), for the agent's own metrics.
  uint64_t served() const { return served_; }
  uint64_t refused() const { return refused_; }

 private:
  HttpListener() = default;
  struct Handler;
  MHD_Daemon* daemon_ = nullptr;
  std::map<std::string, HttpRoute> routes_;
  uint16_t port_ = 0;
  uint64_t served_ = 0, refused_ = 0;
};

}  // namespace uscope
