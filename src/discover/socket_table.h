#pragma once
// A process's TCP sockets as the kernel lists them in /proc/PID/net/tcp and tcp6 (the network
// namespace of that process), and which socket an fd is: the peer of a connection by its inode.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uscope {

struct TcpSocket {
  uint64_t inode = 0;
  std::string local;   // "127.0.0.1:4433", "[::1]:4433"
  std::string remote;  // "0.0.0.0:0" for a listener
};

// The rows of /proc/net/tcp or tcp6 text (`v6` for the latter). Lines that do not parse are
// skipped: the table is the kernel's, but a row may be cut when the file changes while read.
std::vector<TcpSocket> parse_tcp_table(std::string_view text, bool v6);

// The inode of the socket `fd` of `pid` is (readlink /proc/PID/fd/FD = "socket:[INODE]");
// nullopt when it is not a socket or is gone.
std::optional<uint64_t> socket_inode(pid_t pid, int fd);

// Every TCP socket (IPv4, then IPv6) of `pid`'s network namespace; none when it is gone.
std::vector<TcpSocket> tcp_sockets(pid_t pid);

// The TCP socket with `inode` in `pid`'s network namespace; nullopt when it is not TCP or gone.
std::optional<TcpSocket> tcp_socket(pid_t pid, uint64_t inode);

}  // namespace uscope
