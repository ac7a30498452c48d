#pragma once
// The TARGET a user names (a path, a library short name, or nothing for "the main binary of the
// process") resolved to the object files uscope opens and attaches to.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/process.h"
#include "util/result.h"

namespace uscope {

struct ObjectRef {
  std::string display_path;  // what the user sees: the path as the process or the user named it
  std::string open_path;     // what uscope opens and gives the kernel
  bool deleted = false;      // mapped from a file that no longer exists
  // With a process: a file it does not map (yet). Uprobes belong to the file, so the kernel
  // installs them when the process maps it later (dlopen), semaphores included.
  bool not_mapped = false;
};

// Without a process: `target` is a path (must exist) or a short name looked up in ld.so.cache,
// then as an executable in PATH (bcc's order: `r:bash:readline`).
// With one: a path or a short name among the process's mapped objects ("" = its main binary),
// a library first, then an executable named so (in PATH, or by file name); failing those, a file
// the process may map later (dlopen): a path that exists, or a library in ld.so.cache, marked
// `not_mapped`. A path that names no file is an error naming what is mapped.
Result<ObjectRef> resolve_object(std::string_view target, const Process* process);

// The first executable regular file `name` in the ':'-separated directories of `path_env`
// (an empty entry is the current directory, as for execvp); nullopt if none.
std::optional<std::string> find_in_path(std::string_view name, std::string_view path_env);

// The file-backed objects of a process that are worth looking into (skips /dev, /memfd, ...).
std::vector<ObjectRef> process_objects(const Process& process);

}  // namespace uscope
