// SPDX-License-Identifier: GPL-2.0
// The one generic tracing program: every uprobe/uretprobe/USDT site runs the recipe its bpf
// cookie names (see trace.h).
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "target_filter.h"
#include "trace.h"
#include "unwind.bpf.h"

/* Wake the reader only once this many bytes are pending (0: on every event). A wake-up costs the
 * target an irq_work and the reader a context switch per event; user space polls on a timer
 * for the rest (TraceProgram::kPollPeriodMs). */
const volatile __u64 wakeup_bytes = 0;

/* What the loaded recipes use, set by the loader before load (TraceProgram::load): the OR of their
 * flags, and one bit per opcode they hold (TRACE_OP_BIT). The verifier reads frozen read-only data
 * as constants and does not verify code behind a branch that cannot be taken: a session that
 * turns a feature off does not pay for verifying it (the unwinder, aggregation, return probes,
 * string reads of up to 8 KiB: ~5,000 instructions and ~77 ms of BPF_PROG_LOAD when all are on).
 * A recipe that uses what was turned off is dropped as malformed. Everything is on by default. */
const volatile __u32 trace_flags_used = ~0u;
const volatile __u64 trace_ops_used = ~0ull;
_Static_assert(TOP_NUM_OPS <= 64, "trace_ops_used has one bit per opcode");

/* What each map costs (the loader sizes them by what the session uses):
 *   recipes   sizeof(uscope_recipe) (1.2 KiB) per recipe
 *   counters  8 bytes x TRACE_NUM_COUNTERS per recipe, per CPU
 *   events    the ring: 1 MiB unless --buffer-kb
 *   entries   ~100 bytes x 65536 (preallocated) with a return probe that needs its entry, else 1
 *   call_depth ~40 bytes x 16384 (preallocated) with TRACE_F_DEPTH, else 1
 *   latency   512 bytes per TRACE_F_HISTOGRAM recipe, else 1 row
 *   aggregates ~850 bytes per distinct key, allocated as keys appear (up to --max-keys), else 1
 *   stack_traces 1 KiB per distinct user stack with a `ustack` key, else 1 (preallocated)
 *   scratches ~17 KiB per CPU, x (1 + TRACE_SLEEP_SLOTS) with a sleepable program */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1); /* resized to the number of recipes before load */
  __type(key, __u32);
  __type(value, struct uscope_recipe);
} recipes SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, TRACE_NUM_COUNTERS); /* resized: TRACE_NUM_COUNTERS per recipe */
  __type(key, __u32);
  __type(value, __u64);
} counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20); /* 1 MiB: user space drains it as soon as data arrives */
} events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 65536);
  __type(key, struct uscope_entry_key);
  __type(value, struct uscope_entry_value);
} entries SEC(".maps");

/* TRACE_F_DEPTH: each thread's depth of calls entered and not yet returned (only this thread's
 * runs change it, so no atomics). LRU: a thread that exits mid-call leaves its row to age out. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1); /* resized when a recipe has TRACE_F_DEPTH */
  __type(key, __u64);
  __type(value, __u64);
} call_depth SEC(".maps");

/* Masks an index so that the verifier sees the bound even when clang drops a redundant AND. */
#define BOUNDED(x, pow2)                                  \
  ({                                                      \
    __u64 __v = (x);                                      \
    asm volatile("%0 &= %1" : "+r"(__v) : "i"((pow2)-1)); \
    __v;                                                  \
  })

#define EEXIST 17 /* bpf_get_stackid(): the bucket holds another stack (no errno.h in BPF) */

#define DROP_ERROR 1    /* malformed recipe or event too big */
#define DROP_FILTERED 2 /* predicate false */

/* One row per timed function, shared by all CPUs (atomic adds): a per-CPU map would cost 512
 * bytes x CPUs per function, ~330 MB for `latency 'c:*'` on 128 CPUs. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1); /* resized to the number of TRACE_F_HISTOGRAM recipes */
  __type(key, __u32);
  __type(value, struct uscope_histogram);
} latency SEC(".maps");

/* Keyed aggregations (TRACE_F_AGGREGATE): rows appear as keys do (no preallocation: a session
 * may use a few keys or thousands); user space reads them cumulatively and never deletes one, so
 * a row is never lost between an update and a read. A full map is counted (TC_AGG_FULL). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* resized: the session's key limit */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct uscope_agg_key);
  __type(value, struct uscope_agg_value);
} aggregates SEC(".maps");

/* The epoch new rows are counted under (uscope_agg_key.epoch): 0 unless a reader that deletes
 * the rows it read flips it (the agent's HTTP RED). */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u32);
} agg_epoch SEC(".maps");

/* User stacks of `ustack` keys, walked by unwind.bpf.h and keyed by their 64-bit hash (as
 * profile.bpf.c's ustacks). A full table is counted (TC_STACK_TABLE_FULL). */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* resized when a recipe has TRACE_F_AGG_USTACK */
  __type(key, __u64);
  __type(value, struct unwind_stack);
} stack_traces SEC(".maps");

/* The value a new key starts from (never written). */
static const struct uscope_agg_value agg_zero;

