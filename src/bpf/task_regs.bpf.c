// SPDX-License-Identifier: GPL-2.0
// Every thread of one process, read once through a task iterator (nothing is attached to the
// process): its state, the user registers it entered the kernel with, from which user space walks
// its stack (collect/user_walk.h), and its kernel stack. For `uscope dump`, and for the waits
// already begun as an off-CPU profile starts.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "task_regs.h"

const volatile __u32 target_tgid = 0;

/* The record, too large for the BPF stack; each loaded iterator has its own, and an iterator's
 * run stays on its CPU. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct task_regs_record);
} record SEC(".maps");

SEC("iter/task")
int dump_task(struct bpf_iter__task* ctx) {
  struct task_struct* task = ctx->task;
  if (!task || task->tgid != target_tgid) return 0;
  __u32 zero = 0;
  struct task_regs_record* r = bpf_map_lookup_elem(&record, &zero);
  if (!r) return 0;
  /* Every field set below (bpf_get_task_stack zero-fills what it does not write): a record too
   * large for a memset the verifier accepts. */
  r->tid = task->pid;
  r->state = task->__state;
  r->on_cpu = task->on_cpu;
  r->switches = task->nvcsw + task->nivcsw;
  r->syscall = -1;
  r->have_regs = 0;
  r->ip = r->sp = r->bp = r->r13 = 0;
  r->reserved = 0;
  /* Saved at each switch away from the task, and set only by clone's tls and arch_prctl, so
   * current for a thread on a CPU too: Python 3.8-3.10 tell their threads by it. */
  r->fsbase = BPF_CORE_READ(task, thread.fsbase);
  __builtin_memcpy(r->comm, task->comm, sizeof(r->comm));
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  /* mm only as a value (is the thread still a user thread?): a probe read, not a pointer the
   * verifier types, which would make it search the kernel's BTF for the field's trust. */
  if (regs && BPF_CORE_READ(task, mm)) {
    r->ip = BPF_CORE_READ(regs, ip);
    r->sp = BPF_CORE_READ(regs, sp);
    r->bp = BPF_CORE_READ(regs, bp);
    r->r13 = BPF_CORE_READ(regs, r13);
    r->syscall = (__s64)BPF_CORE_READ(regs, orig_ax);
    r->have_regs = 1;
  }
  long n = bpf_get_task_stack(task, r->kernel_stack, sizeof(r->kernel_stack), 0);
  r->kernel_frames = n > 0 ? (__u32)(n / sizeof(__u64)) : 0;
  bpf_seq_write(ctx->meta->seq, r, sizeof(*r));
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
