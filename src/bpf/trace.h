/* Shared by trace.bpf.c and user space: the fetch recipes one generic BPF program interprets, and
 * the events it writes to the ring buffer.
 *
 * uscope compiles nothing at run time. The planner turns each probe (one per attach site) into a
 * recipe: a short program for a tiny stack machine (push a register, dereference, compare, emit a
 * value or a string). The program attached to every site finds its recipe through the bpf cookie
 * and runs it with bpf_loop(), so the verifier checks the interpreter once, whatever the recipes.
 */
#ifndef USCOPE_BPF_TRACE_H
#define USCOPE_BPF_TRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TRACE_MAX_OPS 64    /* ops per recipe (power of two) */
#define TRACE_STACK 8       /* stack machine depth (power of two) */
#define TRACE_ENTRY_SLOTS 8 /* values saved at entry for a return probe (power of two) */
#define TRACE_POOL 128      /* bytes of string constants per recipe (power of two) */
/* An event carries a string of up to 8 KiB: what `uscope tls` shows of one TLS read or write
 * (half a TLS record) in one event. The ring holds an event's bytes only, not these maxima. */
#define TRACE_MAX_DATA 8448 /* event payload bytes: one longest string and a few values */
#define TRACE_MAX_STR 8192  /* bytes of one string read (power of two) */
#define TRACE_COMM_LEN 16
/* Scratch slots per CPU for sleepable runs that sleep at once on one CPU (trace.bpf.c, scratches)
 */
#define TRACE_SLEEP_SLOTS 4
#define TRACE_MAX_FRAMES 127 /* user stack frames per event (perf's default max_stack) */
#define TRACE_MAX_KFRAMES 32 /* kernel stack frames per event (-K): at a uprobe, the trap path */
#define TRACE_GO_VALUES 4    /* interface values of one []any printed by %v */
#define TRACE_GO_STR 64      /* bytes of a string held in an interface value */
#define TRACE_GO_ITAB 1      /* TOP_EMIT_GOIFACE of one value: its first word is an itab */

/* pt_regs as an array of u64 (x86_64 layout, arch/x86/include/asm/ptrace.h). */
enum uscope_reg {
  UREG_R15 = 0,
  UREG_R14,
  UREG_R13,
  UREG_R12,
  UREG_RBP,
  UREG_RBX,
  UREG_R11,
  UREG_R10,
  UREG_R9,
  UREG_R8,
  UREG_RAX,
  UREG_RCX,
  UREG_RDX,
  UREG_RSI,
  UREG_RDI,
  UREG_ORIG_RAX,
  UREG_RIP,
  UREG_CS,
  UREG_FLAGS,
  UREG_RSP,
  UREG_SS,
  TRACE_NUM_REGS
};

