#include "collect/tls_peers.h"

#include "discover/socket_table.h"

namespace uscope {

const std::string& TlsPeers::peer(pid_t pid, int64_t fd) {
  if (fd < 0 || fd > INT32_MAX) return none_;
  auto inode = socket_inode(pid, static_cast<int>(fd));
  if (!inode) return none_;
  auto key = std::make_pair(pid, *inode);
  if (auto it = by_inode_.find(key); it != by_inode_.end()) return it->second;
  auto s = tcp_socket(pid, *inode);
  // A socket that is not TCP (a Unix socket) is remembered as unknown, not looked up again.
  return by_inode_.emplace(key, s ? s->remote : std::string()).first->second;
}

}  // namespace uscope
