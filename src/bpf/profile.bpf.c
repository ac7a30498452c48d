// SPDX-License-Identifier: GPL-2.0
// The CPU profiler: run by one cpu-clock perf event per CPU (attach/perf_events.h), it counts
// samples in the kernel per (process, thread, comm, user stack, kernel stack), as bcc's profile
// does, so user space reads a table of stacks instead of an event per sample.
// The off-CPU profiler (--off-cpu, --wall), on the scheduler's switch tracepoint: a covered thread
// that leaves its CPU has its stacks taken there and then, and the time until it runs again is
// added to their row, as bcc's offcputime does.
// memleak, on uprobes of the allocator's functions: each block followed from its allocation to its
// free, its stack's row holding the bytes and blocks still outstanding, as bcc's memleak does.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "profile.h"
#include "target_filter.h"
/* A perf_event program is never interrupted by another walk on its CPU (see unwind.bpf.h). */
#define UNWIND_REMEMBER_ACROSS_WALKS 1
#include "unwind.bpf.h"
/* The exits' snapshots in this object, not an object of their own: its CO-RE reads and theirs are
 * relocated against one parse of the kernel's BTF (collect/exit_maps.h). */
#include "exit_maps.bpf.h"

/* Several -p PIDs: their tgids are the keys of `targets` (target_tgid stays 0). */
const volatile __u32 use_targets = 0;
const volatile __u32 include_idle =
    0;                                /* the idle task (pid 0): what a CPU does when nothing runs */
const volatile __u32 per_thread = 0;  /* --threads: key by thread, with the thread's comm */
const volatile __u32 user_stacks = 1; /* 0 with -K */
const volatile __u32 kernel_stacks = 1; /* 0 with -U */
const volatile __u64 offcpu_min_ns = 0; /* --min-block: shorter blocks are only counted */
/* memleak --sample-bytes: the mean distance in bytes between two sampled bytes; 0: follow every
 * block. The tables are bpf/profile.h's, filled by user space. */
const volatile __u64 alloc_sample_bytes = 0;
const volatile __u64 alloc_gaps[ALLOC_GAPS] = {};
const volatile __u32 alloc_weights[ALLOC_WEIGHT_STEPS] = {};
/* A Go program: where runtime.MemProfileRate is, the rate Go samples its heap at (read at each
 * sample: the program may change it). */
const volatile __u64 go_mem_profile_rate = 0;
#define GO_KIND_SPECIAL_PROFILE 2 /* runtime._KindSpecialProfile */
#define GO_SPECIAL_KIND_OFFSET 10 /* runtime.special: next *special, offset uint16, kind byte */
/* When off-CPU profiling started (bpf_ktime_get_ns), set by user space as it attaches. */
__u64 offcpu_since_ns = 0;

#define EFAULT 14 /* no errno.h in BPF */
#define EEXIST 17

/* What each map costs (the loader sizes them by the session):
 *   stacks   ~1 KiB per slot (127 frames), preallocated: kernel stacks
 *   ustacks  ~1 KiB per distinct user stack, allocated as stacks appear (preallocated, 8,192
 *            slots were ~9 ms of zeroing and charging at every start, for stacks a profile of one
 *            process mostly never has)
 *   counts   ~50 bytes per distinct key, allocated as keys appear
 *   seen     ~60 bytes per process
 *   events   the ring for first-sample records: 64 KiB */
struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, 4096); /* resized before load */
  __uint(key_size, sizeof(__u32));
  __uint(value_size, PROFILE_MAX_FRAMES * sizeof(__u64));
} stacks SEC(".maps");

/* User stacks walked by unwind.bpf.h, keyed by their 64-bit hash: two different stacks would
 * have to collide in 64 bits to be confused (about 1 in 10^10 for 20,000 distinct stacks). A full
 * map is counted (PC_USER_STACKS_FULL). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096); /* resized before load */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u64);
  __type(value, struct unwind_stack);
} ustacks SEC(".maps");