/* Working state of one run, per CPU: too big for the 512-byte BPF stack. */
struct scratch {
  __u32 owner; /* a sleepable run's thread id while it holds this slot, else 0 */
  __u64 regs[TRACE_NUM_REGS];
  __u64 stack[TRACE_STACK];
  __u64 slots[TRACE_ENTRY_SLOTS];
  __u32 recipe;
  __u32 sp;
  __u32 pos;
  __u32 drop;
  __u32 read_errors;
  __u32 truncated;    /* a string was cut: counted once per event */
  __u32 stack_failed; /* TRACE_F_STACK and the capture failed */
  __u32 deferred;     /* a string is left for user space to read from the live process */
  __u32 has_value;    /* TOP_AGG_VALUE ran */
  __u64 agg_value;
  struct uscope_agg_key key;
  char tmp[TRACE_POOL];
  struct uscope_event ev; /* ev and data are written out together */
  /* The payload, then the user stack; a string read may overrun the payload by TRACE_MAX_STR. */
  __u8 data[TRACE_MAX_DATA + TRACE_MAX_STR + 16 + TRACE_MAX_KFRAMES * 8];
};
_Static_assert(TRACE_MAX_STR + 16 >= TRACE_MAX_FRAMES * 8, "no room for the user stack");
_Static_assert(TRACE_STR_LEN_MASK == TRACE_MAX_STR - 1,
               "a string length word holds any length read");

/* Slot 0 is the scratch of a run that cannot sleep. Such a run is never interleaved with another
 * on its CPU: a uprobe fires only in the task's own context, and code that does not sleep is not
 * preempted (CONFIG_PREEMPT_NONE, the model of this project's kernels; a fully preemptible kernel
 * would break slot 0 for non-sleepable runs as much). It owns slot 0 from start to end.
 * A sleepable run (trace_*_sleepable) may sleep in a read that faults a page in, with migration
 * disabled (bpf_prog_run_array_uprobe and uprobe_prog_run call migrate_disable(), not
 * preempt_disable()): another task may then run on this CPU and hit a probe. So a sleepable run
 * takes a slot of its own, 1..TRACE_SLEEP_SLOTS, marked with its thread id, and frees it at the
 * end; when every slot is taken, it runs in slot 0 without sleeping, as a non-sleepable run does.
 */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1); /* resized to 1 + TRACE_SLEEP_SLOTS when a sleepable program loads */
  __type(key, __u32);
  __type(value, struct scratch);
} scratches SEC(".maps");

static __always_inline void count(__u32 recipe, __u32 counter) {
  __u32 key = recipe * TRACE_NUM_COUNTERS + counter;
  __u64* n = bpf_map_lookup_elem(&counters, &key);
  if (n) *n += 1;
}

static __always_inline __u64 pop(struct scratch* s) {
  __u32 sp = s->sp;
  if (sp == 0 || sp > TRACE_STACK) {
    s->drop = DROP_ERROR;
    return 0;
  }
  sp--;
  s->sp = sp;
  return s->stack[BOUNDED(sp, TRACE_STACK)];
}

static __always_inline void push(struct scratch* s, __u64 v) {
  __u32 sp = s->sp;
  if (sp >= TRACE_STACK) {
    s->drop = DROP_ERROR;
    return;
  }
  s->stack[BOUNDED(sp, TRACE_STACK)] = v;
  s->sp = sp + 1;
}

static __always_inline __u64 extend(__u64 v, __u32 size, __u32 is_signed) {
  switch (size) {
    case 1:
      return is_signed ? (__u64)(__s64)(__s8)v : (__u8)v;
    case 2:
      return is_signed ? (__u64)(__s64)(__s16)v : (__u16)v;
    case 4:
      return is_signed ? (__u64)(__s64)(__s32)v : (__u32)v;
    default:
      return v;
  }
}

/* Reads user memory. A run that may sleep faults the pages in (bpf_copy_from_user), so that
 * memory the process has not touched yet reads right; bpf_probe_read_user() cannot fault and
 * fails on it. The nofault read goes first even then: bpf_copy_from_user() is copy_from_user(),
 * whose hardened-usercopy check looks the destination (a per-CPU map value, vmalloc'd) up in the
 * kernel's vmap tree on every call: a third of `uscope http`'s BPF time per request here
 * (docs/BENCHMARKS.md, H). Memory a process reads is almost always present. */
static __always_inline long read_user(void* dst, __u32 size, __u64 addr, int may_sleep) {
  long err = bpf_probe_read_user(dst, size, (const void*)addr);
  if (err == 0 || !may_sleep) return err;
  return bpf_copy_from_user(dst, size, (const void*)addr);
}

#define PAGE_BYTES 4096 /* x86_64 */
#define STR_PAGES 3     /* pages a string of TRACE_MAX_STR bytes can span */

/* Reads a NUL-terminated user string (bpf_probe_read_user_str()'s result). A run that may sleep
 * faults in the pages the string occupies, one at a time, as far as the read gets: never a page
 * beyond its NUL, which the process itself would not read. (bpf_copy_from_user_str() would do it
 * in one call, but is a kfunc of Linux 6.12+; this needs only the helper of sleepable programs.)
 * A page that cannot be faulted in ends the string's readable part: the read fails as before. */
static __always_inline long read_user_str(void* dst, __u32 size, __u64 addr, int may_sleep) {
  long n = bpf_probe_read_user_str(dst, size, (const void*)addr);
  if (n >= 0 || !may_sleep) return n;
  __u64 page = addr;
  for (int i = 0; i < STR_PAGES && page < addr + size; i++) {
    char byte;
    if (bpf_copy_from_user(&byte, 1, (const void*)page)) break;
    n = bpf_probe_read_user_str(dst, size, (const void*)addr);
    if (n >= 0) break;
    page = (page | (PAGE_BYTES - 1)) + 1;
  }
  return n;
}