enum uscope_opcode {
  TOP_END = 0,
  TOP_REG,   /* push regs[a] + imm */
  TOP_CONST, /* push imm */
  TOP_PID,   /* push tgid */
  TOP_TID,   /* push tid */
  TOP_CPU,   /* push cpu */
  TOP_UID,   /* push uid */
  TOP_ENTRY, /* push value saved at entry, slot a, + imm (return probes) */
  TOP_SAVE,  /* pop into entry slot a (entry half of a return probe) */
  TOP_DEREF, /* pop address, push the a-byte (1/2/4/8) value at address + imm, sign-extended if
                b */
  TOP_EXT,   /* truncate top to a bytes, sign-extend if b */
  TOP_ADD,
  TOP_SUB,
  TOP_MUL,
  TOP_DIV,
  TOP_MOD,
  TOP_AND,
  TOP_OR,
  TOP_XOR,
  TOP_SHL,
  TOP_SHR,
  TOP_SAR,
  TOP_EQ,
  TOP_NE,
  TOP_LT,
  TOP_LE,
  TOP_GT,
  TOP_GE, /* unsigned */
  TOP_SLT,
  TOP_SLE,
  TOP_SGT,
  TOP_SGE, /* signed */
  TOP_LAND,
  TOP_LOR,
  TOP_NOT,
  TOP_NEG,
  TOP_BITNOT,
  TOP_STREQ,        /* pop address; push 1 if the string there equals pool[a .. a+b) */
  TOP_COMMEQ,       /* push 1 if comm equals pool[a .. a+b) */
  TOP_FILTER,       /* pop; if zero, the event is dropped (counted as filtered) */
  TOP_EMIT,         /* pop; append the u64 to the event */
  TOP_EMIT_STR,     /* a=1: pop length; pop address; append u32 length + bytes. a=0: NUL-terminated,
                       at most imm bytes; a=1: exactly min(length, imm) bytes. imm is further
                       clamped to the room left in the event and to TRACE_MAX_STR - 2. A string
                       longer than that cap (a=0: no NUL within cap bytes; a=1: length > cap) is
                       stored cut to cap bytes with TRACE_STR_TRUNCATED set (see below) */
  TOP_EMIT_COMM,    /* append comm as a string */
  TOP_AGG_VALUE,    /* pop; the value a TRACE_F_AGGREGATE recipe buckets (TRACE_AGG_LOG2/LINEAR) */
  TOP_EMIT_GOIFACE, /* Go interface values (`%v`). a=0: pop data word, pop type word: one value
                       (b=TRACE_GO_ITAB: the first word is a non-empty interface's itab, whose
                       type is the word at itab + 8).
                       a=1: pop length, pop address of a slice of interfaces ([]any): at most b
                       (<= TRACE_GO_VALUES) values. Appends a u64 count (TRACE_STR_TRUNCATED set
                       when the slice had more), then per value its type word (u64), the kind of
                       its runtime type descriptor (u64: the byte at type + 23, low 5 bits; 0 =
                       nil or unreadable) and the value: a string kind as a string field (u32
                       length word, bytes), other kinds as one u64 (the data word for
                       pointer-shaped kinds, else the 8 bytes it points to). */
  TOP_ADDI,         /* pop; push it + imm */
  TOP_NUM_OPS
};
/* The planner folds `x + constant` into one op (plan/recipe.cc): into the imm of a REG or ENTRY
 * that pushed x, or of the DEREF that reads at it, else into an ADDI: each op is interpreted on
 * every hit. */
/* An opcode's bit in trace_ops_used (trace.bpf.c); TOP_NUM_OPS <= 64. */
#define TRACE_OP_BIT(code) (1ULL << (code))

struct uscope_op {
  __u8 code;
  __u8 a;
  __u16 b;
  __u32 pad;
  __s64 imm;
};

#define TRACE_F_SAVE_ENTRY 1  /* entry half of a return probe: store slots keyed by (tid, sp) */
#define TRACE_F_RETURN 2      /* return probe: load slots stored at entry (TOP_ENTRY) */
#define TRACE_F_STACK 4       /* capture the user stack into the event */
#define TRACE_F_NEEDS_ENTRY 8 /* drop the event (counted) when no entry was recorded */
#define TRACE_F_HISTOGRAM 16  /* return probe: add the duration to `latency`, emit nothing */
#define TRACE_F_AT_ENTRY                                                                 \
  32                      /* site in a function's prologue: its return address is at the \
                             entry rsp, and the frame-pointer walk would skip its caller */
#define TRACE_F_KSTACK 64 /* capture the kernel stack into the event, after the user stack */
/* Go code (calling_convention.h, CallKey::Goroutine): entry and return are keyed by goroutine, the
 * g pointer in R14, and by the distance of rsp from the top of the goroutine's stack (g->stack.hi,
 * the second word of g), which the runtime keeps when it copies a stack; not by thread and rsp. */
#define TRACE_F_GOROUTINE 128

