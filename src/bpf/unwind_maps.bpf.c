// SPDX-License-Identifier: GPL-2.0
// The owner of the unwinder's shared maps (unwind_maps.bpf.h), with the two programs that keep
// them true to the processes: an exec makes a process's tables stale until user space reloads
// them, and an exit drops them. Both are raw tracepoints (no tracefs, no kprobes needed) that read
// nothing of the kernel's structures: the task that execs or exits is the current one, whose ids
// bpf_get_current_pid_tgid gives. No CO-RE read and no BTF tracepoint, so libbpf loads this object
// without parsing the kernel's BTF (/sys/kernel/btf/vmlinux, ~5.5 MB: ~7 ms and ~12 MiB at peak).
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

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

SEC("raw_tp/sched_process_exec")
int unwind_on_exec(void* ctx) {
  /* exec runs in the task that execs, made its group's leader by then (de_thread). */
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  struct unwind_proc* proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
  if (!proc) return 0; /* not one whose tables are loaded */
  proc->state = UNWIND_PROC_STALE;
  unwind_changed();
  /* Lost, the walker asks again when it next meets the stale process. */
  proc->requested_ns = bpf_ktime_get_ns();
  tell_user_space(tgid, UNWIND_REQUEST_EXEC);
  return 0;
}

SEC("raw_tp/sched_process_exit")
int unwind_on_exit(void* ctx) {
  /* do_exit runs in the exiting task. */
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if ((__u32)id != tgid) return 0; /* a thread; the process lives on */
  if (bpf_map_delete_elem(&unwind_procs, &tgid)) return 0; /* not one uscope loaded */
  unwind_changed();
  /* Lost, the mappings stay until the PID is used again (its first walk reloads them). */
  tell_user_space(tgid, UNWIND_REQUEST_EXIT);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
