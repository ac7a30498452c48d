#pragma once
// Where the agent listens: "127.0.0.1:9464", "[::1]:9464", "localhost:9464" or ":9464" (every
// address). Parsed from the command line and the config file, so errors name the form that works.
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace uscope {

struct ListenAddress {
  std::string host;  // as given; "" for every address
  uint16_t port = 0;
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  // Only this machine can connect (127.0.0.0/8, ::1).
  bool loopback() const;
  // "127.0.0.1:9464", "[::1]:9464", "*:9464".
  std::string text() const;
};

// Resolves numeric addresses and "localhost" only: a listener must not wait on DNS.
Result<ListenAddress> parse_listen_address(std::string_view text);

}  // namespace uscope
