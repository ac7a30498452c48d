#pragma once
// The executable mappings of traced processes as they exit, read by the kernel just before it
// drops them (src/bpf/exit_maps.bpf.c), so that the addresses a short-lived process left in
// events and stacks (%U, -U, profile samples) are named after /proc/PID/maps has emptied. A
// process that lives is read from /proc as before; this is what remains of one that is gone.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "attach/bpf_loader.h"
#include "collect/ring_reader.h"
#include "discover/process.h"
#include "util/result.h"

namespace uscope {

class ExitMaps {
 public:
  // Each complete snapshot, as its process exits.
  using Handler = std::function<void(Process last)>;

  // `pids` empty: every process on the host (profile -a, trace without -p); else only these
  // (and PIDs added later with watch()). In an object of its own (src/bpf/exit_maps.bpf.c).
  static Result<std::unique_ptr<ExitMaps>> start(const std::vector<pid_t>& pids, Handler handler);

  // Or in the object of a program that includes src/bpf/exit_maps.bpf.h (the profiler's), so that
  // one load relocates both against one parse of the kernel's BTF: configure() before its load,
  // attach() after it. The object must outlive the ExitMaps (it may move: its maps stay).
  static Result<void> configure(BpfObject& object, const std::vector<pid_t>& pids);
  static Result<std::unique_ptr<ExitMaps>> attach(const BpfObject& object,
                                                  const std::vector<pid_t>& pids, Handler handler);
  ~ExitMaps();

  Result<void> watch(pid_t pid);
  // Hands every snapshot the kernel has sent so far to the handler. Cheap when there is none:
  // call it before giving up on a process whose maps are gone.
  void catch_up();
  // Snapshots lost: the ring was full (their processes' addresses stay unnamed).
  uint64_t lost() const;

 private:
  ExitMaps(const BpfObject& object, Handler handler)
      : targets_fd_(object.map_fd("exit_targets")),
        lost_fd_(object.map_fd("exit_lost")),
        handler_(std::move(handler)) {}
  void on_record(const void* data, size_t size);

  std::unique_ptr<BpfObject> owned_;  // start()'s object of its own; first made, last gone
  int targets_fd_;                    // the object's maps
  int lost_fd_;
  Handler handler_;
  std::optional<RingReader> ring_;
  bpf_link* link_ = nullptr;
  std::map<pid_t, std::vector<Mapping>> pending_;  // by tgid, until its END record
  uint64_t incomplete_ = 0;  // END records of no usable snapshot (on_record says which)
};

}  // namespace uscope
