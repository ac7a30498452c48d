// SPDX-License-Identifier: GPL-2.0
// `uscope dump`: every thread of one process, read once through a task iterator (nothing is
// attached to the process): its state and the user registers it entered the kernel with, from
// which user space walks its stack (collect/user_walk.h).
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "task_regs.h"

const volatile __u32 target_tgid = 0;

SEC("iter/task")
int dump_task(struct bpf_iter__task* ctx) {
  struct task_struct* task = ctx->task;
  if (!task || task->tgid != target_tgid) return 0;
  struct task_regs_record r = {};
  r.tid = task->pid;
  r.state = task->__state;
  r.on_cpu = task->on_cpu;
  /* Saved at each switch away from the task, and set only by clone's tls and arch_prctl, so
   * current for a thread on a CPU too: Python 3.8-3.10 tell their threads by it. */
  r.fsbase = BPF_CORE_READ(task, thread.fsbase);
  __builtin_memcpy(r.comm, task->comm, sizeof(r.comm));
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  /* mm only as a value (is the thread still a user thread?): a probe read, not a pointer the
   * verifier types, which would make it search the kernel's BTF for the field's trust. */
  if (regs && BPF_CORE_READ(task, mm)) {
    r.ip = BPF_CORE_READ(regs, ip);
    r.sp = BPF_CORE_READ(regs, sp);
    r.bp = BPF_CORE_READ(regs, bp);
    r.r13 = BPF_CORE_READ(regs, r13);
    r.have_regs = 1;
  }
  bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