static __always_inline __u64 deref(struct scratch* s, __u64 addr, __u32 size, int may_sleep) {
  __u64 v = 0;
  long err;
  switch (size) {
    case 1:
      err = read_user(&v, 1, addr, may_sleep);
      break;
    case 2:
      err = read_user(&v, 2, addr, may_sleep);
      break;
    case 4:
      err = read_user(&v, 4, addr, may_sleep);
      break;
    default:
      err = read_user(&v, 8, addr, may_sleep);
      break;
  }
  if (err) s->read_errors++;
  return v;
}

static __always_inline void emit_u64(struct scratch* s, __u64 v) {
  __u32 pos = s->pos;
  if (pos > TRACE_MAX_DATA - 8) {
    s->drop = DROP_ERROR;
    return;
  }
  *(__u64*)&s->data[pos] = v;
  s->pos = pos + 8;
}

/* Appends a u32 length word and the bytes of a user string: NUL-terminated, at most `max` bytes;
 * or (`exact`) `want` bytes, at most `max`. A string longer than what fits is stored cut, with
 * TRACE_STR_TRUNCATED in its length word. */
static __always_inline void emit_str(struct scratch* s, __u64 addr, __u64 want, __u64 max,
                                     int exact, int in_key, int may_sleep) {
  __u32 pos = s->pos;
  if (pos > TRACE_MAX_DATA - TRACE_STR_DEFERRED_BYTES) {
    s->drop = DROP_ERROR;
    return;
  }
  __u32 room = TRACE_MAX_DATA - 4 - pos;
  if (max > room) max = room;
  if (max > TRACE_MAX_STR - 2) max = TRACE_MAX_STR - 2;
  __u32 cut = 0;
  long n = 0;
  if (exact) {
    if (want > max) {
      want = max;
      cut = TRACE_STR_TRUNCATED;
    }
    if (want > 0) {
      n = read_user(&s->data[pos + 4], want & (TRACE_MAX_STR - 1), addr, may_sleep);
      n = n ? n : (long)want;
    }
  } else {
    /* One byte more than `max` tells a string of exactly `max` bytes from a longer one, and one
     * more for the NUL bpf_probe_read_user_str() always writes (the data area has the slack).
     * The barrier keeps the clamp the verifier needs, which clang could prove redundant. */
    __u64 size = max + 2;
    asm volatile("" : "+r"(size));
    if (size > TRACE_MAX_STR) size = TRACE_MAX_STR;
    n = read_user_str(&s->data[pos + 4], size, addr, may_sleep);
    if (n > 0) n--; /* _str counts the NUL; store the length without it */
    if (n > (long)max) {
      n = (long)max;
      cut = TRACE_STR_TRUNCATED;
    }
  }
  if (n < 0 && in_key) {
    /* A key is read long after the call: no live read then (a sleepable run faults the page in
     * instead, so this is a string that cannot be read at all). The row says the string was
     * unreadable (a deferred word with no bytes and no address); the read error is counted. */
    *(__u32*)&s->data[pos] = TRACE_STR_DEFERRED;
    s->pos = pos + 4;
    s->read_errors++;
    return;
  }
  if (n < 0) {
    /* Most often a page the process has not touched yet, in a run that cannot fault it in. User
     * space reads the string from the live process instead (see TRACE_STR_DEFERRED). */
    __u32 len = exact ? (__u32)want : (__u32)max;
    *(__u32*)&s->data[pos] =
        TRACE_STR_DEFERRED | (exact ? TRACE_STR_EXACT : 0) | cut | (len & TRACE_STR_LEN_MASK);
    *(__u64*)&s->data[pos + 4] = addr;
    s->pos = pos + TRACE_STR_DEFERRED_BYTES;
    s->truncated |= cut;
    s->deferred = 1;
    return;
  }
  *(__u32*)&s->data[pos] = cut | (__u32)n;
  s->pos = pos + 4 + ((__u32)n & (TRACE_MAX_STR - 1));
  s->truncated |= cut;
}

/* One Go interface value (TOP_EMIT_GOIFACE): its type word, the kind of its runtime type
 * descriptor (the byte at type + 23 since Go 1.14, reflect.Kind in the low 5 bits), and what it
 * holds: a string's bytes, a pointer-shaped kind's data word, or the 8 bytes the data word points
 * to (user space keeps the kind's width). */
static __always_inline void emit_go_value(struct scratch* s, __u64 type, __u64 data, int in_key,
                                          int may_sleep) {
  __u8 kind = 0;
  if (type && read_user(&kind, 1, type + 23, may_sleep)) s->read_errors++;
  kind &= 31;
  emit_u64(s, type);
  emit_u64(s, kind);
  if (kind == 24) { /* string: data points to {ptr, len} */
    __u64 hdr[2] = {0, 0};
    if (read_user(hdr, sizeof(hdr), data, may_sleep)) s->read_errors++;
    emit_str(s, hdr[0], hdr[1], TRACE_GO_STR, 1, in_key, may_sleep);
  } else if (kind == 18 || kind == 19 || kind == 21 || kind == 22 || kind == 26 || kind == 0) {
    emit_u64(s, data); /* chan, func, map, pointer, unsafe.Pointer: the word is the value */
  } else {
    __u64 v = 0;
    if (read_user(&v, sizeof(v), data, may_sleep)) s->read_errors++;
    emit_u64(s, v);
  }
}

