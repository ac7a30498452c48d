/* SPDX-License-Identifier: GPL-2.0 */
/* The user-stack walker of every uscope BPF program that takes stacks (profile.bpf.c, trace.bpf.c):
 * CFI rows where the object has them (bpf/unwind.h says how they are laid out), frame pointers
 * where it has none (JIT code, objects without .eh_frame), and an end reason for every walk.
 * BPF only; include after vmlinux.h and the libbpf headers.
 *
 * The tables are shared maps (unwind_maps.bpf.h); the scratch below is this object's own: a uprobe
 * program can be interrupted by the profiler's timer on the same CPU. */
#pragma once

#include "unwind_maps.bpf.h"

#define UNWIND_EFAULT 14

/* The walk in progress, per CPU (too big for the 512-byte stack); this object's own. */
struct unwind_scratch {
  struct unwind_stack stack; /* first: stored as is by profile.bpf.c */
  __u64 pc, sp, bp;
  __u64 hash;
  __u32 tgid;
  __u32 exact_pc; /* pc is where the thread was, not a return address (no -1 for the lookup) */
  __u32 have_mapping;
  __u32 fp_only;                 /* the process's tables are not loaded: frame pointers only */
  __u32 unloaded;                /* a frame was walked by frame pointer for want of its table */
  struct unwind_mapping mapping; /* the last one found: frames in one object reuse it */
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct unwind_scratch);
} unwind_scratch SEC(".maps");

/* Asks user space to read the process's maps, at most once per UNWIND_REQUEST_INTERVAL_NS. */
static __always_inline void unwind_request(__u32 tgid, struct unwind_proc* proc) {
  __u64 now = bpf_ktime_get_ns();
  if (proc) {
    if (now - proc->requested_ns < UNWIND_REQUEST_INTERVAL_NS) return;
    proc->requested_ns = now;
  } else {
    struct unwind_proc fresh = {.state = UNWIND_PROC_REQUESTED, .requested_ns = now};
    /* BPF_NOEXIST: another CPU asking at the same time has sent the request */
    if (bpf_map_update_elem(&unwind_procs, &tgid, &fresh, BPF_NOEXIST)) return;
  }
  struct unwind_request* r = bpf_ringbuf_reserve(&unwind_requests, sizeof(*r), 0);
  if (!r) {
    unwind_count(UNWIND_STAT_REQUESTS_LOST);
    if (proc) proc->requested_ns = 0; /* ask again at the next walk */
    return;
  }
  r->tgid = tgid;
  r->kind = UNWIND_REQUEST_MAPS;
  bpf_ringbuf_submit(r, 0);
}

static __always_inline int unwind_read(__u64* out, __u64 address) {
  return bpf_probe_read_user(out, sizeof(*out), (const void*)address);
}

/* The rule in effect at `offset` of table `table` (of `pages` pages), or 0 when the table has no
 * row there. Inner-map lookups are helper calls (the verifier cannot inline a map it does not
 * know): a page with one row costs two, and the search keeps the row it lands on. */
static __always_inline const struct unwind_rule* unwind_find_rule(__u32 table, __u32 pages,
                                                                  __u64 offset) {
  __u64 page = offset >> UNWIND_PAGE_BITS;
  if (page >= pages) return 0;
  void* entries = bpf_map_lookup_elem(&unwind_tables, &table);
  if (!entries) return 0;
  __u32 page_index = 1 + (__u32)page;
  const struct unwind_page* p = bpf_map_lookup_elem(entries, &page_index);
  if (!p || p->count == 0) return 0;
  /* The last of the page's rows whose pc <= offset; the first always is (it holds at the page's
   * start). */
  __u32 lo = p->first, n = p->count;
  const struct unwind_row* best = bpf_map_lookup_elem(entries, &lo);
  if (!best) return 0;
  for (int step = 0; step < UNWIND_MAX_SEARCH && n > 1; ++step) {
    __u32 half = n / 2, mid = lo + half;
    const struct unwind_row* row = bpf_map_lookup_elem(entries, &mid);
    if (!row) return 0;
    if (row->pc <= offset) {
      lo = mid;
      best = row;
      n -= half;
    } else {
      n = half;
    }
  }
  __u32 rule = best->rule;
  return bpf_map_lookup_elem(&unwind_rules, &rule);
}

