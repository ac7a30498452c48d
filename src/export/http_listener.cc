#include "export/http_listener.h"

#include <microhttpd.h>

#include <cerrno>
#include <cstring>

namespace uscope {

struct HttpListener::Handler {
  static MHD_Result answer(void* self_ptr, MHD_Connection* c, const char* url, const char* method,
                           const char* /*version*/, const char* /*upload*/, size_t* upload_size,
                           void** /*state*/) {
    auto* self = static_cast<HttpListener*>(self_ptr);
    HttpReply reply;
    const bool head = std::strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    auto it = self->routes_.find(url);
    if (it == self->routes_.end()) {
      reply = {MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", "not found\n"};
    } else if (!head && std::strcmp(method, MHD_HTTP_METHOD_GET) != 0) {
      reply = {MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", "GET or HEAD only\n"};
    } else {
      reply = it->second();
    }
    // A request body is never read: it is dropped, and the reply goes out at once.
    if (upload_size) *upload_size = 0;
    (reply.status == MHD_HTTP_OK ? self->served_ : self->refused_)++;
    MHD_Response* r = MHD_create_response_from_buffer(head ? 0 : reply.body.size(),
                                                      reply.body.data(), MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, reply.content_type.c_str());
    if (reply.status == MHD_HTTP_METHOD_NOT_ALLOWED)
      MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    const MHD_Result queued = MHD_queue_response(c, static_cast<unsigned>(reply.status), r);
    MHD_destroy_response(r);
    return queued;
  }
};

Result<std::unique_ptr<HttpListener>> HttpListener::start(const ListenAddress& where,
                                                          std::map<std::string, HttpRoute> routes) {
  std::unique_ptr<HttpListener> l(new HttpListener());
  l->routes_ = std::move(routes);
  unsigned flags = MHD_USE_EPOLL;  // no MHD_USE_INTERNAL_POLLING_THREAD: external mode
  if (where.addr.ss_family == AF_INET6)
    flags |= where.host.empty() ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
  // Bounded: a few scrapers at a time, each connection's memory capped, idle ones dropped.
  l->daemon_ = MHD_start_daemon(
      flags, where.port, nullptr, nullptr, &Handler::answer, l.get(), MHD_OPTION_SOCK_ADDR,
      reinterpret_cast<const sockaddr*>(&where.addr), MHD_OPTION_CONNECTION_LIMIT, 32u,
      MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      static_cast<size_t>(64 * 1024), MHD_OPTION_END);
  if (!l->daemon_) {
    const int e = errno;
    return fail_errno(e, "cannot listen on {}: {} (is another process using the port?)",
                      where.text(), std::strerror(e));
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(l->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  l->port_ = info ? info->port : where.port;
  return l;
}

HttpListener::~HttpListener() {
  if (daemon_) MHD_stop_daemon(daemon_);
}

int HttpListener::fd() const {
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_EPOLL_FD);
  return info ? info->epoll_fd : -1;
}

void HttpListener::serve() {
  MHD_run(daemon_);
}

std::optional<std::chrono::milliseconds> HttpListener::next_timeout() const {
  MHD_UNSIGNED_LONG_LONG ms = 0;
  if (MHD_get_timeout(daemon_, &ms) != MHD_YES) return std::nullopt;
  return std::chrono::milliseconds(ms);
}

}  // namespace uscope