/* Hashes this CPU has found in ustacks, direct-mapped: ustacks is never deleted from, so a hash
 * here is there, and a hot path's stack skips its hash-map lookup (two cold lines, ~300 ns here).
 */
#define STORED_HASHES 256
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64[STORED_HASHES]);
} stored_hashes SEC(".maps");

/* Read cumulatively by user space and never deleted from, so a count is never lost between an
 * update and a read. A full map is counted (PC_MAP_FULL). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384); /* resized before load */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct profile_key);
  __type(value, __u64);
} counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, PROFILE_NUM_COUNTERS);
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* resized to the number of -p PIDs when there are several */
  __type(key, __u32);
  __type(value, __u8);
} targets SEC(".maps");

/* Processes already announced. An LRU: on a busy host old processes drop out and are announced
 * again at their next sample, which only costs user space a cached remember(). */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);
  __type(value, __u8);
} seen SEC(".maps");

/* The process this CPU announced or found in `seen` last: its next samples skip the LRU lookup. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} seen_last SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 << 10);
} events SEC(".maps");

/* Threads off their CPU now (struct profile_offcpu_start): ~90 bytes each, allocated as threads
 * block. A full map is counted (PC_OFFCPU_START_FULL). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* resized before load with --off-cpu */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct profile_offcpu_start);
} offcpu_start SEC(".maps");

/* Goroutines parked now (struct profile_offcpu_start by struct go_parked_key), as threads in
 * offcpu_start. A full map is counted (PC_GO_PARKED_FULL). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* resized before load for a Go program */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct go_parked_key);
  __type(value, struct profile_offcpu_start);
} go_parked SEC(".maps");

/* The record being built at a switch (too big for the BPF stack beside the unwinder's frames);
 * slot 1 at a goroutine's park: a uprobe's program may be preempted by the switch's. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 2);
  __type(key, __u32);
  __type(value, struct profile_offcpu_start);
} offcpu_scratch SEC(".maps");

static __always_inline void bump(__u32 counter) {
  __u64* n = bpf_map_lookup_elem(&counters, &counter);
  if (n) *n += 1;
}

static __always_inline int covered(__u32 tgid) {
  if (tgid == 0) return include_idle;
  if (use_targets) return tgid != self_tgid && bpf_map_lookup_elem(&targets, &tgid) != 0;
  return target_matches(tgid);
}

/* A new stack with runtime frames (Python, Java): user space reads their code objects while they
 * live. */
static __always_inline void announce_stack(__u32 tgid, __u64 hash) {
  struct profile_new_stack* rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
  if (!rec) {
    bump(PC_STACK_RECORD_LOST);
    return;
  }
  rec->tgid = tgid;
  rec->kind = PROFILE_RECORD_STACK;
  rec->hash = hash;
  bpf_ringbuf_submit(rec, 0);
}

/* A failed stack id as the key records it, with its loss counted. */
static __always_inline __s32 stack_or_loss(long id, __u32 failed, __u32 collided) {
  if (id >= 0) return (__s32)id;
  if (id == -EEXIST) {
    bump(collided);
    return PROFILE_STACK_COLLIDED;
  }
  bump(failed);
  return PROFILE_STACK_FAILED;
}

/* The one place user stacks are taken: walked by CFI and frame pointers (unwind.bpf.h) from the
 * registers user space was interrupted at (or entered the kernel with); the stack is stored by its
 * hash, which goes in the key. A walk that ends early keeps the frames it found and says why (its
 * end reason is counted). */