static __always_inline void emit_comm(struct scratch* s) {
  __u32 pos = s->pos;
  if (pos > TRACE_MAX_DATA - 4 - TRACE_COMM_LEN) {
    s->drop = DROP_ERROR;
    return;
  }
  __u32 n = 0;
  for (; n < TRACE_COMM_LEN && s->ev.comm[n]; n++) s->data[pos + 4 + n] = s->ev.comm[n];
  *(__u32*)&s->data[pos] = n;
  s->pos = pos + 4 + n;
}

/* Compares the string at `src` (user memory, or comm when `comm`) with pool[off, off+len). One
 * byte past the literal is read, so that a longer string does not compare equal. */
static __always_inline __u64 str_equal(struct scratch* s, const struct uscope_recipe* r, __u64 src,
                                       __u32 off, __u32 len, int comm, int may_sleep) {
  if (len >= TRACE_POOL - 2) return 0;
  if (comm) {
    __builtin_memcpy(s->tmp, s->ev.comm, TRACE_COMM_LEN);
    s->tmp[TRACE_COMM_LEN] = 0;
  } else if (read_user_str(s->tmp, (len + 2) & (TRACE_POOL - 1), src, may_sleep) < 0) {
    s->read_errors++;
    return 0;
  }
  for (__u32 i = 0; i < TRACE_POOL; i++) {
    char want = i < len ? r->pool[(off + i) & (TRACE_POOL - 1)] : 0;
    if (s->tmp[i & (TRACE_POOL - 1)] != want) return 0;
    if (i >= len) return 1;
  }
  return 0;
}

/* What run() hands each step: its scratch and recipe, looked up once a run, not once an op, and
 * whether the run may sleep (only a sleepable program in a scratch slot of its own). */
struct step_ctx {
  struct scratch* s;
  const struct uscope_recipe* r;
  int may_sleep;
};

/* Runs op i of the recipe; `may_sleep` is constant in each caller, so each keeps one branch. */
static __always_inline long step_op(__u32 i, struct step_ctx* c, int may_sleep) {
  struct scratch* s = c->s;
  const struct uscope_recipe* r = c->r;
  if (i >= TRACE_MAX_OPS || s->drop) return 1;
  const struct uscope_op* op = &r->ops[BOUNDED(i, TRACE_MAX_OPS)];
  const __u32 in_key = r->flags & trace_flags_used & TRACE_F_AGGREGATE;
  __u64 a, b;
/* The opening line of each case but the cheapest: an opcode no loaded recipe holds is dead code. */
#define SKIP_UNLESS_USED(code) \
  if (!(trace_ops_used & TRACE_OP_BIT(code))) goto malformed
  switch (op->code) {
    case TOP_END:
      return 1;
    case TOP_REG:
      push(s, s->regs[op->a < TRACE_NUM_REGS ? op->a : 0] + (__u64)op->imm);
      break;
    case TOP_CONST:
      push(s, (__u64)op->imm);
      break;
    case TOP_PID:
      push(s, bpf_get_current_pid_tgid() >> 32);
      break;
    case TOP_TID:
      push(s, (__u32)bpf_get_current_pid_tgid());
      break;
    case TOP_CPU:
      push(s, bpf_get_smp_processor_id());
      break;
    case TOP_UID:
      push(s, (__u32)bpf_get_current_uid_gid());
      break;
    case TOP_ENTRY:
      SKIP_UNLESS_USED(TOP_ENTRY);
      push(s, s->slots[op->a & (TRACE_ENTRY_SLOTS - 1)] + (__u64)op->imm);
      break;
    case TOP_SAVE:
      SKIP_UNLESS_USED(TOP_SAVE);
      s->slots[op->a & (TRACE_ENTRY_SLOTS - 1)] = pop(s);
      break;
    case TOP_DEREF:
      SKIP_UNLESS_USED(TOP_DEREF);
      a = pop(s) + (__u64)op->imm;
      push(s, extend(deref(s, a, op->a, may_sleep), op->a, op->b));
      break;
    case TOP_ADDI:
      push(s, pop(s) + (__u64)op->imm);
      break;
    case TOP_EXT:
      push(s, extend(pop(s), op->a, op->b));
      break;
#define BINARY(code, expr) \
  case code:               \
    b = pop(s);            \
    a = pop(s);            \
    push(s, (expr));       \
    break;
      BINARY(TOP_ADD, a + b)
      BINARY(TOP_SUB, a - b)
      BINARY(TOP_MUL, a * b)
      BINARY(TOP_DIV, b ? a / b : 0)
      BINARY(TOP_MOD, b ? a % b : 0)
      BINARY(TOP_AND, a & b)
      BINARY(TOP_OR, a | b)
      BINARY(TOP_XOR, a ^ b)
      BINARY(TOP_SHL, a << (b & 63))
      BINARY(TOP_SHR, a >> (b & 63))
      BINARY(TOP_SAR, (__u64)((__s64)a >> (b & 63)))
      BINARY(TOP_EQ, a == b)
      BINARY(TOP_NE, a != b)
      BINARY(TOP_LT, a < b)
      BINARY(TOP_LE, a <= b)
      BINARY(TOP_GT, a > b)
      BINARY(TOP_GE, a >= b)
      BINARY(TOP_SLT, (__s64)a < (__s64)b)
      BINARY(TOP_SLE, (__s64)a <= (__s64)b)
      BINARY(TOP_SGT, (__s64)a > (__s64)b)
      BINARY(TOP_SGE, (__s64)a >= (__s64)b)
      BINARY(TOP_LAND, a && b)
      BINARY(TOP_LOR, a || b)
#undef BINARY
    case TOP_NOT:
      push(s, !pop(s));
      break;
    case TOP_NEG:
      push(s, -pop(s));
      break;
    case TOP_BITNOT:
      push(s, ~pop(s));
      break;
    case TOP_STREQ:
      SKIP_UNLESS_USED(TOP_STREQ);
      a = pop(s);
      push(s, str_equal(s, r, a, op->a, op->b, 0, may_sleep));
      break;
    case TOP_COMMEQ:
      SKIP_UNLESS_USED(TOP_COMMEQ);
      push(s, str_equal(s, r, 0, op->a, op->b, 1, 0));
      break;
    case TOP_FILTER:
      if (!pop(s)) {
        s->drop = DROP_FILTERED;
        return 1;
      }
      break;
    case TOP_EMIT:
      emit_u64(s, pop(s));
      break;
    case TOP_EMIT_STR:
      SKIP_UNLESS_USED(TOP_EMIT_STR);
      b = op->a ? pop(s) : 0;
      a = pop(s);
      emit_str(s, a, b, (__u64)op->imm, op->a, in_key, may_sleep);
      break;
    case TOP_EMIT_COMM:
      SKIP_UNLESS_USED(TOP_EMIT_COMM);
      emit_comm(s);
      break;
    case TOP_EMIT_GOIFACE:
      SKIP_UNLESS_USED(TOP_EMIT_GOIFACE);
      b = pop(s);
      a = pop(s);
      if (!op->a) {
        if (op->b == TRACE_GO_ITAB && a) { /* itab {inter, _type, ...}: the dynamic type */
          __u64 type = 0;
          if (read_user(&type, sizeof(type), a + 8, may_sleep)) s->read_errors++;
          a = type;
        }
        emit_go_value(s, a, b, in_key, may_sleep);
      } else {
        /* a []any: address a, length b; each element is {type, data}. */
        __u64 n = b > op->b ? op->b : b;
        if (n > TRACE_GO_VALUES) n = TRACE_GO_VALUES;
        emit_u64(s, n | (b > n ? TRACE_STR_TRUNCATED : 0));
        for (int i = 0; i < TRACE_GO_VALUES; i++) {
          if (i >= n) break;
          __u64 pair[2] = {0, 0};
          if (read_user(pair, sizeof(pair), a + 16 * i, may_sleep)) s->read_errors++;
          emit_go_value(s, pair[0], pair[1], in_key, may_sleep);
        }
      }
      break;
    case TOP_AGG_VALUE:
      SKIP_UNLESS_USED(TOP_AGG_VALUE);
      s->agg_value = pop(s);
      s->has_value = 1;
      break;
    default:
    malformed:
      s->drop = DROP_ERROR;
      return 1;
  }
#undef SKIP_UNLESS_USED
  return 0;
}

