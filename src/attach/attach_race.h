#pragma once
// A running target can exit, exec another program or unmap a library between the moment uscope
// reads its maps and the moment the kernel resolves the paths uscope attaches to. The kernel then
// only says ENOENT about a /proc/PID/map_files link the user never typed; this names what happened.
#include <sys/types.h>

#include <optional>
#include <span>
#include <string>

#include "attach/uprobe_links.h"
#include "discover/process.h"
#include "util/result.h"

namespace uscope {

// What happened to process `pid` (which ran the executable `planned_exe` when uscope planned;
// unknown = do not check for an exec) that explains a failed attach to `sites`, as one line
// ("process 4242 exec'd /usr/bin/python3.11 while uscope was attaching"), or nullopt when the
// process is as it was planned and the failure is something else.
std::optional<std::string> explain_attach_race(pid_t pid, const ExeIdentity& planned_exe,
                                               std::span<const AttachSite> sites);

// `failure` itself, or the explanation in its place (keeping its errno).
Error explain_attach_failure(const Error& failure, pid_t pid, const ExeIdentity& planned_exe,
                             std::span<const AttachSite> sites);

}  // namespace uscope