static __always_inline __s32 store_user_stack(__u32 tgid, __u64 pc, __u64 sp, __u64 bp, __u64 r13,
                                              __u64* hash) {
  struct unwind_scratch* s = unwind_user_stack(tgid, pc, sp, bp, r13);
  if (!s || s->stack.len == 0) {
    bump(PC_USER_FAILED);
    return PROFILE_STACK_FAILED;
  }
  *hash = s->hash;
  __u32 zero = 0;
  __u64* stored = bpf_map_lookup_elem(&stored_hashes, &zero);
  __u64* slot = stored ? &stored[(s->hash ^ (s->hash >> 32)) & (STORED_HASHES - 1)] : 0;
  if (slot && *slot == s->hash) return PROFILE_STACK_HASHED;
  if (!bpf_map_lookup_elem(&ustacks, hash)) {
    long err = bpf_map_update_elem(&ustacks, hash, &s->stack, BPF_NOEXIST);
    if (err && err != -EEXIST) { /* EEXIST: another CPU stored it first */
      bump(PC_USER_STACKS_FULL);
      return PROFILE_STACK_FAILED;
    }
    if (!err && (s->py_emitted || s->hs_emitted || s->v8_emitted)) announce_stack(tgid, s->hash);
  }
  if (slot) *slot = s->hash;
  return PROFILE_STACK_HASHED;
}

/* The user stack of a task in the kernel: from where it entered, saved at the top of its stack. */
static __always_inline __s32 task_user_stack(struct task_struct* task, __u32 tgid, __u64* hash) {
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  if (!regs) {
    bump(PC_USER_FAILED);
    return PROFILE_STACK_FAILED;
  }
  return store_user_stack(tgid, BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp),
                          BPF_CORE_READ(regs, bp), BPF_CORE_READ(regs, r13), hash);
}

static __always_inline __s32 collect_user_stack(struct bpf_perf_event_data* ctx,
                                                struct task_struct* task, __u32 tgid, __u64* hash) {
  if (!user_stacks) return PROFILE_STACK_NONE;
  if (!BPF_CORE_READ(task, mm)) return PROFILE_STACK_NONE; /* a kernel thread */
  if (*(volatile __u64*)&ctx->regs.cs & 3)
    return store_user_stack(tgid, ctx->regs.ip, ctx->regs.sp, ctx->regs.bp, ctx->regs.r13, hash);
  return task_user_stack(task, tgid, hash);
}

static __always_inline __s32 collect_kernel_stack(struct bpf_perf_event_data* ctx) {
  if (!kernel_stacks) return PROFILE_STACK_NONE;
  /* Interrupted in user mode: there is no kernel stack (the callchain would come back empty).
   * volatile: the verifier takes only whole-register loads of the context, not clang's u16. */
  if (*(volatile __u64*)&ctx->regs.cs & 3) return PROFILE_STACK_NONE;
  long id = bpf_get_stackid(ctx, &stacks, 0);
  return stack_or_loss(id, PC_KERNEL_FAILED, PC_KERNEL_COLLIDED);
}

/* The first sample of a process tells user space, which reads its maps while it lives. */
static __always_inline void announce(__u32 tgid, const char* comm) {
  __u32 zero = 0;
  __u32* last = bpf_map_lookup_elem(&seen_last, &zero);
  if (last && *last == tgid) return;
  if (bpf_map_lookup_elem(&seen, &tgid)) {
    if (last) *last = tgid;
    return;
  }
  struct profile_new_process* rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
  if (!rec) {
    bump(PC_NEW_PROCESS_LOST);
    return; /* not marked seen: the next sample tries again */
  }
  rec->tgid = tgid;
  rec->kind = PROFILE_RECORD_PROCESS;
  __builtin_memcpy(rec->comm, comm, PROFILE_COMM_LEN);
  bpf_ringbuf_submit(rec, 0);
  __u8 one = 1;
  bpf_map_update_elem(&seen, &tgid, &one, BPF_ANY);
  if (last) *last = tgid;
}

/* The process (or with --threads, the thread) and its comm, as a key names them. */
static __always_inline void key_owner(struct profile_key* key, struct task_struct* task, __u32 tgid,
                                      __u32 tid) {
  key->pid = tgid;
  if (per_thread) {
    key->tid = tid;
    bpf_probe_read_kernel_str(key->comm, sizeof(key->comm), &task->comm);
  } else {
    struct task_struct* leader = BPF_CORE_READ(task, group_leader);
    bpf_probe_read_kernel_str(key->comm, sizeof(key->comm), &leader->comm);
  }
}