/* bpf_loop() callbacks: `step` for programs that cannot sleep (scratch slot 0); `step_sleepable`
 * for the sleepable ones, whose slot the callback context holds. */
static long step(__u32 i, struct step_ctx* c) {
  return step_op(i, c, 0);
}

static long step_sleepable(__u32 i, struct step_ctx* c) {
  return step_op(i, c, c->may_sleep);
}

/* The per-call key of Go code (TRACE_F_GOROUTINE): the goroutine, which is R14 in Go's register
 * ABI, and the depth of the entry rsp below the top of its stack, g->stack.hi (runtime.g starts
 * with stack {lo, hi}). A goroutine runs on any thread, and the runtime copies its stack to a new
 * place to grow or shrink it, keeping every frame's distance from the top: keying on the thread
 * and the raw rsp would lose every call whose goroutine moved. `sp_delta` is rsp at the site minus
 * rsp at entry. False when the stack bounds cannot be read. */
static __always_inline int goroutine_key(struct scratch* s, __s32 sp_delta, __u32 probe_id,
                                         __u32 flags, struct uscope_entry_key* key) {
  __u64 g = s->regs[UREG_R14];
  if (!g) return 0;
  key->pid_tgid = g;
  key->sp = 0;
  key->probe_id = probe_id;
  key->tgid = s->ev.tgid;
  /* The goroutine alone: every site of such a probe is a Go function's entry (ABIInternal), where
   * R14 is the goroutine by the ABI. No read of its stack bounds: one read less per hit, and
   * `uscope http` hits three such sites per request. */
  if (flags & TRACE_F_GOROUTINE_ONLY) return 1;
  __u64 hi = 0;
  if (bpf_probe_read_user(&hi, sizeof(hi), (const void*)(g + 8))) return 0;
  __u64 sp = s->regs[UREG_RSP] - (__s64)sp_delta;
  if (hi < sp) return 0; /* R14 is not this goroutine (assembly code of the runtime) */
  key->sp = hi - sp;
  return 1;
}

/* TRACE_F_DEPTH: the key of this thread's call at its depth, one deeper when `entering`, else the
 * current depth, which the return leaves one shallower. False for a return at depth 0 (its call
 * began before the probes were in) and for an entry the depth table has no room for. */
static __always_inline int depth_key(__u64 pid_tgid, int entering, struct uscope_entry_key* key,
                                     __u32* depth_out) {
  __u64* d = bpf_map_lookup_elem(&call_depth, &pid_tgid);
  __u64 depth;
  if (entering) {
    if (d) {
      depth = *d + 1;
      *d = depth;
    } else {
      depth = 1;
      if (bpf_map_update_elem(&call_depth, &pid_tgid, &depth, BPF_ANY)) return 0;
    }
  } else {
    if (!d || *d == 0) return 0;
    depth = *d;
    *d = depth - 1;
  }
  key->pid_tgid = pid_tgid;
  key->sp = TRACE_DEPTH_KEY | depth;
  key->probe_id = 0;
  key->tgid = 0;
  *depth_out = (__u32)depth;
  return 1;
}