static __always_inline const struct unwind_mapping* unwind_mapping_of(struct unwind_scratch* s,
                                                                      __u64 pc) {
  if (s->have_mapping && pc >= s->mapping.start && pc < s->mapping.end) return &s->mapping;
  struct unwind_mapping_key key = {
      .prefixlen = 96, .tgid = __builtin_bswap32(s->tgid), .address = __builtin_bswap64(pc)};
  const struct unwind_mapping* m = bpf_map_lookup_elem(&unwind_mappings, &key);
  if (!m) return 0;
  s->mapping = *m;
  s->have_mapping = 1;
  return &s->mapping;
}

/* Ends the walk with `why`. */
static __always_inline long unwind_end(struct unwind_scratch* s, __u32 why) {
  s->stack.end = why;
  return 1;
}

/* One frame: records s->pc, then finds its caller's pc, sp and bp. bpf_loop's callback. */
static long unwind_step(__u64 index, void* unused) {
  __u32 zero = 0;
  struct unwind_scratch* s = bpf_map_lookup_elem(&unwind_scratch, &zero);
  if (!s) return 1;
  __u32 len = s->stack.len;
  if (len >= UNWIND_MAX_FRAMES) return unwind_end(s, UNWIND_END_TRUNCATED);
  __u64 pc = s->pc, sp = s->sp, bp = s->bp;
  if (pc == 0) return unwind_end(s, UNWIND_END_BAD_FRAME);
  s->stack.frames[len] = pc;
  s->stack.len = len + 1;
  s->hash = (s->hash ^ pc) * 0x100000001b3ull;
  s->hash ^= s->hash >> 29;

  /* Without its object's table (not loaded yet, or none), a frame is walked by frame pointer:
   * right for code that keeps them, and counted apart. */
  const struct unwind_rule* rule = 0;
  const struct unwind_mapping* m = s->fp_only ? 0 : unwind_mapping_of(s, pc);
  if (!s->fp_only && !m) {
    struct unwind_proc* proc = bpf_map_lookup_elem(&unwind_procs, &s->tgid);
    unwind_request(s->tgid, proc); /* a dlopen, or JIT code mapped since the maps were read */
  }
  if (!m || m->table == UNWIND_TABLE_PENDING) {
    unwind_count(UNWIND_STAT_FRAMES_UNLOADED);
    s->unloaded = 1;
  } else if (m->table != UNWIND_TABLE_FP) {
    /* A return address is the instruction after a call: the call itself is at pc - 1 (a call
     * that does not return may be the last instruction of its function). */
    __u64 lookup = s->exact_pc ? pc : pc - 1;
    rule = unwind_find_rule(m->table, m->pages, lookup - m->bias);
  }
  __u8 kind = rule ? rule->cfa_kind : UNWIND_CFA_NONE;
  __u64 cfa, ra, caller_bp = bp;

  switch (kind) {
    case UNWIND_CFA_END:
      return unwind_end(s, UNWIND_END_ENTRY);
    case UNWIND_CFA_SIGNAL:
      /* The kernel's signal frame: the interrupted rsp, rbp and pc in the saved context. */
      if (!rule || unwind_read(&cfa, sp + rule->cfa_offset) ||
          unwind_read(&caller_bp, sp + rule->rbp_offset) || unwind_read(&ra, sp + rule->ra_offset))
        return unwind_end(s, UNWIND_END_READ_FAILED);
      unwind_count(UNWIND_STAT_FRAMES_CFI);
      s->pc = ra;
      s->sp = cfa;
      s->bp = caller_bp;
      s->exact_pc = 1;
      return 0;
    case UNWIND_CFA_NONE:
      /* No CFI: the frame-pointer chain, [rbp] = the caller's rbp, [rbp + 8] = the return. */
      if (bp == 0) return unwind_end(s, UNWIND_END_FP_ZERO);
      if (unwind_read(&ra, bp + 8) || unwind_read(&caller_bp, bp))
        return unwind_end(s, UNWIND_END_READ_FAILED);
      cfa = bp + 16;
      if (m && m->table != UNWIND_TABLE_PENDING) unwind_count(UNWIND_STAT_FRAMES_FP);
      break;
    case UNWIND_CFA_RSP:
    case UNWIND_CFA_RBP:
    case UNWIND_CFA_PLT:
      if (!rule) return unwind_end(s, UNWIND_END_UNSUPPORTED);
      cfa = (kind == UNWIND_CFA_RBP ? bp : sp) + (__s64)rule->cfa_offset;
      /* A PLT entry has pushed once more (lazy binding's index) from byte rbp_offset on: 11, or
       * 10 in an IBT PLT. */
      if (kind == UNWIND_CFA_PLT && (pc & 15) >= (__u64)rule->rbp_offset) cfa += 8;
      if (unwind_read(&ra, cfa + (__s64)rule->ra_offset))
        return unwind_end(s, UNWIND_END_READ_FAILED);
      if (rule->rbp_kind == UNWIND_RBP_AT_CFA && kind != UNWIND_CFA_PLT) {
        if (unwind_read(&caller_bp, cfa + (__s64)rule->rbp_offset))
          return unwind_end(s, UNWIND_END_READ_FAILED);
      } else if (rule->rbp_kind == UNWIND_RBP_UNDEFINED) {
        caller_bp = 0;
      }
      unwind_count(UNWIND_STAT_FRAMES_CFI);
      break;
    default:
      return unwind_end(s, UNWIND_END_UNSUPPORTED);
  }
  /* The stack grows down: a caller's frame is above. Anything else is a broken chain. */
  if (cfa <= sp) return unwind_end(s, UNWIND_END_BAD_FRAME);
  s->pc = ra;
  s->sp = cfa;
  s->bp = caller_bp;
  s->exact_pc = 0;
  return 0;
}