/* Adds `value` to the key's row of `counts`. */
static __always_inline void count_key(const struct profile_key* key, __u64 value) {
  __u64* n = bpf_map_lookup_elem(&counts, key);
  if (n) {
    __sync_fetch_and_add(n, value);
    return;
  }
  /* BPF_NOEXIST: two CPUs adding one key at once; the loser adds to the winner's row. */
  if (bpf_map_update_elem(&counts, key, &value, BPF_NOEXIST) == 0) return;
  n = bpf_map_lookup_elem(&counts, key);
  if (n)
    __sync_fetch_and_add(n, value);
  else
    bump(PC_MAP_FULL);
}

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  if (!covered(tgid)) return 0;
  bump(PC_SAMPLES);

  struct task_struct* task = bpf_get_current_task_btf();
  struct profile_key key = {};
  key_owner(&key, task, tgid, (__u32)id);
  key.user_stack_id = collect_user_stack(ctx, task, tgid, &key.user_stack);
  key.kernel_stack_id = collect_kernel_stack(ctx);
  if (tgid) announce(tgid, key.comm);
  count_key(&key, 1);
  return 0;
}

/* ---- Off-CPU ---- */

#define TASK_DEAD 0x80
/* bpf_get_stackid() at the switch: the program's own frame and bpf_trace_run4() first. */
#define OFFCPU_SKIP_FRAMES 2

/* The stacks of `task`, the current task, at a scheduler tracepoint: its user stack from where it
 * entered the kernel (none for a kernel thread or the idle task), its kernel stack from here. */
static __always_inline void scheduler_stacks(void* ctx, struct task_struct* task, __u32 tgid,
                                             __s32* user_id, __u64* user_hash, __s32* kernel_id) {
  *user_id = PROFILE_STACK_NONE;
  if (user_stacks && tgid && BPF_CORE_READ(task, mm))
    *user_id = task_user_stack(task, tgid, user_hash);
  *kernel_id = PROFILE_STACK_NONE;
  if (kernel_stacks)
    *kernel_id = stack_or_loss(bpf_get_stackid(ctx, &stacks, OFFCPU_SKIP_FRAMES), PC_KERNEL_FAILED,
                               PC_KERNEL_COLLIDED);
}

/* Why `task` leaves its CPU: its state then and the system call it is in. */
static __always_inline __u32 offcpu_reason(struct task_struct* task, bool preempt,
                                           unsigned int state) {
  if (preempt) return OFFCPU_RUN_QUEUE;
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  return offcpu_reason_of(state, regs ? (long)BPF_CORE_READ(regs, orig_ax) : -1);
}

/* A covered thread leaves its CPU: its stacks now (it is the current task), and since when. */
static __always_inline void offcpu_leave(void* ctx, struct task_struct* prev, bool preempt,
                                         unsigned int state, __u64 now) {
  __u32 tgid = BPF_CORE_READ(prev, tgid), tid = BPF_CORE_READ(prev, pid);
  if (tid == 0 || !covered(tgid)) return;
  if (state & TASK_DEAD) return; /* its last switch: it never runs again */
  bump(PC_OFFCPU_BLOCKS);
  __u32 zero = 0;
  struct profile_offcpu_start* st = bpf_map_lookup_elem(&offcpu_scratch, &zero);
  if (!st) return;
  __builtin_memset(&st->key, 0, sizeof(st->key));
  key_owner(&st->key, prev, tgid, tid);
  st->key.reason = offcpu_reason(prev, preempt, state);
  scheduler_stacks(ctx, prev, tgid, &st->key.user_stack_id, &st->key.user_stack,
                   &st->key.kernel_stack_id);
  st->since_ns = now;
  announce(tgid, st->key.comm);
  if (bpf_map_update_elem(&offcpu_start, &tid, st, BPF_ANY)) bump(PC_OFFCPU_START_FULL);
}