/* The user stack of this run, walked by CFI. Not in a sleepable program: the unwinder's mappings
 * are an LPM trie, a map type sleepable programs may not use (the loader keeps probes that take
 * stacks non-sleepable; here a walk would count as failed). */
static __always_inline struct unwind_scratch* user_stack(struct scratch* s, int sleepable) {
  if (sleepable) return NULL;
  return unwind_user_stack(s->ev.tgid, s->regs[UREG_RIP], s->regs[UREG_RSP], s->regs[UREG_RBP],
                           s->regs[UREG_R13]);
}

/* Bucket b holds durations in [2^b, 2^(b+1)) ns; bucket 0 also holds 0. */
static __always_inline __u32 log2_bucket(__u64 v) {
  __u32 b = 0;
  for (int shift = 32; shift > 0; shift >>= 1) {
    if (v >= (1ULL << shift)) {
      v >>= shift;
      b += shift;
    }
  }
  return b & (TRACE_HIST_BUCKETS - 1);
}

/* Adds this run to its row of `aggregates`: the key is the recipe's slot, the user stack id and
 * the emitted fields, zero-padded so that equal fields make equal keys. */
static __always_inline void aggregate(struct pt_regs* ctx, struct scratch* s,
                                      const struct uscope_recipe* r, __u32 ri, __u32 flags,
                                      int sleepable) {
  __u32 len = s->pos;
  if (len > TRACE_AGG_KEY_BYTES) {
    count(ri, TC_MALFORMED); /* the planner sizes keys to fit: a broken recipe */
    return;
  }
  __builtin_memset(&s->key, 0, sizeof(s->key));
  s->key.slot = r->agg_slot;
  s->key.stack_id = -1;
  const __u32 zero = 0;
  const __u32* epoch = bpf_map_lookup_elem(&agg_epoch, &zero);
  if (epoch) s->key.epoch = *epoch;
  bpf_probe_read_kernel(s->key.data, len, s->data);
  if (flags & TRACE_F_AGG_USTACK) {
    struct unwind_scratch* u = user_stack(s, sleepable);
    if (u && u->stack.len) {
      s->key.stack = u->hash;
      long err = bpf_map_lookup_elem(&stack_traces, &u->hash)
                     ? 0
                     : bpf_map_update_elem(&stack_traces, &u->hash, &u->stack, BPF_NOEXIST);
      if (err == 0 || err == -EEXIST) { /* EEXIST: another CPU stored it first */
        s->key.stack_id = 0;
      } else {
        s->key.stack = 0;
        count(ri, TC_STACK_FAILED);
        count(ri, TC_STACK_TABLE_FULL);
      }
    } else {
      count(ri, TC_STACK_FAILED);
    }
  }
  __u64 v = s->agg_value;
  if (flags & TRACE_F_HISTOGRAM) v = s->ev.duration_ns; /* latency --by */
  struct uscope_agg_value* row = bpf_map_lookup_elem(&aggregates, &s->key);
  if (!row) {
    /* Another CPU may insert the same key first: then NOEXIST fails and the lookup finds it. */
    bpf_map_update_elem(&aggregates, &s->key, &agg_zero, BPF_NOEXIST);
    row = bpf_map_lookup_elem(&aggregates, &s->key);
    if (!row) {
      count(ri, TC_AGG_FULL);
      return;
    }
  }
  __sync_fetch_and_add(&row->count, 1);
  __sync_fetch_and_add(&row->sum, v);
  if (r->agg_mode != TRACE_AGG_COUNT) {
    __u64 b = trace_agg_bucket(r, (__s64)v);
    /* Checked and used in one register: clang would otherwise check a 32-bit copy and index
     * with another, which the verifier cannot follow. Out of range cannot happen (see
     * trace_agg_bucket); it would count in bucket 0. */
    asm volatile("if %[b] < %[n] goto +1; %[b] = 0" : [b] "+r"(b) : [n] "i"(TRACE_AGG_BUCKETS));
    __sync_fetch_and_add(&row->buckets[b], 1);
  }
  if (flags & TRACE_F_HISTOGRAM) count(ri, TC_MATCHED);
}

