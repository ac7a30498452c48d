#pragma once
// Which processes the agent's selectors pick: what each selector looks at (executable, cgroup,
// container, listening ports), read from /proc once per process, and the match itself.
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/agent_config.h"
#include "util/result.h"

namespace uscope {

struct ProcessFacts {
  pid_t pid = 0;
  std::string exe;                // /proc/PID/exe's target, " (deleted)" kept off
  std::string comm;               // the kernel's name for it
  std::string cgroup;             // the cgroup v2 path ("/system.slice/api.service")
  std::string container_id;       // from the cgroup path; "" outside containers
  std::vector<int> listen_ports;  // TCP ports it listens on (only when asked for)
};

// `with_ports`: also read its sockets (costs a walk of /proc/PID/fd).
Result<ProcessFacts> process_facts(pid_t pid, bool with_ports);

// The container id in a cgroup path, as Docker, containerd (CRI) and CRI-O name their cgroups
// (docker-<id>.scope, /docker/<id>, cri-containerd-<id>.scope, crio-<id>.scope, and cgroupfs'
// kubepods/.../<id>): 64 hex digits; "" when there is none.
std::string container_id_of(std::string_view cgroup_path);

// Whether `s` picks the process: every field the selector sets must hold. `go_http_server` says
// whether the process serves HTTP with Go's net/http (it opens the binary: asked only when
// the selector's other fields hold).
bool selects(const ProcessSelector& s, const ProcessFacts& f,
             const std::function<bool()>& go_http_server);

// The service name a selected process is known by: the selector's, else the executable's name.
std::string service_name(const ProcessSelector& s, const ProcessFacts& f);

}  // namespace uscope