/* Walks the user stack of the current process from (pc, sp, bp), the registers where it was
 * interrupted. The result is in the returned scratch: its stack (frames, end reason) and its
 * hash (of the frames and the end, for keying). Null only when the scratch map is missing. */
static __always_inline struct unwind_scratch* unwind_user_stack(__u32 tgid, __u64 pc, __u64 sp,
                                                                __u64 bp) {
  __u32 zero = 0;
  struct unwind_scratch* s = bpf_map_lookup_elem(&unwind_scratch, &zero);
  if (!s) return 0;
  s->stack.len = 0;
  s->stack.end = UNWIND_END_TRUNCATED;
  s->pc = pc;
  s->sp = sp;
  s->bp = bp;
  s->tgid = tgid;
  s->exact_pc = 1;
  s->have_mapping = 0;
  s->fp_only = 0;
  s->unloaded = 0;
  s->hash = 0xcbf29ce484222325ull;

  /* A process whose tables are not loaded (never seen, or exec'd: its old ones no longer apply)
   * is walked by frame pointer while user space loads them. */
  struct unwind_proc* proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
  s->fp_only = !proc || proc->state != UNWIND_PROC_LOADED;
  if (s->fp_only) unwind_request(tgid, proc);
  bpf_loop(UNWIND_MAX_FRAMES + 1, unwind_step, 0, 0);
  /* A walk cut short after guessing by frame pointer says so, not how the guess failed. */
  if (s->unloaded && s->stack.end != UNWIND_END_ENTRY && s->stack.end != UNWIND_END_FP_ZERO)
    s->stack.end = UNWIND_END_UNLOADED;
  __u32 end = s->stack.end;
  if (end < UNWIND_NUM_ENDS) unwind_count(end);
  s->hash = (s->hash ^ ((__u64)end << 32 | s->stack.len)) * 0x100000001b3ull;
  return s;
}