/* One run in scratch `slot` (see scratches); `sleepable` in a sleepable program. */
static __always_inline int run(struct pt_regs* ctx, __u32 slot, int sleepable) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  if (!target_matches(pid_tgid >> 32)) return 0;
  __u32 ri = (__u32)bpf_get_attach_cookie(ctx);
  const struct uscope_recipe* r = bpf_map_lookup_elem(&recipes, &ri);
  struct scratch* s = bpf_map_lookup_elem(&scratches, &slot);
  if (!r || !s) return 0;
  count(ri, TC_HITS);

  __builtin_memcpy(s->regs, ctx, sizeof(struct pt_regs));
  s->recipe = ri;
  s->sp = 0;
  s->pos = 0;
  s->drop = 0;
  s->read_errors = 0;
  s->truncated = 0;
  s->stack_failed = 0;
  s->deferred = 0;
  s->has_value = 0;
  s->agg_value = 0;
  s->ev.ts = 0;
  s->ev.duration_ns = 0;
  s->ev.tgid = pid_tgid >> 32;
  s->ev.tid = (__u32)pid_tgid;
  s->ev.probe_id = r->probe_id;
  s->ev.cpu = bpf_get_smp_processor_id();
  s->ev.stack_len = 0;
  s->ev.kstack_len = 0;
  s->ev.stack_end = UNWIND_END_TRUNCATED;
  s->ev.return_address = 0;
  s->ev.depth = 0;
  /* The thread's name and the time are taken before the ops only when an op or a return probe's
   * timing needs them, so that a hit the predicate drops costs neither helper. */
  const int comm_in_ops =
      trace_ops_used & (TRACE_OP_BIT(TOP_COMMEQ) | TRACE_OP_BIT(TOP_EMIT_COMM)) ? 1 : 0;
  if (comm_in_ops) bpf_get_current_comm(s->ev.comm, sizeof(s->ev.comm));

  /* Bits of features turned off are known zeros to the verifier: their blocks below are dead. */
  __u32 flags = r->flags & trace_flags_used;
  if ((flags & TRACE_F_DEPTH) && !(flags & TRACE_F_RETURN)) {
    /* A runtime's call entered: recorded before the ops, whatever its predicate says. */
    s->ev.ts = bpf_ktime_get_ns();
    struct uscope_entry_key key;
    __u32 depth = 0;
    if (!depth_key(pid_tgid, 1, &key, &depth)) {
      count(ri, TC_ENTRY_SAVE_FAILED);
      if (flags & TRACE_F_SAVE_ENTRY) return 0;
    } else {
      s->ev.depth = depth;
      struct uscope_entry_value* v = (struct uscope_entry_value*)s->data; /* scratch space */
      __builtin_memset(v, 0, sizeof(*v));
      v->ts = s->ev.ts;
      if (bpf_map_update_elem(&entries, &key, v, BPF_ANY)) count(ri, TC_ENTRY_SAVE_FAILED);
    }
    if (flags & TRACE_F_SAVE_ENTRY) return 0;
  }
  if (flags & TRACE_F_RETURN) {
    s->ev.ts = bpf_ktime_get_ns();
    /* After `ret`, rsp is the entry rsp + 8 (the return address was popped). A Go return site is
     * the RET itself, not yet run: rsp is the entry rsp. */
    struct uscope_entry_key key = {pid_tgid, s->regs[UREG_RSP] - 8, r->probe_id, 0};
    if ((flags & TRACE_F_GOROUTINE) && !goroutine_key(s, 0, r->probe_id, flags, &key)) {
      if (!(flags & TRACE_F_ABANDON)) count(ri, TC_NO_ENTRY);
      return 0;
    }
    __u32 depth = 0;
    if ((flags & TRACE_F_DEPTH) && !depth_key(pid_tgid, 0, &key, &depth)) {
      count(ri, TC_NO_ENTRY);
      return 0;
    }
    s->ev.depth = depth;
    struct uscope_entry_value* saved = bpf_map_lookup_elem(&entries, &key);
    if (flags & TRACE_F_ABANDON) {
      if (saved && !bpf_map_delete_elem(&entries, &key)) count(ri, TC_ABANDONED);
      return 0;
    }
    if (saved) {
      __builtin_memcpy(s->slots, saved->slots, sizeof(s->slots));
      s->ev.duration_ns = s->ev.ts - saved->ts;
      bpf_map_delete_elem(&entries, &key);
    } else if (flags & TRACE_F_NEEDS_ENTRY) {
      count(ri, TC_NO_ENTRY);
      return 0;
    }
    if ((flags & TRACE_F_HISTOGRAM) && !(flags & TRACE_F_AGGREGATE)) {
      __u32 hist = r->hist_slot;
      struct uscope_histogram* h = bpf_map_lookup_elem(&latency, &hist);
      if (h) __sync_fetch_and_add(&h->buckets[log2_bucket(s->ev.duration_ns)], 1);
      count(ri, TC_MATCHED);
      return 0;
    }
  }

  struct step_ctx c = {s, r, slot != 0};
  if (sleepable)
    bpf_loop(r->n_ops, step_sleepable, &c, 0);
  else
    bpf_loop(r->n_ops, step, &c, 0);
  if (s->read_errors) count(ri, TC_READ_ERRORS);
  if (s->drop == DROP_FILTERED) {
    count(ri, TC_FILTERED);
    return 0;
  }
  if (s->drop) {
    count(ri, TC_MALFORMED);
    return 0;
  }
  if (!(flags & (TRACE_F_RETURN | TRACE_F_DEPTH))) s->ev.ts = bpf_ktime_get_ns();
  if (!comm_in_ops) bpf_get_current_comm(s->ev.comm, sizeof(s->ev.comm));

  if (flags & TRACE_F_AGGREGATE) {
    aggregate(ctx, s, r, ri, flags, sleepable);
    return 0;
  }

  if (flags & TRACE_F_SAVE_ENTRY) {
    struct uscope_entry_key key = {pid_tgid, s->regs[UREG_RSP] - (__s64)r->sp_delta, r->probe_id,
                                   0};
    if ((flags & TRACE_F_GOROUTINE) && !goroutine_key(s, r->sp_delta, r->probe_id, flags, &key)) {
      count(ri, TC_ENTRY_SAVE_FAILED);
      return 0;
    }
    struct uscope_entry_value* v = (struct uscope_entry_value*)s->data; /* scratch space */
    v->ts = s->ev.ts;
    __builtin_memcpy(v->slots, s->slots, sizeof(v->slots));
    if (flags & TRACE_F_GOROUTINE) {
      /* An entry already recorded for this goroutine at this depth is this call's own, run again
       * after morestack (or one whose return never ran: a panic). The later time is kept. */
      if (!bpf_map_update_elem(&entries, &key, v, BPF_NOEXIST)) return 0;
      count(ri, TC_ENTRY_REPEATED);
    }
    if (bpf_map_update_elem(&entries, &key, v, BPF_ANY)) count(ri, TC_ENTRY_SAVE_FAILED);
    return 0;
  }

  __u32 len = s->pos;
  if (len > TRACE_MAX_DATA) len = TRACE_MAX_DATA;
  s->ev.data_len = len;
  __u32 stack_len = 0;
  if (flags & TRACE_F_STACK) {
    /* The stack travels in the event: nothing to free, no ids to collide, no map to fill. It is
     * walked by CFI (unwind.bpf.h) from the probe's registers; how the walk ended goes along. */
    struct unwind_scratch* u = user_stack(s, sleepable);
    __u32 n = u ? u->stack.len : 0;
    if (n > TRACE_MAX_FRAMES) n = TRACE_MAX_FRAMES;
    if (n > 0 && u && bpf_probe_read_kernel(&s->data[len], n * 8, u->stack.frames) == 0) {
      stack_len = n * 8;
      s->ev.stack_end = u->stack.end;
    } else {
      s->stack_failed = 1;
    }
    if (flags & TRACE_F_AT_ENTRY)
      bpf_probe_read_user(&s->ev.return_address, 8,
                          (void*)(s->regs[UREG_RSP] - (__s64)r->sp_delta));
  }
  s->ev.stack_len = stack_len;
  if (stack_len > TRACE_MAX_FRAMES * 8) stack_len = TRACE_MAX_FRAMES * 8;
  __u32 kstack_len = 0;
  if (flags & TRACE_F_KSTACK) {
    /* Without BPF_F_USER_STACK: the kernel's frames (bcc's -K). At a uprobe the registers are the
     * user's, so the kernel part is empty (n == 0): that is an answer, not a failure. A failed
     * capture is counted with the user stack's, as an event without its stack. */
    long n = bpf_get_stack(ctx, &s->data[len + stack_len], TRACE_MAX_KFRAMES * 8, 0);
    if (n >= 0 && n <= TRACE_MAX_KFRAMES * 8)
      kstack_len = (__u32)n & ~7u;
    else
      s->stack_failed = 1;
  }
  s->ev.kstack_len = kstack_len;
  if (kstack_len > TRACE_MAX_KFRAMES * 8) kstack_len = TRACE_MAX_KFRAMES * 8;
  /* Wake the reader when this record makes the pending data cross a multiple of wakeup_bytes
   * (a quarter of the ring): a few wake-ups per ring's worth of records, never one per record.
   * Forcing one per record while a backlog stays above the threshold costs each an irq_work (a
   * self-IPI, a VM exit in a guest): 16 us per event measured here. Every multiple, not only the
   * first, so that a reader that went to sleep above the threshold is still woken before the
   * ring fills. A deferred string must be read while the process still holds it: that record
   * wakes the reader at once. */
  __u64 size = sizeof(s->ev) + len + stack_len + kstack_len;
  __u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
  __u64 rb_flags =
      s->deferred || wakeup_bytes == 0 || (avail + size + 8) / wakeup_bytes != avail / wakeup_bytes
          ? BPF_RB_FORCE_WAKEUP
          : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&events, &s->ev, size, rb_flags)) {
    count(ri, TC_LOST);
  } else {
    count(ri, TC_EMITTED);
    if (s->truncated) count(ri, TC_TRUNCATED);
    if (s->stack_failed) count(ri, TC_STACK_FAILED);
  }
  return 0;
}