/* A wait ends now: its time goes to its row, or when shorter than --min-block to a counter. */
static __always_inline void offcpu_count(const struct profile_offcpu_start* st, __u64 now) {
  __u64 blocked = now - st->since_ns;
  if (blocked >= offcpu_min_ns)
    count_key(&st->key, blocked);
  else
    bump(PC_OFFCPU_SHORT);
}

/* A thread runs again: the time since it left goes to the row its leaving took. */
static __always_inline void offcpu_return(struct task_struct* next, __u64 now) {
  __u32 tid = BPF_CORE_READ(next, pid);
  if (tid == 0) return;
  struct profile_offcpu_start* st = bpf_map_lookup_elem(&offcpu_start, &tid);
  if (!st) {
    __u32 tgid = BPF_CORE_READ(next, tgid);
    /* Off its CPU since before the profile began, and not put in by user space: its stacks were
     * not taken then. (A thread started since runs here for the first time.) */
    if (covered(tgid) && offcpu_since_ns && now > offcpu_since_ns &&
        BPF_CORE_READ(next, start_time) < offcpu_since_ns) {
      bump(PC_OFFCPU_UNSEEN);
      __u32 counter = PC_OFFCPU_UNSEEN_NS;
      __u64* n = bpf_map_lookup_elem(&counters, &counter);
      if (n) *n += now - offcpu_since_ns;
    }
    return;
  }
  offcpu_count(st, now);
  bpf_map_delete_elem(&offcpu_start, &tid);
}

/* --wakers: the task waking a waiting thread of the target is the current one; its stacks go into
 * the waiting thread's row, as bcc's offwaketime has them. The first waker of a wait counts: a
 * later one finds the thread already woken. */
SEC("tp_btf/sched_waking")
int BPF_PROG(offcpu_waking, struct task_struct* p) {
  __u32 tid = BPF_CORE_READ(p, pid);
  struct profile_offcpu_start* st = bpf_map_lookup_elem(&offcpu_start, &tid);
  if (!st || st->key.waker_tid) return 0;
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32;
  struct task_struct* waker = bpf_get_current_task_btf();
  st->key.waker_pid = tgid;
  st->key.waker_tid = (__u32)id ? (__u32)id : 0xffffffff; /* the idle task: an interrupt's */
  bpf_get_current_comm(st->key.waker_comm, sizeof(st->key.waker_comm));
  scheduler_stacks(ctx, waker, tgid, &st->key.waker_user_stack_id, &st->key.waker_user_stack,
                   &st->key.waker_kernel_stack_id);
  if (tgid) announce(tgid, st->key.waker_comm);
  return 0;
}

/* Go: a goroutine is not a thread. One parked on a channel, a lock or a timer leaves its thread
 * to run others (or to sleep in the scheduler, runtime.park_m's stack); its own wait runs from
 * runtime.gopark, on the goroutine's stack, until runtime.execute runs it again (after ready(),
 * or netpoll's injectglist). Entry probes only: no return probe ever goes on Go code. */
