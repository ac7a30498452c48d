#include "attach/bpf_features.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "attach/uprobe_multi.h"
#include "util/names.h"

namespace uscope {

namespace {

constexpr int kCapSysPtrace = 19;
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

uint64_t effective_capability_mask() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("CapEff:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  return 0;
}

// Loads a two-instruction program of type KPROBE with the uprobe_multi attach type, then asks the
// kernel for a link on "/": a kernel with the link type gets as far as checking the path (EBADF),
// one without it rejects the load or the attach type (EINVAL).
bool probe_uprobe_multi() {
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts);
  opts.expected_attach_type = static_cast<bpf_attach_type>(kBpfTraceUprobeMulti);
  int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns, 2, &opts);
  if (prog < 0) return false;
  UniqueFd prog_fd(prog);
  const std::string path = "/";
  uint64_t offset = 0;
  UprobeMultiRequest req;
  req.path = &path;
  req.offsets = std::span<const uint64_t>(&offset, 1);
  auto link = create_uprobe_multi_link(prog_fd.get(), req);
  return !link && link.error().errnum == EBADF;
}

}  // namespace

Capabilities current_capabilities() {
  uint64_t m = effective_capability_mask();
  Capabilities c;
  c.sys_admin = m & (1ull << kCapSysAdmin);
  c.bpf = c.sys_admin || (m & (1ull << kCapBpf));
  c.perfmon = c.sys_admin || (m & (1ull << kCapPerfmon));
  c.sys_ptrace = m & (1ull << kCapSysPtrace);
  return c;
}

Result<void> require_tracing_capabilities(bool other_users_pid) {
  Capabilities c = current_capabilities();
  std::vector<std::string> missing;
  if (!c.bpf) missing.push_back("CAP_BPF");
  if (!c.perfmon) missing.push_back("CAP_PERFMON");
  if (other_users_pid && !c.sys_ptrace) missing.push_back("CAP_SYS_PTRACE");
  if (missing.empty()) return {};
  return fail(
      "missing capabilities {}: run as root, or grant them with "
      "`setcap cap_bpf,cap_perfmon{}+ep build/uscope`",
      join(missing), other_users_pid ? ",cap_sys_ptrace" : "");
}

bool has_bpf_loop() {
  return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, nullptr) == 1;
}

bool has_sleepable_uprobes() {
  if (const char* no = std::getenv("USCOPE_NO_SLEEPABLE");
      no != nullptr && std::strcmp(no, "1") == 0)
    return false;
  // bpf_copy_from_user(fp - 8, 1, NULL) in a sleepable KPROBE program: a kernel that cannot run
  // one at a uprobe refuses the flag or the helper at load.
  const bpf_insn insns[] = {
      {BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_10, 0, 0},
      {BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_1, 0, 0, -8},
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_2, 0, 0, 1},
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 0},
      {BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_copy_from_user},
      {BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0},
      {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts);
  opts.prog_flags = BPF_F_SLEEPABLE;
  int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, nullptr, "GPL", insns,
                           sizeof(insns) / sizeof(insns[0]), &opts);
  if (prog < 0) return false;
  close(prog);
  return true;
}

BpfFeatures probe_bpf_features() {
  BpfFeatures f;
  f.kprobe_prog = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, nullptr) == 1;
  f.ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr) == 1;
  f.attach_cookie =
      libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, nullptr) == 1;
  f.uprobe_multi = f.kprobe_prog && probe_uprobe_multi();
  f.loop = has_bpf_loop();
  f.btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
  return f;
}

}  // namespace uscope