/* A sleepable run: takes a free scratch slot of this CPU for the run (see scratches) or, with
 * none free, runs in slot 0 without sleeping. No atomics needed: runs on one CPU interleave only
 * where one sleeps, never between this test and this store. */
static __always_inline int run_sleepable(struct pt_regs* ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  __u32 slot = 0;
  for (__u32 k = 1; k <= TRACE_SLEEP_SLOTS; k++) {
    struct scratch* s = bpf_map_lookup_elem(&scratches, &k);
    if (s && !s->owner) {
      s->owner = tid | 1u << 31; /* nonzero for any thread */
      slot = k;
      break;
    }
  }
  run(ctx, slot, 1);
  if (slot) {
    struct scratch* s = bpf_map_lookup_elem(&scratches, &slot);
    if (s) s->owner = 0;
  }
  return 0;
}

/* Attached through one perf-event uprobe/uretprobe link per site. */
SEC("uprobe")
int trace_single(struct pt_regs* ctx) {
  return run(ctx, 0, 0);
}

/* Attached through uprobe_multi links (expected attach type set by user space before load). */
SEC("uprobe")
int trace_multi(struct pt_regs* ctx) {
  return run(ctx, 0, 0);
}

/* The same, sleepable (BPF_F_SLEEPABLE): for probes whose recipe reads strings or buffers, which
 * then fault in pages the process has not touched yet (see read_user). Loaded only where the
 * kernel has sleepable uprobe programs (attach/bpf_features.h). */
SEC("uprobe.s")
int trace_single_sleepable(struct pt_regs* ctx) {
  return run_sleepable(ctx);
}

SEC("uprobe.s")
int trace_multi_sleepable(struct pt_regs* ctx) {
  return run_sleepable(ctx);
}

char LICENSE[] SEC("license") = "GPL";
