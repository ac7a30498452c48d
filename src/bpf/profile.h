/* Shared by profile.bpf.c and user space (collect/profile_program.cc): the key the sampler counts
 * by, its loss counters, and the record announcing a process it samples for the first time.
 * Off-CPU (--off-cpu, --wall): the same keys, counted in nanoseconds blocked, with why. */
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
/* Off-CPU: a wait begun before the profile, whose stacks user space read as the profile started
 * and keeps, under profile_key.user_stack (collect/begun_waits.h). */
#define PROFILE_STACK_SEEDED -5

/* Why a thread was off its CPU, from the scheduler's view of it as it left (its state, whether it
 * was preempted) and the system call it was in: OFFCPU_ON_CPU is a CPU sample. */
enum offcpu_reason {
  OFFCPU_ON_CPU = 0, /* not off-CPU: a cpu-clock sample, counted in samples */
  OFFCPU_RUN_QUEUE,  /* preempted or yielded: runnable, waiting for a CPU */
  OFFCPU_LOCK,       /* futex: a mutex, condition variable, or another thread's join */
  OFFCPU_SLEEP,      /* nanosleep, clock_nanosleep, pause */
  OFFCPU_IO,         /* read/write, sockets, poll/select/epoll, fsync, io_uring */
  OFFCPU_DISK,       /* uninterruptible outside those: a page fault's read, a filesystem */
  OFFCPU_CHILD,      /* wait4, waitid */
  OFFCPU_OTHER,      /* another system call, or a stop (SIGSTOP, ptrace) */
  OFFCPU_GO_PARK,    /* a goroutine parked by Go's scheduler (runtime.gopark) until it runs
                      * again (runtime.execute): why, in profile_key.go_wait */
  OFFCPU_NUM_REASONS
};

/* The kernel's task states that tell why a thread waits (task->__state). */
#define OFFCPU_TASK_INTERRUPTIBLE 0x1
#define OFFCPU_TASK_UNINTERRUPTIBLE 0x2
#define OFFCPU_TASK_STOPPED_OR_TRACED 0x0c /* __TASK_STOPPED | __TASK_TRACED */

/* Why a thread that left its CPU in `state` (not preempted) waits, by the system call it is in
 * (`syscall`: its orig_ax, x86-64 numbers; -1 none): the BPF side at a switch, user space for a
 * thread already waiting as the profile starts. */
static inline __u32 offcpu_reason_of(unsigned int state, long syscall) {
  if (state == 0) return OFFCPU_RUN_QUEUE;
  if (state & OFFCPU_TASK_STOPPED_OR_TRACED) return OFFCPU_OTHER;
  switch (syscall) {
    case 202: /* futex */
    case 449: /* futex_waitv */
      return OFFCPU_LOCK;
    case 34:  /* pause */
    case 35:  /* nanosleep */
    case 230: /* clock_nanosleep */
      return OFFCPU_SLEEP;
    case 0:   /* read */
    case 1:   /* write */
    case 7:   /* poll */
    case 17:  /* pread64 */
    case 18:  /* pwrite64 */
    case 19:  /* readv */
    case 20:  /* writev */
    case 23:  /* select */
    case 40:  /* sendfile */
    case 42:  /* connect */
    case 43:  /* accept */
    case 44:  /* sendto */
    case 45:  /* recvfrom */
    case 46:  /* sendmsg */
    case 47:  /* recvmsg */
    case 74:  /* fsync */
    case 75:  /* fdatasync */
    case 208: /* io_getevents */
    case 232: /* epoll_wait */
    case 270: /* pselect6 */
    case 271: /* ppoll */
    case 281: /* epoll_pwait */
    case 288: /* accept4 */
    case 295: /* preadv */
    case 296: /* pwritev */
    case 299: /* recvmmsg */
    case 307: /* sendmmsg */
    case 426: /* io_uring_enter */
    case 441: /* epoll_pwait2 */
      return OFFCPU_IO;
    case 61:  /* wait4 */
    case 247: /* waitid */
      return OFFCPU_CHILD;
  }
  return state & OFFCPU_TASK_UNINTERRUPTIBLE ? OFFCPU_DISK : OFFCPU_OTHER;
}

