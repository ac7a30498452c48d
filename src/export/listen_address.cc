#include "export/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace uscope {
namespace {

constexpr std::string_view kForms = "HOST:PORT, e.g. 127.0.0.1:9464, [::1]:9464 or :9464";

Result<void> fill(ListenAddress& a, std::string_view host) {
  if (host.empty()) {  // every address, IPv4 and IPv6 (the socket is dual-stack)
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_any;
    in6->sin6_port = htons(a.port);
    a.addr_len = sizeof *in6;
    return {};
  }
  const std::string h = host == "localhost" ? "127.0.0.1" : std::string(host);
  auto* in = reinterpret_cast<sockaddr_in*>(&a.addr);
  if (inet_pton(AF_INET, h.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons(a.port);
    a.addr_len = sizeof *in;
    return {};
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
  if (inet_pton(AF_INET6, h.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(a.port);
    a.addr_len = sizeof *in6;
    return {};
  }
  return fail("'{}' is not an IP address (names other than localhost are not resolved); use {}",
              host, kForms);
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    return fail("listen address '{}' has no port; use {}", text, kForms);
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']'))
      return fail("listen address '{}': unclosed '['; use {}", text, kForms);
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return fail("listen address '{}': an IPv6 address goes in brackets, e.g. [::1]:9464", text);
  }
  ListenAddress a;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
    return fail("listen address '{}': '{}' is not a port (0-65535); use {}", text, port, kForms);
  a.port = static_cast<uint16_t>(value);
  a.host = std::string(host);
  if (auto r = fill(a, host); !r) return tl::unexpected(r.error());
  return a;
}

bool ListenAddress::loopback() const {
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
  return addr.ss_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
}

std::string ListenAddress::text() const {
  if (host.empty()) return fmt::format("*:{}", port);
  if (addr.ss_family == AF_INET6) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace uscope