SEC("uprobe")
int offcpu_go(struct pt_regs* ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!covered(tgid)) return 0;
  __u64 now = bpf_ktime_get_ns();
  struct go_parked_key k = {.pid = tgid};
  if (bpf_get_attach_cookie(ctx) == GO_SCHED_EXECUTE) {
    k.g = ctx->ax;
    struct profile_offcpu_start* st = bpf_map_lookup_elem(&go_parked, &k);
    if (!st) return 0; /* not seen parking: new, preempted, yielded, or parked before the start */
    offcpu_count(st, now);
    bpf_map_delete_elem(&go_parked, &k);
    return 0;
  }
  k.g = ctx->r14; /* Go's ABIInternal keeps the running g in r14 */
  bump(PC_GO_PARKS);
  __u32 slot = 1;
  struct profile_offcpu_start* st = bpf_map_lookup_elem(&offcpu_scratch, &slot);
  if (!st) return 0;
  __builtin_memset(&st->key, 0, sizeof(st->key));
  /* The process's, also with --threads: the wait is the goroutine's, not its thread's. */
  st->key.pid = tgid;
  struct task_struct* leader = BPF_CORE_READ(bpf_get_current_task_btf(), group_leader);
  bpf_probe_read_kernel_str(st->key.comm, sizeof(st->key.comm), &leader->comm);
  st->key.reason = OFFCPU_GO_PARK;
  st->key.go_wait = ctx->cx & 0xff; /* waitReason, a uint8 */
  st->key.user_stack_id =
      user_stacks ? store_user_stack(tgid, ctx->ip, ctx->sp, ctx->bp, ctx->r13, &st->key.user_stack)
                  : PROFILE_STACK_NONE;
  st->key.kernel_stack_id = PROFILE_STACK_NONE;
  st->key.waker_user_stack_id = PROFILE_STACK_NONE;
  st->key.waker_kernel_stack_id = PROFILE_STACK_NONE;
  st->since_ns = now;
  announce(tgid, st->key.comm);
  if (bpf_map_update_elem(&go_parked, &k, st, BPF_ANY)) bump(PC_GO_PARKED_FULL);
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct* prev, struct task_struct* next,
             unsigned int prev_state) {
  __u64 now = bpf_ktime_get_ns();
  offcpu_leave(ctx, prev, preempt, prev_state, now);
  offcpu_return(next, now);
  return 0;
}

/* ---- memleak ----
 * The programs run in uprobe context, not with interrupts off as the sampler does, and share its
 * per-CPU walk scratch (UNWIND_REMEMBER_ACROSS_WALKS): that holds because a non-sleepable uprobe
 * run is never interleaved with another on its CPU (CONFIG_PREEMPT_NONE, as trace.bpf.c's slot 0
 * has it), and memleak never attaches the sampler or the scheduler's programs beside them. */

/* The allocator call a thread is in, and sampled mode's distance to its next sampled byte: in the
 * task's own storage, freed with it. */
struct alloc_thread {
  __s64 until_sample; /* bytes before the next sampled byte */
  __u64 entry_sp;     /* rsp at the call in progress (its return address's slot); 0: none */
  __u64 size;
  __u64 arg;    /* realloc's old block; posix_memalign's pointer to the result */
  __u32 fn;     /* enum alloc_fn */
  __u32 follow; /* the call's block is followed (always, or when sampled) */
  __u32 primed; /* until_sample has been drawn */
  __u32 reserved;
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct alloc_thread);
} alloc_threads SEC(".maps");

/* Followed blocks (~60 bytes each, as they are allocated): a full map is counted
 * (PC_ALLOCS_FULL). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* resized before load for memleak */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct alloc_block_key);
  __type(value, struct alloc_block);
} allocs SEC(".maps");

/* Outstanding blocks by (process, stack), read by user space at each interval; never deleted. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* resized before load for memleak */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct alloc_row_key);
  __type(value, struct alloc_row);
} live SEC(".maps");

static __always_inline struct alloc_thread* alloc_thread_of(__u64 flags) {
  return bpf_task_storage_get(&alloc_threads, bpf_get_current_task_btf(), 0, flags);
}

/* A block freed: what it counted for leaves its row. Of two frees of one block racing, only the
 * one whose delete succeeds subtracts. */
static __always_inline void alloc_forget(__u32 tgid, __u64 addr, bool count) {
  struct alloc_block_key k = {.pid = tgid, .addr = addr};
  struct alloc_block* b = bpf_map_lookup_elem(&allocs, &k);
  if (!b) {
    if (count) bump(PC_FREES_UNKNOWN);
    return;
  }
  struct alloc_block gone = *b;
  if (bpf_map_delete_elem(&allocs, &k)) return;
  if (count) bump(PC_FREES);
  struct alloc_row* r = bpf_map_lookup_elem(&live, &gone.row);
  if (!r) return;
  __sync_fetch_and_add(&r->bytes, -(__s64)gone.bytes);
  __sync_fetch_and_add(&r->blocks, -(__s64)gone.blocks);
}

