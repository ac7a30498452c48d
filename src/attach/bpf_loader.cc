#include "attach/bpf_loader.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <utility>

namespace uscope {

BpfObject::BpfObject(BpfObject&& o) noexcept
    : skel_(std::move(o.skel_)),
      obj_(std::exchange(o.obj_, nullptr)),
      what_(std::move(o.what_)),
      load_ms_(o.load_ms_) {}

BpfObject& BpfObject::operator=(BpfObject&& o) noexcept {
  if (this != &o) {
    skel_ = std::move(o.skel_);
    obj_ = std::exchange(o.obj_, nullptr);
    what_ = std::move(o.what_);
    load_ms_ = o.load_ms_;
  }
  return *this;
}

BpfObject::~BpfObject() = default;

Result<void> BpfObject::set_rodata(std::string_view name, const void* value, size_t size) {
  const btf* b = bpf_object__btf(obj_);
  bpf_map* rodata = bpf_object__find_map_by_name(obj_, ".rodata");
  if (b == nullptr || rodata == nullptr)
    return fail("{} has no read-only data to set {} in", what_, name);
  int sec_id = btf__find_by_name_kind(b, ".rodata", BTF_KIND_DATASEC);
  if (sec_id < 0) return fail("{}: no .rodata section in its BTF", what_);
  const btf_type* sec = btf__type_by_id(b, static_cast<__u32>(sec_id));
  size_t data_size = 0;
  // libbpf 1.1 returns the map's mmap()ed image as const, but it is the memory the skeleton
  // writes its rodata through before load (it is frozen only by the load).
  auto* data = static_cast<uint8_t*>(const_cast<void*>(bpf_map__initial_value(rodata, &data_size)));
  if (data == nullptr) return fail("{}: its read-only data is not writable now", what_);
  const btf_var_secinfo* vars = btf_var_secinfos(sec);
  for (unsigned i = 0; i < btf_vlen(sec); ++i) {
    const btf_type* var = btf__type_by_id(b, vars[i].type);
    if (var == nullptr || name != btf__name_by_offset(b, var->name_off)) continue;
    if (vars[i].size != size || vars[i].offset + size > data_size)
      return fail("{}: {} is {} bytes, not {}", what_, name, vars[i].size, size);
    std::memcpy(data + vars[i].offset, value, size);
    return {};
  }
  return fail("{} has no read-only variable {}", what_, name);
}

Result<void> BpfObject::set_target(const TargetFilter& filter) {
  uint32_t tgid = filter.tgid > 0 ? static_cast<uint32_t>(filter.tgid) : 0;
  // uscope never acts on itself unless asked to by PID (`uscope check` does).
  uint32_t self = filter.tgid == getpid() ? 0 : static_cast<uint32_t>(getpid());
  uint32_t after_exec = filter.only_after_exec ? 1 : 0;
  if (auto r = set_rodata("target_tgid", tgid); !r) return r;
  if (auto r = set_rodata("self_tgid", self); !r) return r;
  return set_rodata("only_after_exec", after_exec);
}

Result<void> BpfObject::set_max_entries(std::string_view map_name, uint32_t entries) {
  bpf_map* m = map(map_name);
  if (m == nullptr) return fail("{} has no map {}", what_, map_name);
  if (int err = bpf_map__set_max_entries(m, entries))
    return fail_errno(-err, "{}: cannot size map {} to {}: {}", what_, map_name, entries,
                      std::strerror(-err));
  return {};
}

Result<void> BpfObject::set_autoload(std::string_view name, bool load) {
  bpf_program* p = program(name);
  if (p == nullptr) return fail("{} has no program {}", what_, name);
  if (int err = bpf_program__set_autoload(p, load))
    return fail_errno(-err, "{}: {}", what_, std::strerror(-err));
  return {};
}

Result<void> BpfObject::load() {
  auto start = std::chrono::steady_clock::now();
  if (int err = bpf_object__load(obj_))
    return fail_errno(-err, "the kernel refused {}: {}", what_, std::strerror(-err));
  load_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return {};
}

std::string BpfObject::load_summary() const {
  std::string programs;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj_) {
    int fd = bpf_program__fd(prog);
    if (fd < 0) continue;
    bpf_prog_info info{};
    __u32 len = sizeof info;
    uint32_t verified = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 ? info.verified_insns : 0;
    programs += fmt::format("{}{}: {} instructions, {} verified", programs.empty() ? "" : "; ",
                            bpf_program__name(prog), bpf_program__insn_cnt(prog), verified);
  }
  return fmt::format("{}; loaded in {:.1f} ms", programs, load_ms_);
}

bpf_map* BpfObject::map(std::string_view name) const {
  return bpf_object__find_map_by_name(obj_, std::string(name).c_str());
}

int BpfObject::map_fd(std::string_view name) const {
  bpf_map* m = map(name);
  return m == nullptr ? -1 : bpf_map__fd(m);
}

bpf_program* BpfObject::program(std::string_view name) const {
  return bpf_object__find_program_by_name(obj_, std::string(name).c_str());
}

std::vector<int> BpfObject::program_fds() const {
  std::vector<int> fds;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj_) {
    if (bpf_program__fd(prog) >= 0) fds.push_back(bpf_program__fd(prog));
  }
  return fds;
}

UprobeProgram::UprobeProgram(bpf_program* single, bpf_program* multi, bool want_multi,
                             const TargetFilter& target)
    : single_(single),
      multi_prog_(multi),
      multi_(UprobeLinks::prepare_programs(single, multi, want_multi)),
      links_(target.tgid > 0 ? target.tgid : -1) {}

Result<void> UprobeProgram::attach(const std::vector<AttachSite>& sites, bool skip_refused) {
  // The last line of defence: whatever planned it, no uretprobe goes into Go code, whose runtime
  // moves goroutine stacks under the return address a uretprobe rewrites, and crashes.
  for (const auto& s : sites)
    if (s.retprobe && s.go_code)
      return fail(
          "refusing a return probe (uretprobe) at {}+{:#x}: it is Go code, and the Go runtime "
          "moves goroutine stacks under the return address a uretprobe rewrites, which crashes "
          "the program; Go return probes are uprobes on the function's RET instructions",
          shown_path(s), s.offset);
  links_.set_skip_refused(skip_refused);
  return multi_ ? links_.attach_multi(multi_prog_, sites) : links_.attach_each(single_, sites);
}

}  // namespace uscope
