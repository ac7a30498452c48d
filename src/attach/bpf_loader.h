#pragma once
// The one BPF loader every command uses (trace, count, latency, profile): a bpftool skeleton's
// object opened, its maps sized from what the session uses, its read-only data set, loaded with an
// error a user can act on, its programs listed for run-time stats, and destroyed. Links are owned
// by UprobeLinks / PerfEventLinks and must be destroyed first (declare them after the BpfObject).
#include <bpf/libbpf.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "attach/uprobe_links.h"
#include "util/result.h"

namespace uscope {

// Which processes a program acts on. Every uscope BPF program declares the read-only variables
// target_tgid, self_tgid and only_after_exec (src/bpf/target_filter.h).
struct TargetFilter {
  pid_t tgid = 0;                // 0: every process
  bool only_after_exec = false;  // `tgid` is a command uscope forked: nothing before its exec
};

class BpfObject {
 public:
  // Opens a skeleton: `open_fn` and `destroy_fn` are its T__open and T__destroy; `what` names the
  // program in errors ("the tracing program").
  template <class Skel>
  static Result<BpfObject> open(Skel* (*open_fn)(), void (*destroy_fn)(Skel*), std::string what) {
    Skel* s = open_fn();
    if (s == nullptr) return fail_errno(errno, "cannot open {}: {}", what, std::strerror(errno));
    return BpfObject(s, s->obj, reinterpret_cast<void (*)(void*)>(destroy_fn), std::move(what));
  }
  BpfObject(BpfObject&&) noexcept;
  BpfObject& operator=(BpfObject&&) noexcept;
  ~BpfObject();

  // The skeleton, for its typed progs and maps.
  template <class Skel>
  Skel* skeleton() const {
    return static_cast<Skel*>(skel_.get());
  }
  bpf_object* object() const { return obj_; }

  // Before load(): a read-only global by name (found through the object's BTF), its size checked.
  Result<void> set_rodata(std::string_view name, const void* value, size_t size);
  template <class T>
  Result<void> set_rodata(std::string_view name, T value) {
    return set_rodata(name, &value, sizeof value);
  }
  // target_tgid, self_tgid (uscope never acts on itself unless it is the target) and
  // only_after_exec.
  Result<void> set_target(const TargetFilter& filter);
  Result<void> set_max_entries(std::string_view map, uint32_t entries);
  // Leaves a program out of the load (one of two variants; see UprobeLinks::prepare_programs).
  Result<void> set_autoload(std::string_view program, bool load);

  // Loads and verifies every program; the error says which object the kernel refused and why.
  Result<void> load();

  // After load().
  bpf_map* map(std::string_view name) const;          // nullptr when there is none
  int map_fd(std::string_view name) const;            // -1 when there is none
  bpf_program* program(std::string_view name) const;  // nullptr when there is none
  // The loaded programs, for their run time in the kernel's BPF stats (collect/bpf_run_stats.h).
  std::vector<int> program_fds() const;
  // For -v, after load(): each loaded program's instructions and those the verifier walked, and
  // how long BPF_OBJ_LOAD took (maps created, programs verified), e.g.
  // "trace_multi: 450 instructions, 1,021 verified; loaded in 6.2 ms".
  std::string load_summary() const;

 private:
  struct Destroy {
    void (*fn)(void*) = nullptr;
    void operator()(void* s) const {
      if (fn != nullptr && s != nullptr) fn(s);
    }
  };
  BpfObject(void* skel, bpf_object* obj, void (*destroy)(void*), std::string what)
      : skel_(skel, Destroy{destroy}), obj_(obj), what_(std::move(what)) {}

  std::unique_ptr<void, Destroy> skel_;
  bpf_object* obj_ = nullptr;
  std::string what_;
  double load_ms_ = 0;
};

// One uprobe program in its two copies (trace_single/trace_multi, count_hit/count_hit_multi): which
// one loads is chosen before BpfObject::load(), and every site attaches through it after. Owns the
// links: declare it after the BpfObject whose program it attaches, so that they go first.
class UprobeProgram {
 public:
  // Before load(): `multi` (uprobe_multi links) when `want_multi` and the kernel has them, else
  // `single` (one perf-event link per site); the other is left out of the load.
  UprobeProgram(bpf_program* single, bpf_program* multi, bool want_multi,
                const TargetFilter& target);

  // After load(). With `skip_refused`, sites the kernel cannot probe are left out and listed in
  // links().refused().
  Result<void> attach(const std::vector<AttachSite>& sites, bool skip_refused);
  bool multi() const { return multi_; }
  UprobeLinks& links() { return links_; }
  const UprobeLinks& links() const { return links_; }

 private:
  bpf_program* single_;
  bpf_program* multi_prog_;
  bool multi_;
  UprobeLinks links_;
};

}  // namespace uscope
