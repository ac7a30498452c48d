#include "agent/process_match.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "discover/socket_table.h"
#include "util/names.h"

namespace uscope {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool is_hex_id(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(),
                                       [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

std::vector<int> listening_ports(pid_t pid) {
  std::set<uint64_t> inodes;
  const std::string dir = fmt::format("/proc/{}/fd", pid);
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (auto inode = socket_inode(pid, std::atoi(e->d_name))) inodes.insert(*inode);
    }
    closedir(d);
  }
  std::set<int> ports;
  for (const TcpSocket& s : tcp_sockets(pid)) {
    // A listener has no peer: remote 0.0.0.0:0 or [::]:0.
    if (!inodes.contains(s.inode) || !s.remote.ends_with(":0")) continue;
    ports.insert(std::atoi(s.local.substr(s.local.rfind(':') + 1).c_str()));
  }
  return {ports.begin(), ports.end()};
}

}  // namespace

std::string container_id_of(std::string_view path) {
  // Look at each path component, deepest first; strip the runtimes' prefixes and .scope.
  size_t end = path.size();
  while (end > 0) {
    const size_t start = path.rfind('/', end - 1);
    std::string_view part = path.substr(start == std::string_view::npos ? 0 : start + 1,
                                        end - (start == std::string_view::npos ? 0 : start + 1));
    if (part.ends_with(".scope")) part.remove_suffix(6);
    for (std::string_view prefix : {"docker-", "cri-containerd-", "crio-", "libpod-"})
      if (part.starts_with(prefix)) part.remove_prefix(prefix.size());
    if (is_hex_id(part)) return std::string(part);
    if (start == std::string_view::npos) break;
    end = start;
  }
  return "";
}

Result<ProcessFacts> process_facts(pid_t pid, bool with_ports) {
  ProcessFacts f;
  f.pid = pid;
  char buf[4096];
  const std::string exe_link = fmt::format("/proc/{}/exe", pid);
  const ssize_t n = readlink(exe_link.c_str(), buf, sizeof buf - 1);
  if (n < 0) return fail_errno(errno, "process {} is gone or has no executable", pid);
  f.exe.assign(buf, static_cast<size_t>(n));
  if (f.exe.ends_with(" (deleted)")) f.exe.resize(f.exe.size() - 10);
  f.comm = read_text(fmt::format("/proc/{}/comm", pid));
  if (!f.comm.empty() && f.comm.back() == '\n') f.comm.pop_back();
  // cgroup v2: the line "0::/path".
  std::istringstream cg(read_text(fmt::format("/proc/{}/cgroup", pid)));
  for (std::string line; std::getline(cg, line);)
    if (line.starts_with("0::")) f.cgroup = line.substr(3);
  f.container_id = container_id_of(f.cgroup);
  if (with_ports) f.listen_ports = listening_ports(pid);
  return f;
}

bool selects(const ProcessSelector& s, const ProcessFacts& f,
             const std::function<bool()>& go_http_server) {
  if (!s.exe.empty()) {
    // A glob or path over the whole path; a bare name matches the executable's name.
    const bool path_like = s.exe.find('/') != std::string::npos;
    if (!glob_match(s.exe, path_like ? std::string_view(f.exe) : file_name(f.exe))) return false;
  }
  if (!s.cgroup.empty() && !(f.cgroup == s.cgroup || f.cgroup.starts_with(s.cgroup + "/")))
    return false;
  if (!s.container.empty() && !f.container_id.starts_with(s.container)) return false;
  if (s.port &&
      std::find(f.listen_ports.begin(), f.listen_ports.end(), s.port) == f.listen_ports.end())
    return false;
  return !s.go_http || go_http_server();
}

std::string service_name(const ProcessSelector& s, const ProcessFacts& f) {
  return s.service.empty() ? std::string(file_name(f.exe)) : s.service;
}

}  // namespace uscope
