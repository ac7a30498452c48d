/* Shared by task_regs.bpf.c and user space (collect/thread_regs.cc): one record per thread of
 * the process `uscope dump` reads. */
#ifndef USCOPE_BPF_TASK_REGS_H
#define USCOPE_BPF_TASK_REGS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TASK_REGS_COMM_LEN 16

struct task_regs_record {
  __u32 tid;
  __u32 state;  /* task->__state: 0 runnable, else why it sleeps (TASK_INTERRUPTIBLE, ...) */
  __u32 on_cpu; /* running on a CPU now: its registers below are of its last kernel entry */
  __u32 have_regs;
  __u64 ip, sp, bp; /* the user registers it entered the kernel with */
  __u64 r13;        /* HotSpot's interpreter keeps its bytecode pointer there */
  __u64 fsbase;     /* thread.fsbase: its TCB, which pthread_self() returns (x86-64 glibc, musl) */
  char comm[TASK_REGS_COMM_LEN];
};

#endif
