/* Shared by task_regs.bpf.c and user space (collect/thread_regs.cc): one record per thread of
 * the process `uscope dump` reads, or whose waits the off-CPU profile finds begun. */
#ifndef USCOPE_BPF_TASK_REGS_H
#define USCOPE_BPF_TASK_REGS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TASK_REGS_COMM_LEN 16
#define TASK_REGS_KERNEL_FRAMES 127 /* as the profiler's stack map keeps (PROFILE_MAX_FRAMES) */

struct task_regs_record {
  __u32 tid;
  __u32 state;  /* task->__state: 0 runnable, else why it sleeps (TASK_INTERRUPTIBLE, ...) */
  __u32 on_cpu; /* running on a CPU now: its registers below are of its last kernel entry */
  __u32 have_regs;
  __u64 ip, sp, bp; /* the user registers it entered the kernel with */
  __u64 r13;        /* HotSpot's interpreter keeps its bytecode pointer there */
  __u64 fsbase;     /* thread.fsbase: its TCB, which pthread_self() returns (x86-64 glibc, musl) */
  __s64 syscall;    /* the system call it is in (orig_ax, x86-64 numbers), or -1 */
  __u64 switches;   /* nvcsw + nivcsw: times it left a CPU; it has not run since while unchanged */
  __u32 kernel_frames; /* of kernel_stack: where a sleeping thread sleeps in the kernel */
  __u32 reserved;
  __u64 kernel_stack[TASK_REGS_KERNEL_FRAMES];
  char comm[TASK_REGS_COMM_LEN];
};

#endif
