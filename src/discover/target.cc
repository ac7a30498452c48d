#include "discover/target.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

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
      auto names = mapped_names(*process);
      auto close = closest_names(target, names, 3);
      return fail("process {} does not map {}{}{}", process->pid(), target,
                  close.empty() ? "" : "; closest mapped: ", join(close));
    }
    auto lib = resolve_library(target, *process);
    if (!lib) return tl::unexpected(lib.error());
    return ref_of(**lib);
  }
  if (target.empty()) return fail("no target: name a binary or library, or give -p PID / -c CMD");
  std::string path(target);
  if (!looks_like_path(target)) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {  // not a file in the current directory: a library name
      auto cache = read_ld_so_cache();
      if (!cache) return tl::unexpected(cache.error());
      auto lib = resolve_library(target, *cache);
      if (!lib) return tl::unexpected(lib.error());
      return ObjectRef{*lib, *lib, false};
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
