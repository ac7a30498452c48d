#pragma once
// The peer address of a TLS call's socket, from user space: /proc/PID/fd/FD names the socket's
// inode, /proc/PID/net/tcp{,6} its remote address. Looked up once per socket (an fd number is
// reused by later connections, its inode is not); a connection gone by the time its event is read
// has no peer ("unknown", never a guess).
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace uscope {

class TlsPeers {
 public:
  // "" when not known.
  const std::string& peer(pid_t pid, int64_t fd);

 private:
  std::map<std::pair<pid_t, uint64_t>, std::string> by_inode_;
  std::string none_;
};

}  // namespace uscope
