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

/* Whether a CPU's scratch keeps what it learned for its next walk. Only where no other walk can
 * start on the CPU before this one ends: profile.bpf.c's perf_event program runs with interrupts
 * off. A uprobe program (trace.bpf.c) can be preempted under CONFIG_PREEMPT, and another thread's
 * walk in between could leave another process's mappings remembered. */
#ifndef UNWIND_REMEMBER_ACROSS_WALKS
#define UNWIND_REMEMBER_ACROSS_WALKS 0
#endif
#define UNWIND_CACHED_MAPPINGS 4 /* a stack rarely crosses more objects than this */
#define UNWIND_CACHED_RULES 128  /* rules by pc: the return addresses of a hot path */
#define UNWIND_NO_RULE 0xffffffffu
#define PY_FRAME_BUF 128 /* bytes of a Python frame read at once (py_offsets.frame_read_size) */
/* Bytes below a frame read at once: 3.11+ frames sit next to each other in the thread's data
 * stack, each caller below its callee, so one read holds most of a deep chain's frames. */
#define PY_WINDOW 4096
/* Python frames put in per bpf_loop step: a deep chain's frames sit in one window, so most steps
 * read nothing and the loop's per-step work is what a frame would otherwise cost. */
#define PY_FRAMES_PER_STEP 8

enum unwind_py_state {
  UNWIND_PY_NATIVE = 0, /* walking native frames */
  UNWIND_PY_EMITTING,   /* the pc is in the eval function: its Python frames go in */
  UNWIND_PY_REPLACED,   /* they went in: the eval frame is unwound without being recorded */
};

/* A rule found before at a pc of the process a CPU knows (direct-mapped by pc). */
struct unwind_known_rule {
  __u64 pc;    /* the lookup address: a return address - 1, or where the thread was */
  __u32 rule;  /* index into unwind_rules, or UNWIND_NO_RULE */
  __u32 epoch; /* valid while it is the scratch's */
};

/* The walk in progress, per CPU (too big for the 512-byte stack); this object's own. It also
 * remembers, across walks, the process it walked last, the mappings and the rules it found in it:
 * while unwind_generation has not moved, a sample of the same process needs neither unwind_procs
 * nor the LPM trie (hash and trie lookups, of memory cold after a millisecond), and a frame at a
 * pc seen before needs no table search. */
