/* Shared by profile.bpf.c and user space (collect/profile_program.cc): the key the sampler counts
 * by, its loss counters, and the record announcing a process it samples for the first time. */
#ifndef USCOPE_BPF_PROFILE_H
#define USCOPE_BPF_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PROFILE_COMM_LEN 16
#define PROFILE_MAX_FRAMES 127 /* frames per stack: perf's default kernel.perf_event_max_stack */

/* A key's stack id when there is no stack to look up (ids >= 0 index the stack map). */
#define PROFILE_STACK_NONE -1 /* not asked for (-U/-K), or none: a kernel thread's user stack */
#define PROFILE_STACK_FAILED                                                                       \
  -2                              /* the kernel could not take it (no frame-pointer chain, EFAULT) \
                                   */
#define PROFILE_STACK_COLLIDED -3 /* its bucket in the stack map held another stack */
#define PROFILE_STACK_HASHED -4   /* a user stack: in `ustacks` under profile_key.user_stack */

/* One row of the `counts` hash: samples with this process, thread and pair of stacks. */
struct profile_key {
  __u32 pid;             /* tgid */
  __u32 tid;             /* 0 unless split by thread */
  __s32 user_stack_id;   /* PROFILE_STACK_HASHED, or why there is none: PROFILE_STACK_* */
  __s32 kernel_stack_id; /* into `stacks`, or PROFILE_STACK_* */
  __u64 user_stack;      /* the user stack's hash: its key in `ustacks` */
  char comm[PROFILE_COMM_LEN];
};

/* Per-CPU counters (the `counters` array), one slot each. */
enum profile_counter {
  PC_SAMPLES = 0,       /* samples of a process the profile covers */
  PC_USER_FAILED,       /* counted without its user stack: not even its pc could be read */
  PC_KERNEL_FAILED,     /* counted without its kernel stack */
  PC_KERNEL_COLLIDED,   /* counted without its kernel stack: a stack-map collision */
  PC_MAP_FULL,          /* not counted at all: `counts` refused a new key */
  PC_NEW_PROCESS_LOST,  /* a first-sample record did not fit the ring (retried next sample) */
  PC_USER_STACKS_FULL,  /* counted without its user stack: `ustacks` had no room */
  PC_STACK_RECORD_LOST, /* a new stack with interpreter frames was not announced: the ring was
                         * full (its code objects are read when the profile ends instead) */
  PROFILE_NUM_COUNTERS
};

/* What a record of the `events` ring announces. */
enum profile_record_kind {
  PROFILE_RECORD_PROCESS = 0, /* struct profile_new_process */
  PROFILE_RECORD_STACK,       /* struct profile_new_stack */
};

/* Sent once per process (per entry of the `seen` LRU): user space reads its maps while it lives. */
struct profile_new_process {
  __u32 tgid;
  __u32 kind; /* PROFILE_RECORD_PROCESS */
  char comm[PROFILE_COMM_LEN];
};

/* Sent once per new user stack that holds interpreter frames (bpf/python.h): user space reads
 * their code objects while the process lives. */
struct profile_new_stack {
  __u32 tgid;
  __u32 kind; /* PROFILE_RECORD_STACK */
  __u64 hash; /* its key in `ustacks` */
};

#endif