/* In-kernel aggregation (count --by, hist, latency --by): the fields the recipe emits are not
 * sent but form the key of an `aggregates` row (with the recipe's agg_slot, and the user stack
 * id under TRACE_F_AGG_USTACK), whose count, sum and buckets are updated with atomic adds.
 * Latency's return half with TRACE_F_HISTOGRAM | TRACE_F_AGGREGATE buckets the duration. High
 * bits, so that flags added for tracing keep the low ones. */
#define TRACE_F_AGGREGATE 0x100
#define TRACE_F_AGG_USTACK 0x200
/* With TRACE_F_GOROUTINE: the key is the goroutine alone (its depth 0), for a call of which at most
 * one runs on a goroutine at a time (net/http's serverHandler.ServeHTTP): it may then end in
 * another frame than the one that made it (HTTP/2's handlerDone, several calls deeper), or be
 * dropped where it can no longer end (TRACE_F_ABANDON). */
#define TRACE_F_GOROUTINE_ONLY 0x400
/* With TRACE_F_RETURN: a site where a recorded call of this goroutine can no longer end (net/http
 * hijacked its connection, or the goroutine is past the handler: plan/http_plan.h): its entry is
 * deleted and counted (TC_ABANDONED); nothing is emitted, and no entry is not a loss. */
#define TRACE_F_ABANDON 0x800
/* A call is keyed by its thread and its depth there, not by rsp: the calls of a managed runtime,
 * whose entry and return are two USDT probes at different places of its interpreter (hotspot's
 * method__entry/return, ruby's, php's). Each thread's depth is kept in `call_depth`: an entry
 * (TRACE_F_DEPTH without TRACE_F_RETURN) deepens it by one and records its time there before the
 * ops run, a return reads the call at the depth and makes it one shallower, so that a predicate
 * never unbalances them. A return at depth 0 is one of a call made before the probes were in
 * (TC_NO_ENTRY). With TRACE_F_SAVE_ENTRY the entry records the call and emits nothing; without,
 * it goes on to its ops and emits (flow). Both halves carry the depth in the event. Loaded with
 * the return probes first, so that no call is recorded whose return could be missed. */
#define TRACE_F_DEPTH 0x1000
#define TRACE_DEPTH_KEY (1ull << 63) /* uscope_entry_key.sp of a TRACE_F_DEPTH call: | depth */

#define TRACE_HIST_BUCKETS 64 /* log2 buckets of nanoseconds per histogram */

/* One row of the `latency` map. */
struct uscope_histogram {
  __u64 buckets[TRACE_HIST_BUCKETS];
};

/* What a TRACE_F_AGGREGATE recipe does with its value (TOP_AGG_VALUE, or latency's duration). */
enum uscope_agg_mode {
  TRACE_AGG_COUNT = 0, /* count (and sum) only */
  TRACE_AGG_LOG2,      /* bucket 0: v < 0; 1: v == 0; 2: v == 1; b >= 3: [2^(b-2), 2^(b-1)) */
  TRACE_AGG_LINEAR,    /* bucket 0: v < min; 1 + (v - min) / step; agg_lin_buckets + 1: v >= max */
  TRACE_AGG_BOUNDS,    /* explicit bounds (OpenTelemetry's, Prometheus' `le`): bucket i holds
                          (agg_bounds[i-1], agg_bounds[i]], bucket agg_n_bounds what is above all */
};
#define TRACE_AGG_MAX_BOUNDS 16

#define TRACE_AGG_BUCKETS 66    /* log2 needs 65 (signed 64-bit values); linear at most 64 + 2 */
#define TRACE_AGG_KEY_BYTES 248 /* emitted key fields, zero-padded: room for a URL path */

