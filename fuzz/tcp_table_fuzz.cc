// /proc/PID/net/tcp and tcp6 text (uscope tls names a connection's peer from it): any bytes,
// read as either table, must parse into well-formed rows or none.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "discover/socket_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool v6 = data[0] & 1;
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  volatile size_t sink = 0;
  for (const auto& s : uscope::parse_tcp_table(text, v6)) {
    sink = sink + s.inode + s.local.size() + s.remote.size();
    // "host:port", "[v6]:port": the port follows the last ':'.
    if (s.local.rfind(':') == std::string::npos || s.remote.rfind(':') == std::string::npos)
      __builtin_trap();
  }
  return 0;
}
