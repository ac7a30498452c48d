#pragma once
// Whose continuous profile it is (export/profile_export.h's ProfileSource), from what the agent
// knows of the process: service_name is the selector's name for it, else the executable's file
// name; labels process (the kernel's name), executable, pid, container_id (only in a container)
// and host.
#include <sys/types.h>

#include <functional>
#include <string>

#include "agent/process_match.h"
#include "export/profile_export.h"

namespace uscope {

// `service`: the selector's service name, "" for the executable's name.
ProfileSource profile_source(const ProcessFacts& facts, const std::string& service,
                             const std::string& host);

// The source of each sampled process, its facts read from /proc when asked (a process gone since
// it was sampled keeps the name it was sampled under); `service_of` gives a PID's configured
// service name ("" for none; may be empty).
ProfileSourceOf profile_sources(std::string host,
                                std::function<std::string(pid_t pid)> service_of = {});

// This machine's name (gethostname), the host label.
std::string host_name();

}  // namespace uscope