struct uscope_agg_key {
  __u32 slot;     /* which aggregation (recipe's agg_slot): several share the map */
  __s32 stack_id; /* TRACE_F_AGG_USTACK: 0, the stack is in `stack_traces` under `stack`; or -1
                     (counted TC_STACK_FAILED) */
  __u64 stack;    /* TRACE_F_AGG_USTACK: the walked stack's hash (bpf/unwind.bpf.h) */
  __u32 epoch;    /* `agg_epoch` when the row was counted: 0 unless its reader flips it (a reader
                     that deletes what it read takes the rows of the epoch it left, which no run
                     adds to any more) */
  __u32 reserved;
  __u8 data[TRACE_AGG_KEY_BYTES]; /* u64 values and (u32 length, bytes) strings, as in events */
};

struct uscope_agg_value {
  __u64 count;
  __u64 sum; /* of the values (two's complement) */
  __u64 buckets[TRACE_AGG_BUCKETS];
};

struct uscope_recipe {
  __u32 n_ops;
  __u32 flags;
  __s32 sp_delta;  /* rsp at the site minus rsp at function entry (site moved into the prologue) */
  __u32 probe_id;  /* what user space reports the event as */
  __u32 hist_slot; /* TRACE_F_HISTOGRAM: row of the `latency` map (assigned by the loader) */
  __u32 agg_slot;  /* TRACE_F_AGGREGATE: the key's slot */
  __u32 agg_mode;  /* enum uscope_agg_mode */
  __u32 agg_lin_buckets; /* TRACE_AGG_LINEAR: buckets between min and max */
  __s64 agg_lin_min, agg_lin_max, agg_lin_step;
  __u32 agg_n_bounds; /* TRACE_AGG_BOUNDS: how many of agg_bounds hold, ascending */
  __u32 agg_reserved;
  __s64 agg_bounds[TRACE_AGG_MAX_BOUNDS];
  char pool[TRACE_POOL];
  struct uscope_op ops[TRACE_MAX_OPS];
};

/* Which bucket a value of recipe `r` falls in; user space shares it (recipe interpreter). */
static inline __u32 trace_agg_bucket(const struct uscope_recipe* r, __s64 v) {
  if (r->agg_mode == TRACE_AGG_BOUNDS) {
    __u32 n = r->agg_n_bounds < TRACE_AGG_MAX_BOUNDS ? r->agg_n_bounds : TRACE_AGG_MAX_BOUNDS;
    for (__u32 i = 0; i < TRACE_AGG_MAX_BOUNDS; ++i)
      if (i >= n || v <= r->agg_bounds[i]) return i;
    return TRACE_AGG_MAX_BOUNDS;
  }
  if (r->agg_mode == TRACE_AGG_LINEAR) {
    const __s64 min = r->agg_lin_min, max = r->agg_lin_max, step = r->agg_lin_step;
    const __u32 n_linear = r->agg_lin_buckets;
    if (v < min) return 0;
    if (v >= max || step <= 0) return n_linear + 1;
    __u64 b = 1 + ((__u64)v - (__u64)min) / (__u64)step;
    return b > n_linear ? n_linear + 1 : (__u32)b;
  }
  if (v < 0) return 0;
  __u64 u = (__u64)v;
  if (u == 0) return 1;
  __u32 b = 2;
  for (int shift = 32; shift > 0; shift >>= 1) {
    if (u >= (1ULL << shift)) {
      u >>= shift;
      b += shift;
    }
  }
  return b;
}

/* Per-recipe counters (per-CPU array, TRACE_NUM_COUNTERS slots per recipe). Every loss has its
 * own counter: an event is either emitted, filtered, lost, malformed or (return probes) without
 * an entry. New counters go at the end, so that the indices of the others stay put. */
