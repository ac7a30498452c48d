#include "discover/socket_table.h"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace uscope {

namespace {

bool hex_u32(std::string_view s, uint32_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

// "0100007F:115C" (IPv4) or 32 hex digits ":" port (IPv6): the address as the kernel prints it,
// each 32-bit word in host byte order.
std::optional<std::string> endpoint(std::string_view s, bool v6) {
  size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view addr = s.substr(0, colon);
  uint32_t port = 0;
  if (!hex_u32(s.substr(colon + 1), port) || port > 0xffff) return std::nullopt;
  const size_t words = v6 ? 4 : 1;
  if (addr.size() != words * 8) return std::nullopt;
  uint32_t w[4] = {};
  for (size_t i = 0; i < words; ++i)
    if (!hex_u32(addr.substr(i * 8, 8), w[i])) return std::nullopt;
  char text[INET6_ADDRSTRLEN] = {};
  if (!inet_ntop(v6 ? AF_INET6 : AF_INET, w, text, sizeof(text))) return std::nullopt;
  // An IPv4 peer of an IPv6 socket (::ffff:127.0.0.1) is shown as IPv4.
  std::string_view t = text;
  if (v6 && t.starts_with("::ffff:") && t.find('.') != std::string_view::npos)
    return fmt::format("{}:{}", t.substr(7), port);
  return v6 ? fmt::format("[{}]:{}", t, port) : fmt::format("{}:{}", t, port);
}

}  // namespace

std::vector<TcpSocket> parse_tcp_table(std::string_view text, bool v6) {
  std::vector<TcpSocket> out;
  size_t pos = text.find('\n');  // the header line
  while (pos != std::string_view::npos && pos + 1 < text.size()) {
    size_t end = text.find('\n', pos + 1);
    std::string line(text.substr(pos + 1, end == std::string_view::npos ? end : end - pos - 1));
    pos = end;
    // sl local rem st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
    std::istringstream in(line);
    std::string sl, local, remote, st, queues, timer, retr, uid, timeout, inode;
    if (!(in >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> inode))
      continue;
    TcpSocket s;
    auto [p, ec] = std::from_chars(inode.data(), inode.data() + inode.size(), s.inode);
    if (ec != std::errc() || p != inode.data() + inode.size()) continue;
    auto l = endpoint(local, v6), r = endpoint(remote, v6);
    if (!l || !r) continue;
    s.local = std::move(*l);
    s.remote = std::move(*r);
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<uint64_t> socket_inode(pid_t pid, int fd) {
  char target[64] = {};
  std::string link = fmt::format("/proc/{}/fd/{}", pid, fd);
  ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
  if (n <= 0) return std::nullopt;
  std::string_view t(target, static_cast<size_t>(n));
  if (!t.starts_with("socket:[") || !t.ends_with("]")) return std::nullopt;
  t = t.substr(8, t.size() - 9);
  uint64_t inode = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), inode);
  if (ec != std::errc() || p != t.data() + t.size()) return std::nullopt;
  return inode;
}

std::vector<TcpSocket> tcp_sockets(pid_t pid) {
  std::vector<TcpSocket> all;
  for (bool v6 : {false, true}) {
    std::ifstream f(fmt::format("/proc/{}/net/{}", pid, v6 ? "tcp6" : "tcp"));
    if (!f) continue;
    std::stringstream text;
    text << f.rdbuf();
    for (auto& s : parse_tcp_table(text.str(), v6)) all.push_back(std::move(s));
  }
  return all;
}

std::optional<TcpSocket> tcp_socket(pid_t pid, uint64_t inode) {
  for (auto& s : tcp_sockets(pid))
    if (s.inode == inode) return std::move(s);
  return std::nullopt;
}

}  // namespace uscope
