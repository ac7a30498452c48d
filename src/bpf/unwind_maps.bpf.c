// SPDX-License-Identifier: GPL-2.0
// The owner of the unwinder's shared maps (unwind_maps.bpf.h), with the two programs that keep
// them true to the processes: an exec makes a process's tables stale until user space reloads
// them, and an exit drops them. Both are BTF tracepoints (no tracefs, no kprobes needed).
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "unwind_maps.bpf.h"

static __always_inline void tell_user_space(__u32 tgid, __u32 kind) {
  struct unwind_request* r = bpf_ringbuf_reserve(&unwind_requests, sizeof(*r), 0);
  if (!r) {
    unwind_count(UNWIND_STAT_REQUESTS_LOST);
    return;
  }
  r->tgid = tgid;
  r->kind = kind;
  bpf_ringbuf_submit(r, 0);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(unwind_on_exec, struct task_struct* p, pid_t old_pid, struct linux_binprm* bprm) {
  __u32 tgid = p->tgid;
  struct unwind_proc* proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
  if (!proc) return 0; /* not one whose tables are loaded */
  proc->state = UNWIND_PROC_STALE;
  unwind_changed();
  /* Lost, the walker asks again when it next meets the stale process. */
  proc->requested_ns = bpf_ktime_get_ns();
  tell_user_space(tgid, UNWIND_REQUEST_EXEC);
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(unwind_on_exit, struct task_struct* p) {
  if (p->pid != p->tgid) return 0; /* a thread; the process lives on */
  __u32 tgid = p->tgid;
  if (bpf_map_delete_elem(&unwind_procs, &tgid)) return 0; /* not one uscope loaded */
  unwind_changed();
  /* Lost, the mappings stay until the PID is used again (its first walk reloads them). */
  tell_user_space(tgid, UNWIND_REQUEST_EXIT);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