struct unwind_scratch {
  struct unwind_stack stack; /* first: stored as is by profile.bpf.c */
  __u64 pc, sp, bp;
  __u64 hash;
  __u32 tgid;
  __u32 exact_pc; /* pc is where the thread was, not a return address (no -1 for the lookup) */
  __u32 have_mapping;
  __u32 fp_only;  /* the process's tables are not loaded: frame pointers only */
  __u32 unloaded; /* a frame was walked by frame pointer for want of its table */
  __u32 frames_cfi, frames_fp, frames_unloaded; /* counted once a walk, not once a frame */
  struct unwind_mapping mapping; /* the last one found: frames in one object reuse it */
  __u64 known_generation;        /* unwind_generation when known_tgid was found loaded */
  __u32 known_tgid;              /* 0: none */
  __u32 known_count;             /* mappings found in it, round robin */
  __u32 epoch;                   /* moves when known_tgid or known_generation change */
  __u32 reserved;
  struct unwind_mapping known[UNWIND_CACHED_MAPPINGS];
  struct unwind_known_rule rules[UNWIND_CACHED_RULES];
  /* Python (bpf/python.h): the process's interpreter, the next frame of the thread's chain to
   * put in the stack (0: none left), and where the walk is in an eval call's frames. */
  __u32 py;       /* py_proc is this process's */
  __u32 py_state; /* enum unwind_py_state */
  __u64 py_frame;
  __u64 py_tid; /* the thread walked (py_thread_id), and the candidate PyThreadState of a search */
  __u64 py_tstate;
  __u32 py_emitted, py_failed;
  __u32 py_emitted_here; /* frames put in for the eval call at the pc */
  __u32 py_known_tid;    /* the thread this CPU walked last in this process (0: none), and its */
  __u64 py_known_tstate; /* PyThreadState: its next sample skips python_threads */
  __u64 py_known_floor;  /* its data stack's lowest page found readable (0: none), py_read_frame */
  __u64 py_known_sp;     /* where its innermost eval call's sp was, and that call's _PyCFrame: */
  __u64 py_known_cframe; /* py_frame_at_eval (0: none) */
  __u64 py_cframe;       /* the _PyCFrame py_current_frame read the frame from (0: none) */
  __u32 py_cframe_check; /* py_known_cframe was read this walk: unwind_step checks it is a local
                          * of the eval frame at py_known_sp */
  __u32 py_lazy;         /* the thread's frame is found where the walk meets the eval function */
  struct py_proc py_proc;
  __u64 py_win_base; /* the window: [py_win_base, py_win_base + py_win_len) of the process */
  __u64 py_cur_off;  /* the frame being read: its offset in the window, when py_cur_in_win */
  __u32 py_win_len, py_cur_in_win;
  __u8 py_buf[PY_FRAME_BUF];
  __u8 py_win[PY_WINDOW];
  /* HotSpot (bpf/hotspot.h): the process's JVM, r13 where the thread was (the interpreter keeps
   * its bytecode pointer there), and the code blob read last. */
  __u32 hs;
  __u32 hs_emitted;
  __u64 r13;
  struct hs_proc hs_proc;
  __u8 hs_blob[HS_BLOB_READ];
  /* V8 (bpf/v8.h): the process's layout, and the JavaScript frames this walk put in. */
  __u32 v8; /* v8_proc is this process's */
  __u32 v8_emitted;
  struct v8_proc v8_proc;
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

/* The index of the rule in effect at `offset` of table `table` (of `pages` pages), or
 * UNWIND_NO_RULE when the table has no row there. Inner-map lookups are helper calls (the verifier
 * cannot inline a map it does not know): a page with one row costs two, and the search keeps the
 * row it lands on. */
static __always_inline __u32 unwind_find_rule(__u32 table, __u32 pages, __u64 offset) {
  __u64 page = offset >> UNWIND_PAGE_BITS;
  if (page >= pages) return UNWIND_NO_RULE;
  void* entries = bpf_map_lookup_elem(&unwind_tables, &table);
  if (!entries) return UNWIND_NO_RULE;
  __u32 page_index = 1 + (__u32)page;
  const struct unwind_page* p = bpf_map_lookup_elem(entries, &page_index);
  if (!p || p->count == 0) return UNWIND_NO_RULE;
  /* The last of the page's rows whose pc <= offset; the first always is (it holds at the page's
   * start). */
  __u32 lo = p->first, n = p->count;
  const struct unwind_row* best = bpf_map_lookup_elem(entries, &lo);
  if (!best) return UNWIND_NO_RULE;
  for (int step = 0; step < UNWIND_MAX_SEARCH && n > 1; ++step) {
    __u32 half = n / 2, mid = lo + half;
    const struct unwind_row* row = bpf_map_lookup_elem(entries, &mid);
    if (!row) return UNWIND_NO_RULE;
    if (row->pc <= offset) {
      lo = mid;
      best = row;
      n -= half;
    } else {
      n = half;
    }
  }
  return best->rule;
}

/* The rule at `pc` (a lookup address) in mapping `m`: remembered, or searched for and remembered
 * when the CPU knows this process. */
static __always_inline const struct unwind_rule* unwind_rule_at(struct unwind_scratch* s, __u64 pc,
                                                                const struct unwind_mapping* m) {
  int remember = s->known_tgid == s->tgid;
  __u32 slot = (__u32)(pc ^ (pc >> 7) ^ (pc >> 14)) & (UNWIND_CACHED_RULES - 1);
  struct unwind_known_rule* known = &s->rules[slot];
  __u32 index;
  if (remember && known->pc == pc && known->epoch == s->epoch) {
    index = known->rule;
  } else {
    index = unwind_find_rule(m->table, m->pages, pc - m->bias);
    if (remember) {
      known->pc = pc;
      known->rule = index;
      known->epoch = s->epoch;
    }
  }
  if (index == UNWIND_NO_RULE) return 0;
  return bpf_map_lookup_elem(&unwind_rules, &index);
}

static __always_inline const struct unwind_mapping* unwind_mapping_of(struct unwind_scratch* s,
                                                                      __u64 pc) {
  if (s->have_mapping && pc >= s->mapping.start && pc < s->mapping.end) return &s->mapping;
  int remember = s->known_tgid == s->tgid;
  if (remember) {
    for (__u32 i = 0; i < UNWIND_CACHED_MAPPINGS; ++i) {
      if (i >= s->known_count) break;
      if (pc >= s->known[i].start && pc < s->known[i].end) {
        s->mapping = s->known[i];
        s->have_mapping = 1;
        return &s->mapping;
      }
    }
  }
  struct unwind_mapping_key key = {
      .prefixlen = 96, .tgid = __builtin_bswap32(s->tgid), .address = __builtin_bswap64(pc)};
  const struct unwind_mapping* m = bpf_map_lookup_elem(&unwind_mappings, &key);
  if (!m) return 0;
  s->mapping = *m;
  s->have_mapping = 1;
  if (remember) {
    __u32 slot = s->known_count++ & (UNWIND_CACHED_MAPPINGS - 1);
    s->known[slot] = *m;
    if (s->known_count > UNWIND_CACHED_MAPPINGS) s->known_count = UNWIND_CACHED_MAPPINGS;
  }
  return &s->mapping;
}

/* A field of the Python frame being read (in the window, or in s->py_buf); 0 when the offset is
 * not within what was read. */
static __always_inline __u64 py_buf_u64(struct unwind_scratch* s, __u32 offset) {
  if (s->py_cur_in_win) {
    __u64 at = s->py_cur_off + offset;
    if (at > PY_WINDOW - 8) return 0;
    return *(__u64*)&s->py_win[at];
  }
  if (offset > PY_FRAME_BUF - 8) return 0;
  return *(__u64*)&s->py_buf[offset];
}
static __always_inline __u8 py_buf_u8(struct unwind_scratch* s, __u32 offset) {
  if (s->py_cur_in_win) {
    __u64 at = s->py_cur_off + offset;
    if (at >= PY_WINDOW) return 0;
    return s->py_win[at];
  }
  if (offset >= PY_FRAME_BUF) return 0;
  return s->py_buf[offset];
}

/* Makes the frame at s->py_frame (`size` bytes) readable: in the window, read anew when the frame
 * is not in it, else alone into s->py_buf. Whether it could be read. The window is the PY_WINDOW
 * bytes that end with the frame, but not below s->py_known_floor, the lowest page of the thread's
 * data stack found readable. A read that faults costs ~2 us here (a 3.5 KiB read that does not,
 * ~0.15 us), and the window of a chain near its chunk's start (a 3.11 thread's first chunk is a
 * mapping of its own) would fault at every sample: where it does, the frame's own page and on is
 * read instead, and that page becomes the floor. */
static __always_inline int py_read_frame(struct unwind_scratch* s, __u32 size) {
  __u64 f = s->py_frame, end = f + size;
  /* Before 3.11 frames are heap objects, each on its own: no window. */
  if (s->py_proc.off.frame_model == PY_FRAMES_PER_EVAL) {
    s->py_cur_in_win = 0;
    return !bpf_probe_read_user(s->py_buf, size, (const void*)f);
  }
  if (!(s->py_win_len && f >= s->py_win_base && end - s->py_win_base <= s->py_win_len)) {
    s->py_win_len = 0;
    __u64 floor = s->py_known_floor, base = end > PY_WINDOW ? end - PY_WINDOW : 0;
    if (floor && f >= floor && base < floor) base = floor;
    __u64 len = end - base;
    if (base && len <= PY_WINDOW &&
        !bpf_probe_read_user(s->py_win, (__u32)len, (const void*)base)) {
      s->py_win_base = base;
      s->py_win_len = (__u32)len;
    } else {
      base = f & ~0xfffull;
      len = end - base;
      if (len > 0 && len <= PY_WINDOW &&
          !bpf_probe_read_user(s->py_win, (__u32)len, (const void*)base)) {
        s->py_win_base = base;
        s->py_win_len = (__u32)len;
        s->py_known_floor = base;
      }
    }
  }
  if (s->py_win_len && f >= s->py_win_base && end - s->py_win_base <= s->py_win_len) {
    s->py_cur_in_win = 1;
    s->py_cur_off = f - s->py_win_base;
    return 1;
  }
  s->py_cur_in_win = 0;
  return !bpf_probe_read_user(s->py_buf, size, (const void*)f);
}

/* Is `lookup` (a pc, or a return address - 1) in the eval function? */
static __always_inline int py_in_eval(struct unwind_scratch* s, __u64 lookup) {
  for (int i = 0; i < PY_EVAL_RANGES; ++i)
    if (lookup >= s->py_proc.eval_start[i] && lookup < s->py_proc.eval_end[i]) return 1;
  return 0;
}

/* Records one value in the stack and its hash. */
static __always_inline void unwind_record(struct unwind_scratch* s, __u32 len, __u64 value) {
  if (len >= UNWIND_MAX_FRAMES) return;
  s->stack.frames[len] = value;
  s->stack.len = len + 1;
  s->hash = (s->hash ^ value) * 0x100000001b3ull;
  s->hash ^= s->hash >> 29;
}

/* Puts s->py_frame in the stack and moves to the frame that called it. Returns whether that frame
 * ended its eval call's frames (3.11's is_entry; before 3.11, every frame is its own call). A
 * 3.12+ shim frame (owned by the C stack) is not a function: it ends the call's frames unrecorded.
 * A frame that cannot be read ends the chain (counted). */
static __always_inline int py_emit(struct unwind_scratch* s) {
  const struct py_offsets* o = &s->py_proc.off;
  __u32 size = o->frame_read_size;
  if (size > PY_FRAME_BUF) size = PY_FRAME_BUF;
  if (size < 8 || !py_read_frame(s, size)) {
    s->py_failed = 1;
    s->py_frame = 0;
    return 1;
  }
  __u64 previous = py_buf_u64(s, o->frame_previous);
  __u32 model = o->frame_model;
  if (model == PY_FRAMES_OWNER && py_buf_u8(s, o->frame_entry) == o->owner_cstack) {
    s->py_frame = previous;
    return 1;
  }
  __u64 code = py_buf_u64(s, o->frame_code);
  __u32 instr = PY_INSTR_UNKNOWN;
  if (model == PY_FRAMES_PER_EVAL) {
    __s32 lasti = (__s32)py_buf_u64(s, o->frame_instr);
    if (lasti >= 0) {
      __u32 at = (__u32)lasti;
      if (o->version < 0x30a) at >>= 1; /* bytes before 3.10, code units from 3.10 */
      if (at < PY_INSTR_UNKNOWN) instr = at;
    }
  } else {
    __u64 first = code + o->code_adaptive, at = py_buf_u64(s, o->frame_instr);
    if (at >= first && (at - first) / 2 < PY_INSTR_UNKNOWN) instr = (at - first) / 2;
  }
  unwind_record(s, s->stack.len, PY_FRAME(code, instr));
  s->py_emitted++;
  s->py_frame = previous;
  if (model == PY_FRAMES_PER_EVAL) return 1;
  return model == PY_FRAMES_IS_ENTRY && py_buf_u8(s, o->frame_entry) != 0;
}

/* Puts in up to PY_FRAMES_PER_STEP frames from s->py_frame on, while the stack has room; with
 * `by_call`, only up to the end of the eval call's frames. Whether they ended (py_emit) or the
 * chain did. A frame already in the window (3.11+) is read there directly, as py_emit would, with
 * the offsets loaded once for the step; any other goes through py_emit. A loop, not unrolled:
 * one copy of each path keeps the step's code small. */
static __always_inline int py_emit_some(struct unwind_scratch* s, int by_call) {
  const struct py_offsets* o = &s->py_proc.off;
  __u32 model = o->frame_model, size = o->frame_read_size, cstack = o->owner_cstack;
  __u32 at_previous = o->frame_previous, at_code = o->frame_code, at_instr = o->frame_instr;
  __u32 at_entry = o->frame_entry;
  __u64 adaptive = o->code_adaptive;
  int direct = model != PY_FRAMES_PER_EVAL && size >= 8 && size <= PY_FRAME_BUF &&
               at_previous <= PY_FRAME_BUF - 8 && at_code <= PY_FRAME_BUF - 8 &&
               at_instr <= PY_FRAME_BUF - 8 && at_entry < PY_FRAME_BUF;
#pragma clang loop unroll(disable)
  for (int i = 0; i < PY_FRAMES_PER_STEP; ++i) {
    __u64 f = s->py_frame;
    if (!f) return 1;
    if (s->stack.len >= UNWIND_MAX_FRAMES) return 0;
    __u64 off = f - s->py_win_base;
    if (!direct || !s->py_win_len || f < s->py_win_base || off + size > s->py_win_len ||
        off > PY_WINDOW - PY_FRAME_BUF) {
      if (py_emit(s) && by_call) return 1;
      continue;
    }
    const __u8* frame = &s->py_win[off];
    __u8 entry = frame[at_entry];
    s->py_frame = *(const __u64*)(frame + at_previous);
    if (model == PY_FRAMES_OWNER && entry == cstack) { /* a shim: no function's */
      if (by_call) return 1;
      continue;
    }
    __u64 code = *(const __u64*)(frame + at_code), at = *(const __u64*)(frame + at_instr);
    __u64 first = code + adaptive;
    __u32 instr = PY_INSTR_UNKNOWN;
    if (at >= first && (at - first) / 2 < PY_INSTR_UNKNOWN) instr = (at - first) / 2;
    __u32 len = s->stack.len;
    barrier_var(
        len); /* so that unwind_record's bound is checked again where the verifier sees it */
    unwind_record(s, len, PY_FRAME(code, instr));
    s->py_emitted++;
    if (by_call && model == PY_FRAMES_IS_ENTRY && entry != 0) return 1;
  }
  return !s->py_frame;
}

/* Where a PyThreadState says which thread it is: native_thread_id, the kernel's tid (3.11+), or
 * else thread_id, pthread_self() (py_proc.task_fsbase says which). */
static __always_inline __u32 py_thread_id_at(struct unwind_scratch* s) {
  return s->py_proc.task_fsbase ? s->py_proc.off.tstate_thread_id
                                : s->py_proc.off.tstate_native_thread_id;
}

/* What the current thread's PyThreadState holds at py_thread_id_at: its tid, or (3.8-3.10) the
 * base its fs points to, which glibc and musl's pthread_self() returns on x86-64; the kernel keeps
 * it in the task (set by clone's tls or arch_prctl(ARCH_SET_FS)). 0 when it cannot be read. */
static __always_inline __u64 py_thread_id(struct unwind_scratch* s, __u32 tid) {
  if (!s->py_proc.task_fsbase) return tid;
  __u64 fsbase = 0;
  if (bpf_probe_read_kernel(&fsbase, sizeof(fsbase),
                            (const void*)(bpf_get_current_task() + s->py_proc.task_fsbase)))
    return 0;
  return fsbase;
}

/* One candidate of the interpreter's thread list: bpf_loop's callback. */
static long py_find_thread_step(__u64 index, void* unused) {
  __u32 zero = 0;
  struct unwind_scratch* s = bpf_map_lookup_elem(&unwind_scratch, &zero);
  if (!s || s->py_tstate == 0) return 1;
  __u64 id = 0, next = 0;
  if (unwind_read(&id, s->py_tstate + py_thread_id_at(s))) {
    s->py_tstate = 0;
    return 1;
  }
  if (id == s->py_tid) return 1; /* found: py_tstate is it */
  if (unwind_read(&next, s->py_tstate + s->py_proc.off.tstate_next)) next = 0;
  s->py_tstate = next;
  return next == 0;
}

/* Whether `tstate` is the thread's (it reads `id` at py_thread_id_at), and its frame field in
 * *frame. The two fields in one read where they are near each other (3.11: 56 and 160); the
 * read's size is fixed, which the verifier needs, so it falls back to two reads when the thread
 * state's end is near the end of its mapping. */
static __always_inline int py_read_tstate(struct unwind_scratch* s, __u64 tstate, __u64 id,
                                          __u64* frame) {
  const struct py_offsets* o = &s->py_proc.off;
  __u32 id_at = py_thread_id_at(s), frame_at = o->tstate_frame;
  __u32 lo = id_at < frame_at ? id_at : frame_at;
  __u32 hi = id_at < frame_at ? frame_at : id_at;
  __u64 read = 0;
  s->py_cur_in_win = 0; /* py_buf_u64 reads s->py_buf */
  if (hi - lo <= PY_FRAME_BUF - 8 &&
      !bpf_probe_read_user(s->py_buf, PY_FRAME_BUF, (const void*)(tstate + lo))) {
    read = py_buf_u64(s, id_at - lo);
    *frame = py_buf_u64(s, frame_at - lo);
  } else if (unwind_read(&read, tstate + id_at) || unwind_read(frame, tstate + frame_at)) {
    return 0;
  }
  return read == id;
}

/* The current thread's innermost Python frame, or 0 (a thread that runs no Python). Its
 * PyThreadState is the one this CPU found last when the thread is the same (profile.bpf.c), else
 * python_threads', else searched for; each checked by what it says of its thread (py_thread_id). */
static __always_inline __u64 py_current_frame(struct unwind_scratch* s) {
  const struct py_offsets* o = &s->py_proc.off;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u64 id = py_thread_id(s, tid);
  if (!id) {
    unwind_count(UNWIND_STAT_PY_NO_THREAD);
    return 0;
  }
  s->py_tid = id;
  __u64 tstate = 0, frame = 0;
  if (UNWIND_REMEMBER_ACROSS_WALKS && s->py_known_tid == tid) {
    tstate = s->py_known_tstate;
  } else {
    __u64* cached = bpf_map_lookup_elem(&python_threads, &tid);
    if (cached) tstate = *cached;
  }
  if (!tstate || !py_read_tstate(s, tstate, id, &frame)) {
    __u64 interp = 0;
    if (unwind_read(&interp, s->py_proc.runtime + o->runtime_interp_head) || interp == 0 ||
        unwind_read(&s->py_tstate, interp + o->interp_threads_head)) {
      unwind_count(UNWIND_STAT_PY_NO_THREAD);
      return 0;
    }
    bpf_loop(PY_MAX_THREADS, py_find_thread_step, 0, 0);
    tstate = s->py_tstate;
    if (tstate == 0) {
      unwind_count(UNWIND_STAT_PY_NO_THREAD);
      return 0;
    }
    bpf_map_update_elem(&python_threads, &tid, &tstate, BPF_ANY);
    if (!py_read_tstate(s, tstate, id, &frame)) return 0;
  }
  if (!UNWIND_REMEMBER_ACROSS_WALKS || s->py_known_tid != tid) {
    s->py_known_floor = 0;
    s->py_known_cframe = 0;
  }
  s->py_known_tid = tid;
  s->py_known_tstate = tstate;
  if (o->cframe_current_frame != PY_NO_OFFSET && frame) {
    s->py_cframe = frame;
    if (unwind_read(&frame, frame + o->cframe_current_frame)) return 0;
  }
  return frame;
}

/* The thread's innermost Python frame, found where the walk meets the eval function with the
 * stack pointer at `sp` (3.11, 3.12: the eval call keeps its _PyCFrame in its own native frame,
 * and the thread state points to the innermost call's). Where this CPU's last walk of the thread
 * met it at the same sp, the call there is the same function at the same depth, whose _PyCFrame
 * is at the same address: read there, without the thread state (one read of a line the thread
 * uses, instead of ~3 cold ones; 0.5-0.8 µs a sample here). In a prologue or an epilogue the sp
 * differs, and the thread state is read as before. */
static __always_inline __u64 py_frame_at_eval(struct unwind_scratch* s, __u64 sp) {
  const struct py_offsets* o = &s->py_proc.off;
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  if (UNWIND_REMEMBER_ACROSS_WALKS && s->py_known_tid == tid && s->py_known_cframe &&
      s->py_known_sp == sp && o->cframe_current_frame != PY_NO_OFFSET) {
    __u64 frame = 0;
    if (unwind_read(&frame, s->py_known_cframe + o->cframe_current_frame)) return 0;
    return frame;
  }
  s->py_cframe = 0;
  __u64 frame = py_current_frame(s);
  if (UNWIND_REMEMBER_ACROSS_WALKS && s->py_cframe) {
    s->py_known_sp = sp;
    s->py_known_cframe = s->py_cframe;
    s->py_cframe_check = 1;
  }
  return frame;
}

/* V8 (bpf/v8.h): the value to record for a frame walked by frame pointer at `pc` whose frame
 * pointer is `fp`: a JavaScript frame's tagged value when its function slot holds a JSFunction
 * whose SharedFunctionInfo checks out, else the pc. `jit`: the pc is in JIT code (an anonymous
 * mapping), not in V8's embedded builtins. */
static __always_inline __u64 v8_frame_value(struct unwind_scratch* s, __u64 pc, __u64 fp, int jit) {
  const struct v8_offsets* o = &s->v8_proc.off;
  __u64 context = 0, function = 0, sfi = 0, map = 0, slot = 0;
  __u16 type = 0;
  if (fp == 0 || unwind_read(&context, fp + (__s64)o->fp_context)) return pc;
  /* A Smi there is a typed frame's marker (entry, exit, stub): no function of its own. */
  if ((context & V8_SMI_TAG_MASK) == 0) return pc;
  if (unwind_read(&function, fp + (__s64)o->fp_function) ||
      (function & V8_HEAP_OBJECT_TAG_MASK) != V8_HEAP_OBJECT_TAG)
    return pc;
  function -= V8_HEAP_OBJECT_TAG;
  if (unwind_read(&sfi, function + o->function_shared) ||
      (sfi & V8_HEAP_OBJECT_TAG_MASK) != V8_HEAP_OBJECT_TAG)
    return pc;
  sfi -= V8_HEAP_OBJECT_TAG;
  if (unwind_read(&map, sfi + o->heap_object_map) ||
      (map & V8_HEAP_OBJECT_TAG_MASK) != V8_HEAP_OBJECT_TAG)
    return pc;
  if (bpf_probe_read_user(&type, sizeof(type),
                          (const void*)(map - V8_HEAP_OBJECT_TAG + o->map_instance_type)) ||
      type != o->type_shared_function)
    return pc;
  /* An interpreted frame holds its bytecode offset as a Smi and its BytecodeArray above it;
   * compiled code holds a tagged pointer or a spill there (which may look like a Smi). */
  __u32 kind = jit ? V8_KIND_COMPILED : V8_KIND_BUILTIN, offset = V8_OFFSET_UNKNOWN;
  __u64 bytecode = 0;
  if (!unwind_read(&slot, fp + (__s64)o->fp_bytecode_offset) && (slot & V8_SMI_TAG_MASK) == 0 &&
      slot != 0 && !unwind_read(&bytecode, fp + (__s64)o->fp_bytecode_array) &&
      (bytecode & V8_HEAP_OBJECT_TAG_MASK) == V8_HEAP_OBJECT_TAG &&
      !unwind_read(&map, bytecode - V8_HEAP_OBJECT_TAG + o->heap_object_map) &&
      (map & V8_HEAP_OBJECT_TAG_MASK) == V8_HEAP_OBJECT_TAG &&
      !bpf_probe_read_user(&type, sizeof(type),
                           (const void*)(map - V8_HEAP_OBJECT_TAG + o->map_instance_type)) &&
      type == o->type_bytecode_array) {
    __s64 at = (__s64)slot >> V8_SMI_SHIFT;
    at -= (__s64)o->bytecode_data - (__s64)V8_HEAP_OBJECT_TAG;
    kind = V8_KIND_INTERPRETED;
    if (at >= 0 && at < V8_OFFSET_UNKNOWN) offset = (__u32)at;
  }
  s->v8_emitted++;
  return V8_FRAME(sfi, kind, offset);
}

/* Ends the walk with `why`. */
static __always_inline long unwind_end(struct unwind_scratch* s, __u32 why) {
  s->stack.end = why;
  return 1;
}

/* ---- HotSpot (bpf/hotspot.h) ---- */

/* The code blob that holds `pc`, through its heap's segment map: each used segment's byte says
 * how many segments back to go, 0 at a blob's first. 0 when the pc is in no heap or a free one. */
static __always_inline __u64 hs_find_blob(struct unwind_scratch* s, __u64 pc) {
  for (int h = 0; h < HS_MAX_HEAPS; ++h) {
    const struct hs_heap* heap = &s->hs_proc.heaps[h];
    if (pc < heap->low || pc >= heap->high) continue;
    __u32 shift = heap->shift & 31;
    __u64 segment = (pc - heap->low) >> shift;
    __u8 hop = HS_SEGMAP_FREE;
    for (int i = 0; i < HS_SEGMAP_STEPS; ++i) {
      if (bpf_probe_read_user(&hop, 1, (const void*)(heap->segmap + segment))) return 0;
      if (hop == 0 || hop == HS_SEGMAP_FREE || hop > segment) break;
      segment -= hop;
    }
    if (hop != 0) return 0;
    return heap->low + (segment << shift) + s->hs_proc.off.heapblock_size;
  }
  return 0;
}

static __always_inline __s64 hs_blob_s32(struct unwind_scratch* s, __u32 offset) {
  if (offset > HS_BLOB_READ - 4) return 0;
  return *(__s32*)&s->hs_blob[offset];
}
static __always_inline __u64 hs_blob_u64(struct unwind_scratch* s, __u32 offset) {
  if (offset > HS_BLOB_READ - 8) return 0;
  return *(__u64*)&s->hs_blob[offset];
}

static __always_inline int hs_in_code(struct unwind_scratch* s, __u64 pc) {
  return pc >= s->hs_proc.code_start && pc < s->hs_proc.code_end;
}

/* An interpreted frame: rbp-based, its Method* and bytecode pointer in slots below rbp. */
static __always_inline long hs_interpreted(struct unwind_scratch* s, __u32 len, __u64 sp, __u64 bp,
                                           int top) {
  const struct hs_offsets* o = &s->hs_proc.off;
  __u64 method = 0, bcp = 0, sender_sp = 0, pair[2], constmethod = 0;
  if (bp < sp || bp - sp > (1u << 20) || unwind_read(&method, bp + 8 * (__s64)o->interp_method) ||
      unwind_read(&sender_sp, bp + 8 * (__s64)o->interp_sender_sp) ||
      bpf_probe_read_user(pair, sizeof(pair), (const void*)bp)) {
    unwind_count(UNWIND_STAT_HS_BAD_INTERP);
    return unwind_end(s, UNWIND_END_READ_FAILED);
  }
  /* Where the thread was, the bytecode pointer is live in r13; a caller's is saved in its slot. */
  if (top)
    bcp = s->r13;
  else if (unwind_read(&bcp, bp + 8 * (__s64)o->interp_bcp))
    bcp = 0;
  __u32 bci = HS_BCI_UNKNOWN;
  if (!unwind_read(&constmethod, method + o->method_const)) {
    __u64 first = constmethod + o->constmethod_size;
    if (bcp >= first && bcp - first < HS_BCI_UNKNOWN) bci = (__u32)(bcp - first);
  }
  unwind_record(s, len, HS_FRAME_INTERP(method, bci));
  s->hs_emitted++;
  /* Its class's mirror tells a method of a class loaded since at the same Method* apart
   * (bpf/hotspot.h): into the hash, not the frame. */
  __u64 mirror = 0;
  if (o->interp_mirror && !unwind_read(&mirror, bp + 8 * (__s64)o->interp_mirror)) {
    s->hash = (s->hash ^ mirror) * 0x100000001b3ull;
    s->hash ^= s->hash >> 29;
  }
  if (sender_sp <= sp) return unwind_end(s, UNWIND_END_BAD_FRAME);
  s->pc = pair[1];
  s->sp = sender_sp; /* the caller's sp before this frame extended it (locals) */
  s->bp = pair[0];
  s->exact_pc = 0;
  return 0;
}

/* Where a compiled frame's caller's sp is when the thread is inside the frame's prologue or
 * epilogue, where the frame is only partly built: 8 (only the return address is pushed) or 16
 * (rbp too, which is then at sp); 0 when the frame is whole. x86_64 nmethods build their frame
 * as [stack bang] push rbp; sub rsp, N and take it down as add rsp, N; pop rbp; [return poll:
 * cmp rsp, [r15 + d]; ja slow]; ret (MachPrologNode/MachEpilogNode, C1's build_frame). */
static __always_inline __u32 hs_partial_frame(struct unwind_scratch* s, __u64 pc, __u64 code_begin,
                                              __s64 frame_complete) {
  __u8 c[24]; /* c[8] is at pc */
  if (bpf_probe_read_user(c, sizeof(c), (const void*)(pc - 8))) return 0;
  /* The prologue's own instructions, wherever the blob says its frame is complete. Two forms:
   * push rbp; sub rsp, N (C1, C2's bigger frames) and sub rsp, N; mov [rsp + N - 8], rbp (C2's
   * small frames). At the sub, rbp is pushed only in the first; right after it, the frame is
   * whole (its blob's size); at push rbp or before (stack bang), only the return address. */
  if (c[8] == 0x48 && (c[9] == 0x83 || c[9] == 0x81) && c[10] == 0xec) return c[7] == 0x55 ? 16 : 8;
  if (c[8] == 0x48 && c[9] == 0x89 && c[10] == 0xe5) return 16; /* mov rbp, rsp after push */
  if (c[8] == 0x55) return 8;
  if ((c[4] == 0x48 && c[5] == 0x83 && c[6] == 0xec) ||
      (c[1] == 0x48 && c[2] == 0x81 && c[3] == 0xec))
    return 0;
  if (frame_complete > 0 && pc < code_begin + (__u64)frame_complete) return 8;
  if (c[8] == 0xc3) return 8;                                                     /* ret */
  if (c[8] == 0x5d && (c[9] == 0xc3 || c[16] == 0x0f || c[9] == 0x49)) return 16; /* pop rbp */
  if (c[7] == 0x5d && (c[8] == 0x49 || c[8] == 0xc3)) return 8; /* after pop: the poll */
  if (c[0] == 0x5d && c[8] == 0x0f && c[9] == 0x87 && c[14] == 0xc3) return 8; /* its ja */
  return 0;
}

/* One frame of JIT code: recorded as its code blob and pc, then unwound by the blob's frame
 * size (compiled code keeps no frame pointer), or by rbp for the blobs that keep one. Returns
 * 0 to go on, 1 to end, 2 when the blob was not found (the native walk goes on by frame
 * pointer). */
static __always_inline long hs_step(struct unwind_scratch* s, __u32 len, __u64 pc, __u64 sp,
                                    __u64 bp) {
  int top = s->exact_pc;
  if (pc >= s->hs_proc.interp_start && pc < s->hs_proc.interp_end)
    return hs_interpreted(s, len, sp, bp, top);
  __u64 blob = hs_find_blob(s, pc);
  if (!blob || bpf_probe_read_user(s->hs_blob, HS_BLOB_READ, (const void*)blob)) {
    unwind_count(UNWIND_STAT_HS_NO_BLOB);
    return 2;
  }
  const struct hs_offsets* o = &s->hs_proc.off;
  __u32 name = 0;
  bpf_probe_read_user(&name, sizeof(name), (const void*)hs_blob_u64(s, o->blob_name));
  if (name == HS_NAME_INTERPRETER) return hs_interpreted(s, len, sp, bp, top);
  __u64 code_begin = o->code_begin_is_offset ? blob + (__u64)hs_blob_s32(s, o->blob_code_begin)
                                             : hs_blob_u64(s, o->blob_code_begin);
  __s64 words = hs_blob_s32(s, o->blob_frame_size);
  __s64 complete = hs_blob_s32(s, o->blob_frame_complete);
  if (o->frame_complete_bytes == 2) complete = (__s16)complete;
  /* An nmethod's generation (bpf/hotspot.h): its compile id, 4 bytes past those read. */
  __u32 gen = 0;
  if (name == HS_NAME_NMETHOD || name == HS_NAME_NATIVE)
    bpf_probe_read_user(&gen, sizeof(gen), (const void*)(blob + o->nm_compile_id));
  unwind_record(s, len,
                HS_FRAME_CODE(top ? UNWIND_FRAME_TAG_HS_PC : UNWIND_FRAME_TAG_HS_RETURN,
                              s->hs_proc.code_start, blob, gen, pc - blob));
  s->hs_emitted++;

  __u64 cfa = 0, pair[2], caller_bp = bp;
  __u32 partial = top ? hs_partial_frame(s, pc, code_begin, complete) : 0;
  if (name == HS_NAME_VTABLE) partial = 8;
  if (partial) {
    cfa = sp + partial;
  } else if (words <= 0 || name == HS_NAME_NATIVE) {
    /* No frame size (StubRoutines, the call stub) or a JNI wrapper: they keep rbp. */
    if (bp < sp) return unwind_end(s, UNWIND_END_BAD_FRAME);
    cfa = bp + 16;
  } else {
    cfa = sp + 8 * (__u64)words;
    /* The return address should lead back into JIT code: compiled Java code is only called from
     * it (stubs, the interpreter, other nmethods). A frame that pushed words beyond its size
     * has it higher up: search a few. */
    __u64 ra = 0;
    int found = 0;
    for (int i = 0; i < HS_RA_SEARCH_SLOTS; ++i) {
      if (unwind_read(&ra, cfa - 8)) break;
      if (hs_in_code(s, ra)) {
        found = 1;
        break;
      }
      cfa += 8;
    }
    if (!found) {
      unwind_count(UNWIND_STAT_HS_NO_RETURN);
      return unwind_end(s, UNWIND_END_BAD_FRAME);
    }
  }
  if (cfa <= sp || bpf_probe_read_user(pair, sizeof(pair), (const void*)(cfa - 16)))
    return unwind_end(s, UNWIND_END_READ_FAILED);
  /* rbp is saved next to the return address, except where only the return address is pushed */
  if (partial != 8) caller_bp = pair[0];
  s->pc = pair[1];
  s->sp = cfa;
  s->bp = caller_bp;
  s->exact_pc = 0;
  return 0;
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
  /* In the eval function, with Python frames left: they stand for this native frame, innermost
   * first, PY_FRAMES_PER_STEP a step; then the eval frame itself is unwound unrecorded. */
  if (s->py_state == UNWIND_PY_NATIVE && (s->py_frame || s->py_lazy) &&
      py_in_eval(s, s->exact_pc ? pc : pc - 1)) {
    if (s->py_lazy) {
      s->py_lazy = 0;
      s->py_frame = py_frame_at_eval(s, sp);
    }
    if (s->py_frame) {
      s->py_state = UNWIND_PY_EMITTING;
      s->py_emitted_here = 0;
    }
  }
  if (s->py_state == UNWIND_PY_EMITTING) {
    __u32 before = s->py_emitted;
    int done = py_emit_some(s, 1);
    if (s->py_emitted != before) s->py_emitted_here = 1;
    if (done || !s->py_frame)
      s->py_state = s->py_emitted_here ? UNWIND_PY_REPLACED : UNWIND_PY_NATIVE;
    if (s->py_state != UNWIND_PY_NATIVE) return 0;
  }
  /* JIT code of a JVM: its Java frames, unwound by the JVM's own description of them. */
  if (s->hs && s->py_state == UNWIND_PY_NATIVE && pc >= s->hs_proc.code_start &&
      pc < s->hs_proc.code_end) {
    long done = hs_step(s, len, pc, sp, bp);
    if (done != 2) return done;
  }
  int record = 1;
  if (s->py_state == UNWIND_PY_REPLACED) {
    s->py_state = UNWIND_PY_NATIVE;
    record = 0;
  }

  /* Without its object's table (not loaded yet, or none), a frame is walked by frame pointer:
   * right for code that keeps them, and counted apart. */
  const struct unwind_rule* rule = 0;
  const struct unwind_mapping* m = s->fp_only ? 0 : unwind_mapping_of(s, pc);
  if (!s->fp_only && !m) {
    struct unwind_proc* proc = bpf_map_lookup_elem(&unwind_procs, &s->tgid);
    unwind_request(s->tgid, proc); /* a dlopen, or JIT code mapped since the maps were read */
  }
  if (!m || m->table == UNWIND_TABLE_PENDING) {
    s->frames_unloaded++;
    s->unloaded = 1;
  } else if (m->table != UNWIND_TABLE_FP) {
    /* A return address is the instruction after a call: the call itself is at pc - 1 (a call
     * that does not return may be the last instruction of its function). */
    __u64 lookup = s->exact_pc ? pc : pc - 1;
    rule = unwind_rule_at(s, lookup, m);
  }
  __u8 kind = rule ? rule->cfa_kind : UNWIND_CFA_NONE;
  __u64 cfa, ra, caller_bp = bp;
  /* Recorded once its rule is known: a V8 frame is code with no CFI (bpf/v8.h). */
  if (record)
    unwind_record(s, len,
                  s->v8 && kind == UNWIND_CFA_NONE
                      ? v8_frame_value(s, pc, bp, m && m->table == UNWIND_TABLE_FP)
                      : pc);

  switch (kind) {
    case UNWIND_CFA_END:
      return unwind_end(s, UNWIND_END_ENTRY);
    case UNWIND_CFA_SIGNAL:
      /* The kernel's signal frame: the interrupted rsp, rbp and pc in the saved context. */
      if (!rule || unwind_read(&cfa, sp + rule->cfa_offset) ||
          unwind_read(&caller_bp, sp + rule->rbp_offset) || unwind_read(&ra, sp + rule->ra_offset))
        return unwind_end(s, UNWIND_END_READ_FAILED);
      s->frames_cfi++;
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
      if (m && m->table != UNWIND_TABLE_PENDING) s->frames_fp++;
      break;
    case UNWIND_CFA_RSP:
    case UNWIND_CFA_RBP:
    case UNWIND_CFA_PLT:
      if (!rule) return unwind_end(s, UNWIND_END_UNSUPPORTED);
      cfa = (kind == UNWIND_CFA_RBP ? bp : sp) + (__s64)rule->cfa_offset;
      /* A PLT entry has pushed once more (lazy binding's index) from byte rbp_offset on: 11, or
       * 10 in an IBT PLT. */
      if (kind == UNWIND_CFA_PLT && (pc & 15) >= (__u64)rule->rbp_offset) cfa += 8;
      if (rule->rbp_kind == UNWIND_RBP_AT_CFA && kind != UNWIND_CFA_PLT &&
          rule->rbp_offset + 8 == rule->ra_offset) {
        /* rbp pushed first, next to the return address (the usual prologue): one read */
        __u64 pair[2];
        if (bpf_probe_read_user(pair, sizeof(pair), (const void*)(cfa + (__s64)rule->rbp_offset)))
          return unwind_end(s, UNWIND_END_READ_FAILED);
        caller_bp = pair[0];
        ra = pair[1];
      } else {
        if (unwind_read(&ra, cfa + (__s64)rule->ra_offset))
          return unwind_end(s, UNWIND_END_READ_FAILED);
        if (rule->rbp_kind == UNWIND_RBP_AT_CFA && kind != UNWIND_CFA_PLT) {
          if (unwind_read(&caller_bp, cfa + (__s64)rule->rbp_offset))
            return unwind_end(s, UNWIND_END_READ_FAILED);
        } else if (rule->rbp_kind == UNWIND_RBP_UNDEFINED) {
          caller_bp = 0;
        }
      }
      s->frames_cfi++;
      break;
    default:
      return unwind_end(s, UNWIND_END_UNSUPPORTED);
  }
  /* The stack grows down: a caller's frame is above. Anything else is a broken chain. */
  if (cfa <= sp) return unwind_end(s, UNWIND_END_BAD_FRAME);
  /* The eval frame whose Python frames went in: the _PyCFrame py_frame_at_eval read from the
   * thread state is kept for the next walks at this sp only if it is a local of this frame. The
   * thread state names the caller's while the call begins (before it sets its own) and ends
   * (after it restored the caller's), at this sp: kept, every later walk at this sp would put the
   * caller's Python frames in place of the call's (a ctypes callback's caller instead of the
   * callback) until one met the eval function at another sp. */
  if (!record && s->py_cframe_check) {
    s->py_cframe_check = 0;
    if (s->py_known_sp == sp && (s->py_known_cframe < sp || s->py_known_cframe >= cfa))
      s->py_known_cframe = 0;
  }
  s->pc = ra;
  s->sp = cfa;
  s->bp = caller_bp;
  s->exact_pc = 0;
  return 0;
}

/* Puts the rest of the Python frames in, PY_FRAMES_PER_STEP a call: bpf_loop's callback. */
static long py_drain_step(__u64 index, void* unused) {
  __u32 zero = 0;
  struct unwind_scratch* s = bpf_map_lookup_elem(&unwind_scratch, &zero);
  if (!s || !s->py_frame || s->stack.len >= UNWIND_MAX_FRAMES) return 1;
  return py_emit_some(s, 0);
}

/* Walks the user stack of the current process from (pc, sp, bp), the registers where it was
 * interrupted. The result is in the returned scratch: its stack (frames, end reason) and its
 * hash (of the frames and the end, for keying). Null only when the scratch map is missing. */
static __always_inline struct unwind_scratch* unwind_user_stack(__u32 tgid, __u64 pc, __u64 sp,
                                                                __u64 bp, __u64 r13) {
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
  s->frames_cfi = s->frames_fp = s->frames_unloaded = 0;
  s->hash = 0xcbf29ce484222325ull;
  s->py_state = UNWIND_PY_NATIVE;
  s->py_frame = 0;
  s->py_emitted = s->py_failed = 0;
  s->py_cframe_check = 0;
  s->py_win_len = 0; /* the process's memory has moved on since the last walk */
  s->r13 = r13;
  s->hs_emitted = 0;
  s->v8_emitted = 0;

  /* A process whose tables are not loaded (never seen, or exec'd: its old ones no longer apply)
   * is walked by frame pointer while user space loads them. */
  __u64 generation = unwind_generation_now();
  if (!UNWIND_REMEMBER_ACROSS_WALKS || s->known_tgid != tgid || s->known_generation != generation) {
    struct unwind_proc* proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
    s->fp_only = !proc || proc->state != UNWIND_PROC_LOADED;
    if (s->fp_only) unwind_request(tgid, proc);
    /* What this CPU knew was of another process, or has changed since. */
    s->known_tgid = s->fp_only || !UNWIND_REMEMBER_ACROSS_WALKS ? 0 : tgid;
    s->known_generation = generation;
    s->known_count = 0;
    s->epoch++; /* every rule remembered is of before */
    /* A CPython process: its interpreter's addresses and offsets (bpf/python.h). */
    struct py_proc* py = bpf_map_lookup_elem(&python_procs, &tgid);
    s->py = py != 0;
    if (py) s->py_proc = *py;
    s->py_known_tid = 0;
    /* A HotSpot JVM: its code heaps and offsets (bpf/hotspot.h). */
    struct hs_proc* hs = bpf_map_lookup_elem(&hotspot_procs, &tgid);
    s->hs = hs != 0;
    if (hs) s->hs_proc = *hs;
    /* A V8 process: its frame layout (bpf/v8.h). */
    struct v8_proc* v8 = bpf_map_lookup_elem(&v8_procs, &tgid);
    s->v8 = v8 != 0;
    if (v8) s->v8_proc = *v8;
  }
  /* Where the walk meets the eval function, the thread's frame is found there; a walk that does
   * not meet it reads the thread state after. */
  s->py_lazy = s->py;
  bpf_loop(UNWIND_MAX_FRAMES + 1, unwind_step, 0, 0);
  if (s->py_lazy) {
    s->py_lazy = 0;
    s->py_frame = py_current_frame(s);
  }
  /* Python frames whose eval calls the native walk did not meet (it ended early, or the eval
   * function has a part no symbol shows): at the outer end, in order, counted. */
  if (s->py_frame && s->stack.len < UNWIND_MAX_FRAMES) {
    __u32 before = s->py_emitted;
    bpf_loop(UNWIND_MAX_FRAMES / PY_FRAMES_PER_STEP + 1, py_drain_step, 0, 0);
    unwind_count_n(UNWIND_STAT_PY_UNMATCHED, s->py_emitted - before);
  }
  if (s->py_emitted) unwind_count_n(UNWIND_STAT_PY_FRAMES, s->py_emitted);
  if (s->hs_emitted) unwind_count_n(UNWIND_STAT_HS_FRAMES, s->hs_emitted);
  if (s->py_failed) unwind_count(UNWIND_STAT_PY_READ_FAILED);
  if (s->v8_emitted) unwind_count_n(UNWIND_STAT_V8_FRAMES, s->v8_emitted);
  /* A walk cut short after guessing by frame pointer says so, not how the guess failed. */
  if (s->unloaded && s->stack.end != UNWIND_END_ENTRY && s->stack.end != UNWIND_END_FP_ZERO)
    s->stack.end = UNWIND_END_UNLOADED;
  __u32 end = s->stack.end;
  if (end < UNWIND_NUM_ENDS) unwind_count(end);
  if (s->frames_cfi) unwind_count_n(UNWIND_STAT_FRAMES_CFI, s->frames_cfi);
  if (s->frames_fp) unwind_count_n(UNWIND_STAT_FRAMES_FP, s->frames_fp);
  if (s->frames_unloaded) unwind_count_n(UNWIND_STAT_FRAMES_UNLOADED, s->frames_unloaded);
  s->hash = (s->hash ^ ((__u64)end << 32 | s->stack.len)) * 0x100000001b3ull;
  return s;
}
