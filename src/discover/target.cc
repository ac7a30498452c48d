#include "discover/target.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "discover/library_names.h"
#include "util/names.h"

namespace uscope {

namespace {

ObjectRef ref_of(const MappedObject& o) {
  return {o.path, o.open_path, o.deleted};
}

bool looks_like_path(std::string_view t) {
  return t.find('/') != std::string_view::npos || t.starts_with(".");
}

std::string path_env() {
  const char* p = std::getenv("PATH");
  // execvp's default when PATH is unset.
  return p ? p : "/bin:/usr/bin";
}

// The mapped object that is `file` (same inode), if the process maps it.
const MappedObject* mapped_file(const Process& process, const std::string& file) {
  struct stat st {};
  if (stat(file.c_str(), &st) != 0) return nullptr;
  for (const auto& o : process.objects())
    if (o.inode == st.st_ino && makedev(o.dev_major, o.dev_minor) == st.st_dev) return &o;
  return nullptr;
}

std::string root_of(const Process& process) {
  return fmt::format("/proc/{}/root", process.pid());
}

// A regular file the process does not map (yet) but may: `path` as the process sees it (through
// its root: a container's files), else as uscope does; marked not_mapped.
std::optional<ObjectRef> file_in_root(const Process& process, std::string_view path) {
  struct stat st {};
  if (path.starts_with("/")) {
    std::string rooted = root_of(process) + std::string(path);
    if (stat(rooted.c_str(), &st) == 0 && S_ISREG(st.st_mode))
      return ObjectRef{std::string(path), rooted, false, true};
  }
  if (stat(std::string(path).c_str(), &st) == 0 && S_ISREG(st.st_mode))
    return ObjectRef{std::string(path), std::string(path), false, true};
  return std::nullopt;
}

std::vector<std::string> mapped_names(const Process& process) {
  std::vector<std::string> names;
  for (const auto& o : process.objects()) names.push_back(o.path);
  return names;
}

}  // namespace

Result<ObjectRef> resolve_object(std::string_view target, const Process* process) {
  if (process) {
    if (target.empty()) {
      const MappedObject* main = process->main_object();
      if (!main) return fail("process {} maps no executable file", process->pid());
      return ref_of(*main);
    }
    if (looks_like_path(target)) {
      // Compare by inode so that "./server" and a symlinked path both find the mapping.
      struct stat st {};
      bool have_stat = stat(std::string(target).c_str(), &st) == 0;
      for (const auto& o : process->objects()) {
        if (o.path == target ||
            (have_stat && o.inode == st.st_ino && makedev(o.dev_major, o.dev_minor) == st.st_dev))
          return ref_of(o);
      }
      if (auto later = file_in_root(*process, target)) return *later;
      auto names = mapped_names(*process);
      auto close = closest_names(target, names, 3);
      return fail("process {} does not map {}, and {}{}{}", process->pid(), target,
                  have_stat ? "it is not a regular file" : "no such file exists",
                  close.empty() ? "" : "; closest mapped: ", join(close));
    }
    auto lib = resolve_library(target, *process);
    if (lib) return ref_of(**lib);
    // Not a library: the program itself, found as the shell would ("bash"), or by file name.
    if (auto exe = find_in_path(target, path_env()))
      if (const MappedObject* o = mapped_file(*process, *exe)) return ref_of(*o);
    for (const auto& o : process->objects())
      if (std::string_view(o.path).substr(o.path.rfind('/') + 1) == target) return ref_of(o);
    // A library it may dlopen() later, as the dynamic loader would find it.
    auto cache = read_ld_so_cache(root_of(*process) + "/etc/ld.so.cache");
    if (!cache) cache = read_ld_so_cache();
    if (cache)
      if (auto path = resolve_library(target, *cache))
        if (auto later = file_in_root(*process, *path)) return *later;
    return fail(
        "{}; nor does it map an executable '{}' (looked in PATH and by file name), nor is there "
        "a library '{}' in ld.so.cache it could load later",
        lib.error().message, target, target);
  }
  if (target.empty()) return fail("no target: name a binary or library, or give -p PID / -c CMD");
  std::string path(target);
  if (!looks_like_path(target)) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {  // not a file in the current directory: a library name
      auto cache = read_ld_so_cache();
      if (!cache) return tl::unexpected(cache.error());
      auto lib = resolve_library(target, *cache);
      if (lib) return ObjectRef{*lib, *lib, false};
      std::string dirs = path_env();
      if (auto exe = find_in_path(target, dirs)) return ObjectRef{*exe, *exe, false};
      return fail("{}; no executable '{}' in PATH ({}) either", lib.error().message, target, dirs);
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    int e = errno;
    return fail_errno(e, "{}: {}", path, std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) return fail("{}: is a directory, not an ELF file", path);
  return ObjectRef{path, path, false};
}

std::optional<std::string> find_in_path(std::string_view name, std::string_view path_env) {
  if (name.empty() || name.find('/') != std::string_view::npos) return std::nullopt;
  for (size_t p = 0; p <= path_env.size();) {
    size_t colon = std::min(path_env.find(':', p), path_env.size());
    std::string_view dir = path_env.substr(p, colon - p);
    std::string file = dir.empty() ? std::string(name) : fmt::format("{}/{}", dir, name);
    struct stat st {};
    if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(file.c_str(), X_OK) == 0)
      return dir.empty() ? "./" + file : file;
    p = colon + 1;
  }
  return std::nullopt;
}

std::vector<ObjectRef> process_objects(const Process& process) {
  std::vector<ObjectRef> out;
  for (const auto& o : process.objects()) {
    if (o.path.starts_with("/dev/") || o.path.starts_with("/memfd:") || o.path.starts_with("/SYSV"))
      continue;
    out.push_back(ref_of(o));
  }
  return out;
}

}  // namespace uscope