/* Sampled mode: the bytes to the next sampled byte, drawn from alloc_gaps. */
static __always_inline __s64 alloc_gap(void) {
  __u32 i = bpf_get_prandom_u32() & (ALLOC_GAPS - 1);
  return (__s64)alloc_gaps[i];
}

SEC("uprobe")
int alloc_enter(struct pt_regs* ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!covered(tgid)) return 0;
  __u64 cookie = bpf_get_attach_cookie(ctx);
  __u64 sp = ctx->sp - ALLOC_COOKIE_SP_DELTA(cookie);
  struct alloc_thread* t = alloc_thread_of(BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!t) {
    bump(PC_ALLOC_THREAD_LOST);
    return 0;
  }
  /* Called from inside another allocator call of this thread (realloc(NULL, n) calls malloc, an
   * allocator's mmap): the outer call's block is the one the program asked for. A call below
   * no deeper than the one recorded is a new call: that one's return was never seen. */
  if (t->entry_sp && sp < t->entry_sp) return 0;
  __u32 fn = ALLOC_COOKIE_FN(cookie);
  __u64 size = 0, arg = 0;
  switch (fn) {
    case ALLOC_MALLOC:
    case ALLOC_VALLOC:
      size = ctx->di;
      break;
    case ALLOC_CALLOC:
      size = ctx->di * ctx->si;
      break;
    case ALLOC_REALLOC:
      arg = ctx->di;
      size = ctx->si;
      break;
    case ALLOC_REALLOCARRAY:
      arg = ctx->di;
      size = ctx->si * ctx->dx;
      break;
    case ALLOC_POSIX_MEMALIGN:
      arg = ctx->di;
      size = ctx->dx;
      break;
    case ALLOC_ALIGNED:
    case ALLOC_MMAP:
      size = ctx->si;
      break;
    default:
      return 0;
  }
  bump(PC_ALLOC_CALLS);
  /* realloc gives its old block back whatever it returns (moved, grown in place, or freed for
   * size 0); one that fails leaves it allocated, which is counted as freed. */
  if ((fn == ALLOC_REALLOC || fn == ALLOC_REALLOCARRAY) && arg) alloc_forget(tgid, arg, true);
  t->entry_sp = sp;
  t->fn = fn;
  t->size = size;
  t->arg = arg;
  t->follow = 1;
  if (alloc_sample_bytes) {
    if (!t->primed) {
      t->until_sample = alloc_gap();
      t->primed = 1;
    }
    t->until_sample -= (__s64)size;
    if (t->until_sample > 0)
      t->follow = 0;
    else /* exponential gaps have no memory: the next one starts afresh */
      t->until_sample = alloc_gap();
  }
  return 0;
}

/* What a followed block of `size` bytes stands for in its row: itself, or when sampled at `rate`
 * the blocks like it that were not sampled (bytes and 1/ALLOC_BLOCK_ONE blocks). */
static __always_inline void alloc_weight(__u64 size, __u64 rate, __u64* bytes, __u64* blocks) {
  *bytes = size;
  *blocks = ALLOC_BLOCK_ONE;
  if (!rate) return;
  __u64 step = size * 64 / rate;
  if (step >= ALLOC_WEIGHT_STEPS) return; /* always sampled */
  bump(PC_ALLOCS_ESTIMATED);
  __u64 w = rate * alloc_weights[step & (ALLOC_WEIGHT_STEPS - 1)] / ALLOC_WEIGHT_ONE;
  *bytes = w;
  *blocks = w * ALLOC_BLOCK_ONE / (size ? size : 1);
}

/* A block of `size` bytes at `addr`, allocated by the code `ctx` stands in (a return probe's
 * caller, or Go's sampler and its callers), sampled at `rate` (0: every block): its stack's row
 * counts it until it is freed. */