enum uscope_counter {
  TC_HITS = 0,    /* program ran */
  TC_EMITTED,     /* event written */
  TC_LOST,        /* ring buffer full: event lost */
  TC_FILTERED,    /* predicate false */
  TC_READ_ERRORS, /* a user memory read failed (value shown as 0 / empty string) */
  TC_NO_ENTRY,    /* return without a recorded entry */
  TC_ENTRY_SAVE_FAILED,
  TC_MATCHED,      /* return matched with its entry (latency histogram) */
  TC_MALFORMED,    /* event dropped: malformed recipe (stack machine misuse, bad op) or an event
                      larger than TRACE_MAX_DATA */
  TC_STACK_FAILED, /* event written without its user stack: the capture failed */
  TC_TRUNCATED,    /* event written with at least one string cut (TRACE_STR_TRUNCATED) */
  TC_AGG_FULL,     /* TRACE_F_AGGREGATE: a new key found the `aggregates` map full: not counted */
  TC_STACK_TABLE_FULL, /* TRACE_F_AGG_USTACK: `stack_traces` had no room for a new stack; counted
                          under stack id -1 (also TC_STACK_FAILED) */
  TC_ENTRY_REPEATED,   /* TRACE_F_GOROUTINE: an entry of a call already recorded, which replaced it:
                          Go re-runs a function's first instruction after growing the goroutine's
                          stack (morestack). Not a new call */
  TC_ABANDONED,        /* TRACE_F_ABANDON: a recorded call dropped unfinished (its goroutine exited
                          first: a hijacked connection, a handler that panicked) */
  TRACE_NUM_COUNTERS
};

struct uscope_entry_key {
  __u64 pid_tgid; /* the thread; TRACE_F_GOROUTINE: the g pointer */
  __u64 sp; /* rsp at function entry: tells recursive calls of one thread apart; TRACE_F_GOROUTINE:
               g->stack.hi minus rsp at entry */
  __u32 probe_id; /* tells apart functions entered at one rsp (tail calls) */
  __u32 tgid;     /* TRACE_F_GOROUTINE: the process (g pointers repeat across processes); else 0 */
};

struct uscope_entry_value {
  __u64 ts;
  __u64 slots[TRACE_ENTRY_SLOTS];
};

/* A string field is a u32 length word and its bytes. When the read failed in BPF, the word has
 * TRACE_STR_DEFERRED set (and TRACE_STR_EXACT for a pointer + length string), its low bits hold
 * the length to read, and an 8-byte user address follows instead of the bytes.
 * TRACE_STR_TRUNCATED: the string is longer than what was stored (or, deferred, than what is to
 * be read: a pointer + length string whose length exceeded its cap). A deferred NUL-terminated
 * string cannot be measured in BPF: user space finds out when it reads it. */
#define TRACE_STR_DEFERRED 0x80000000u
#define TRACE_STR_EXACT 0x40000000u
#define TRACE_STR_TRUNCATED 0x20000000u
#define TRACE_STR_LEN_MASK 0x1fffu /* TRACE_MAX_STR - 1 */
#define TRACE_STR_DEFERRED_BYTES 12

struct uscope_event {
  __u64 ts;          /* bpf_ktime_get_ns() */
  __u64 duration_ns; /* return probes: time since entry, 0 otherwise */
  __u32 tgid;
  __u32 tid;
  __u32 probe_id;
  __u32 cpu;
  __u32 stack_len; /* bytes of user stack after the data: u64 addresses, innermost first */
  __u32 data_len;
  char comm[TRACE_COMM_LEN];
  __u64 return_address; /* TRACE_F_AT_ENTRY with TRACE_F_STACK: *(entry rsp), else 0 */
  __u32 kstack_len;     /* bytes of kernel stack after the user stack (TRACE_F_KSTACK) */
  __u32 stack_end;      /* how the user stack's walk ended: bpf/unwind.h's enum unwind_end */
  __u32 depth;          /* TRACE_F_DEPTH: the call's depth on its thread (1: the outermost seen) */
  __u32 reserved;
  /* followed by data_len bytes: u64 values and (u32 length, bytes) strings in emit order, then
   * stack_len bytes of user stack (TRACE_F_STACK; 0 when the capture failed: TC_STACK_FAILED),
   * then kstack_len bytes of kernel stack (TRACE_F_KSTACK; 0 when that capture failed) */
};

#endif