/* One row of the `counts` hash: samples (or off-CPU nanoseconds) with this process, thread, pair
 * of stacks and reason. */
struct profile_key {
  __u32 pid;             /* tgid */
  __u32 tid;             /* 0 unless split by thread */
  __s32 user_stack_id;   /* PROFILE_STACK_HASHED, or why there is none: PROFILE_STACK_* */
  __s32 kernel_stack_id; /* into `stacks`, or PROFILE_STACK_* */
  __u64 user_stack;      /* the user stack's hash: its key in `ustacks` */
  char comm[PROFILE_COMM_LEN];
  __u32 reason; /* enum offcpu_reason: OFFCPU_ON_CPU counts samples, others ns */
  /* --wakers: the thread that woke it (waker_tid 0: none seen), its stacks then, as above. */
  __u32 waker_pid;
  __u32 waker_tid;
  __s32 waker_user_stack_id;
  __s32 waker_kernel_stack_id;
  __u32 go_wait; /* OFFCPU_GO_PARK: gopark's waitReason (an index of runtime.waitReasonStrings) */
  __u64 waker_user_stack;
  char waker_comm[PROFILE_COMM_LEN];
};

/* A thread off its CPU now (the `offcpu_start` hash, by thread id): its row, and since when
 * (bpf_ktime_get_ns). Counted when it next runs, or by user space at a read while it still waits.
 * A thread already waiting as the profile starts is put in by user space, since the start, with
 * the stacks it read then (PROFILE_STACK_SEEDED). */
struct profile_offcpu_start {
  struct profile_key key;
  __u64 since_ns;
};

/* A goroutine parked now (the `go_parked` hash): its process and its g. */
struct go_parked_key {
  __u32 pid;
  __u32 reserved;
  __u64 g;
};
/* What a Go scheduler probe's bpf cookie says it is on. */
enum go_sched_fn {
  GO_SCHED_PARK = 0, /* runtime.gopark(unlockf, lock, reason, ...): g in r14, reason in cl */
  GO_SCHED_EXECUTE,  /* runtime.execute(gp, inheritTime): gp in rax, about to run */
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
  PC_OFFCPU_BLOCKS,     /* off-CPU: times a covered thread left its CPU */
  PC_OFFCPU_SHORT,      /* off-CPU: blocks shorter than --min-block, not counted */
  PC_OFFCPU_START_FULL, /* off-CPU: a block not counted: `offcpu_start` had no room */
  PC_OFFCPU_UNSEEN,     /* off-CPU: a covered thread ran again whose leaving was not seen (it
                         * blocked before the profile started): its wait is not counted */
  PC_OFFCPU_UNSEEN_NS,  /* ... and the time since the profile started that it waited at least */
  PC_ALLOC_CALLS,       /* memleak: allocator calls (sampled or not; nested ones not counted) */
  PC_ALLOCS_TRACKED,    /* memleak: blocks followed (all, or the sampled ones) */
  PC_ALLOCS_FULL,       /* memleak: an allocation not followed: `allocs` had no room */
  PC_ALLOC_ROWS_FULL,   /* memleak: an allocation not followed: `live` refused its stack's row */
  PC_ALLOC_THREAD_LOST, /* memleak: an allocator call not followed: no per-thread storage */
  PC_ALLOCS_ESTIMATED,  /* memleak: blocks followed that stand for more (sampled, weighted) */
  PC_FREES,             /* memleak: frees (and munmaps, reallocs) of a followed block */
  PC_FREES_UNKNOWN,     /* memleak: frees of a block not followed (allocated before the attach,
                         * or not sampled): not a loss */
  PC_GO_PARKS,          /* off-CPU: goroutines parked (runtime.gopark) */
  PC_GO_PARKED_FULL,    /* off-CPU: a goroutine's wait not counted: `go_parked` had no room */
  PROFILE_NUM_COUNTERS
};

