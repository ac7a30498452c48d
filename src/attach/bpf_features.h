#pragma once
// What this kernel and this process can do, probed at run time (never guessed from a version):
// capabilities, BPF program/map types, helpers, and the uprobe_multi link.
#include <string>
#include <vector>

#include "util/result.h"

namespace uscope {

struct Capabilities {
  bool bpf = false;         // CAP_BPF (or CAP_SYS_ADMIN)
  bool perfmon = false;     // CAP_PERFMON (or CAP_SYS_ADMIN)
  bool sys_ptrace = false;  // CAP_SYS_PTRACE: needed to trace other users' processes
  bool sys_admin = false;
};
Capabilities current_capabilities();

// Fails with a message naming the missing capabilities when uprobes cannot be attached.
// `other_users_pid` adds CAP_SYS_PTRACE to the requirements.
Result<void> require_tracing_capabilities(bool other_users_pid = false);

struct BpfFeatures {
  bool kprobe_prog = false;    // BPF_PROG_TYPE_KPROBE (uprobes use it)
  bool ringbuf = false;        // BPF_MAP_TYPE_RINGBUF
  bool attach_cookie = false;  // bpf_get_attach_cookie() in kprobe programs
  bool uprobe_multi = false;   // BPF_TRACE_UPROBE_MULTI links
  bool loop = false;           // bpf_loop() (Linux 5.17): the trace program's recipe interpreter
  bool btf = false;            // /sys/kernel/btf/vmlinux
};
BpfFeatures probe_bpf_features();
// bpf_loop() in uprobe programs, which `trace` and `latency` need.
bool has_bpf_loop();
// Sleepable uprobe programs (Linux 6.1+) with bpf_copy_from_user(), which can fault in a page the
// process has not touched yet where bpf_probe_read_user() fails. USCOPE_NO_SLEEPABLE=1 in the
// environment says no, to run (and test) the path of kernels without them.
bool has_sleepable_uprobes();

}  // namespace uscope
