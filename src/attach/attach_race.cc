#include "attach/attach_race.h"

#include <fmt/core.h>
#include <unistd.h>

#include <climits>
#include <set>

namespace uscope {

namespace {

std::string exe_path(pid_t pid) {
  char buf[PATH_MAX];
  ssize_t n = readlink(fmt::format("/proc/{}/exe", pid).c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("another program");
}

}  // namespace

std::optional<std::string> explain_attach_race(pid_t pid, const ExeIdentity& planned_exe,
                                               std::span<const AttachSite> sites) {
  if (pid <= 0) return std::nullopt;
  if (process_exited(pid)) return fmt::format("process {} exited while uscope was attaching", pid);
  if (planned_exe.known()) {
    ExeIdentity now = exe_identity(pid);
    if (now.known() && now != planned_exe)
      return fmt::format("process {} exec'd {} while uscope was attaching", pid, exe_path(pid));
  }
  // Sites in files the process maps are attached through its /proc entry: such a file the
  // process no longer maps was unmapped (dlclose, munmap) after uscope read the maps.
  const std::string proc_dir = fmt::format("/proc/{}/", pid);
  std::set<std::string> checked;
  std::optional<Process> now;
  for (const auto& s : sites) {
    if (!s.path.starts_with(proc_dir) || !checked.insert(s.path).second) continue;
    if (access(s.path.c_str(), F_OK) == 0) continue;
    if (!now) {
      auto p = Process::open(pid);
      if (!p) return fmt::format("process {} exited while uscope was attaching", pid);
      now = std::move(*p);
    }
    bool mapped = false;
    for (const auto& o : now->objects()) mapped |= o.path == shown_path(s);
    if (!mapped)
      return fmt::format("process {} unmapped {} while uscope was attaching", pid, shown_path(s));
  }
  return std::nullopt;
}

Error explain_attach_failure(const Error& failure, pid_t pid, const ExeIdentity& planned_exe,
                             std::span<const AttachSite> sites) {
  auto why = explain_attach_race(pid, planned_exe, sites);
  return why ? Error{*why, failure.errnum} : failure;
}

}  // namespace uscope