static __always_inline void alloc_follow(struct pt_regs* ctx, __u32 tgid, __u64 addr, __u64 size,
                                         __u64 rate) {
  /* A block at an address already followed was freed unseen (a free uscope does not probe). */
  alloc_forget(tgid, addr, false);

  struct alloc_block block = {};
  block.row.pid = tgid;
  block.row.user_stack_id = user_stacks ? store_user_stack(tgid, ctx->ip, ctx->sp, ctx->bp,
                                                           ctx->r13, &block.row.user_stack)
                                        : PROFILE_STACK_NONE;
  alloc_weight(size, rate, &block.bytes, &block.blocks);
  struct alloc_row* r = bpf_map_lookup_elem(&live, &block.row);
  if (!r) {
    struct alloc_row fresh = {};
    struct task_struct* task = bpf_get_current_task_btf();
    struct task_struct* leader = BPF_CORE_READ(task, group_leader);
    bpf_probe_read_kernel_str(fresh.comm, sizeof(fresh.comm), &leader->comm);
    bpf_map_update_elem(&live, &block.row, &fresh, BPF_NOEXIST);
    r = bpf_map_lookup_elem(&live, &block.row);
    if (!r) {
      bump(PC_ALLOC_ROWS_FULL);
      return;
    }
    announce(tgid, fresh.comm);
  }
  struct alloc_block_key k = {.pid = tgid, .addr = addr};
  if (bpf_map_update_elem(&allocs, &k, &block, BPF_ANY)) {
    bump(PC_ALLOCS_FULL);
    return;
  }
  bump(PC_ALLOCS_TRACKED);
  __sync_fetch_and_add(&r->bytes, (__s64)block.bytes);
  __sync_fetch_and_add(&r->blocks, (__s64)block.blocks);
  __sync_fetch_and_add(&r->allocs, 1);
  __sync_fetch_and_add(&r->alloc_bytes, size);
}

SEC("uretprobe")
int alloc_return(struct pt_regs* ctx) {
  struct alloc_thread* t = alloc_thread_of(0);
  if (!t || !t->entry_sp) return 0;
  /* After the return rsp is one slot above the call's: a deeper one is a nested call's return. */
  if (ctx->sp <= t->entry_sp) return 0;
  bool ours = ctx->sp == t->entry_sp + 8;
  t->entry_sp = 0;
  if (!ours || !t->follow) return 0;
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  __u64 addr = ctx->ax;
  if (t->fn == ALLOC_POSIX_MEMALIGN) {
    if (addr != 0 || bpf_probe_read_user(&addr, sizeof(addr), (void*)t->arg)) return 0;
  }
  if (addr == 0 || (t->fn == ALLOC_MMAP && addr == (__u64)-1)) return 0;
  alloc_follow(ctx, tgid, addr, t->size, alloc_sample_bytes);
  return 0;
}

SEC("uprobe")
int alloc_free(struct pt_regs* ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!covered(tgid) || ctx->di == 0) return 0;
  alloc_forget(tgid, ctx->di, true);
  return 0;
}

/* Go's heap, sampled by Go itself: mProf_Malloc is called for the blocks its sampler picked (one
 * per MemProfileRate bytes on average, exponential gaps as --sample-bytes draws them), and
 * freeSpecial with kind _KindSpecialProfile when the sweeper frees one of them. Entry probes
 * only: no return probe ever goes on Go code. */
SEC("uprobe")
int alloc_go(struct pt_regs* ctx) {
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!covered(tgid)) return 0;
  if (ALLOC_COOKIE_FN(bpf_get_attach_cookie(ctx)) == ALLOC_GO_FREE_SPECIAL) {
    __u8 kind = 0;
    if (bpf_probe_read_user(&kind, sizeof(kind), (void*)(ctx->ax + GO_SPECIAL_KIND_OFFSET)) ||
        kind != GO_KIND_SPECIAL_PROFILE)
      return 0;
    alloc_forget(tgid, ctx->bx, true);
    return 0;
  }
  bump(PC_ALLOC_CALLS);
  __u64 rate = 0;
  if (go_mem_profile_rate) bpf_probe_read_user(&rate, sizeof(rate), (void*)go_mem_profile_rate);
  if (ctx->ax) alloc_follow(ctx, tgid, ctx->ax, ctx->bx, rate);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