/* ---- memleak: allocations by stack, outstanding ----
 * The allocator functions a site's bpf cookie names (its low byte; the rest is the site's
 * sp_delta, rsp at the probed instruction minus rsp at the call, for a probe moved into the
 * function's prologue). */
enum alloc_fn {
  ALLOC_MALLOC = 0,     /* malloc(size) */
  ALLOC_CALLOC,         /* calloc(n, size) */
  ALLOC_REALLOC,        /* realloc(old, size): frees old */
  ALLOC_REALLOCARRAY,   /* reallocarray(old, n, size): frees old */
  ALLOC_POSIX_MEMALIGN, /* posix_memalign(&ptr, align, size): the block is *ptr when it returns 0 */
  ALLOC_ALIGNED,        /* aligned_alloc(align, size), memalign(align, size) */
  ALLOC_VALLOC,         /* valloc(size), pvalloc(size) */
  ALLOC_MMAP,           /* mmap(addr, len, ...) */
  ALLOC_FREE,           /* free(ptr) */
  ALLOC_MUNMAP,         /* munmap(addr, len): the block mmap returned at addr */
  /* Go's heap, as Go samples it itself (one block per runtime.MemProfileRate bytes): */
  ALLOC_GO_SAMPLE,       /* runtime.mProf_Malloc(p, size): a sampled block (rax, rbx) */
  ALLOC_GO_FREE_SPECIAL, /* runtime.freeSpecial(s, p, size): a profiled block swept (kind 2) */
  ALLOC_NUM_FNS
};
#define ALLOC_COOKIE_FN(cookie) ((__u32)((cookie)&0xff))
#define ALLOC_COOKIE_SP_DELTA(cookie) ((__s64)(cookie) >> 8)

/* Sampled mode's tables, filled by user space (--sample-bytes R):
 * alloc_gaps[i]: bytes to the next sampled byte, exponential with mean R (-ln(u) R, u uniform);
 * alloc_weights[k]: what a sampled block of size s, x = s/R = k/64 (middle of its step), stands
 * for, in bytes: s/p = R g(x) with p = 1 - e^-x its chance to be sampled, g(x) = x/(1 - e^-x),
 * in units of 1/ALLOC_WEIGHT_ONE R. Past ALLOC_WEIGHT_STEPS/64 R a block is always sampled. */
#define ALLOC_GAPS 1024
#define ALLOC_WEIGHT_STEPS 1024 /* x in [0, 16) by 1/64 */
#define ALLOC_WEIGHT_ONE 65536
#define ALLOC_BLOCK_ONE 1024 /* a row's `blocks` in 1/1024 blocks (sampled: an estimate) */

/* The row an outstanding block counts in: one per (process, user stack). */
struct alloc_row_key {
  __u32 pid;
  __s32 user_stack_id; /* PROFILE_STACK_HASHED, or why there is none */
  __u64 user_stack;    /* its hash: the key in `ustacks` */
};

/* A row of `live`: the blocks of one stack still outstanding (an estimate in sampled mode). */
struct alloc_row {
  __s64 bytes;
  __s64 blocks;      /* in 1/ALLOC_BLOCK_ONE blocks */
  __u64 allocs;      /* blocks followed from this stack since the start, freed or not */
  __u64 alloc_bytes; /* their bytes (as allocated: not an estimate) */
  char comm[PROFILE_COMM_LEN];
};

/* A followed block (the `allocs` hash, by process and address). */
struct alloc_block_key {
  __u32 pid;
  __u32 reserved;
  __u64 addr;
};
struct alloc_block {
  struct alloc_row_key row;
  __u64 bytes;  /* what it counts for in its row (its size, or the sampled estimate) */
  __u64 blocks; /* in 1/ALLOC_BLOCK_ONE blocks */
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
