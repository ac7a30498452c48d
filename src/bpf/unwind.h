/* Shared by the BPF unwinder (unwind.bpf.h, included by profile.bpf.c and trace.bpf.c) and user
 * space (discover/unwind_table.h builds the rows, attach/unwind_maps.h loads them): how a user
 * stack is walked without frame pointers.
 *
 * Layout, chosen so that a frame costs a few array reads in the common case:
 *   unwind_mappings  LPM trie (tgid, address) -> the object mapped there: its table id and the
 *                    bias that turns a pc into an offset in the table (one lookup per object
 *                    change; consecutive frames in one object reuse the last answer).
 *   unwind_tables    array of maps, one inner array per object (by build-id, shared by every
 *                    process that maps it), sized exactly: entry 0 is a header, then one page
 *                    entry per 2^UNWIND_PAGE_BITS bytes of code, then the rows. A pc's page
 *                    entry bounds a binary search of at most UNWIND_MAX_SEARCH steps.
 *   unwind_rules     array of the distinct rules of every table (rows hold an index): few
 *                    hundred distinct rules cover whole distributions, so a row is 8 bytes.
 * The OpenTelemetry profiler keys rows by (file, 64 KiB page) in hash maps; inner arrays sized
 * per object need no sizing guess up front and make every step an array read. */
#ifndef USCOPE_BPF_UNWIND_H
#define USCOPE_BPF_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define UNWIND_MAX_FRAMES 127  /* frames per stack: perf's default kernel.perf_event_max_stack */
#define UNWIND_PAGE_BITS 8     /* a page entry per 256 bytes of code: <= 257 rows to search */
#define UNWIND_MAX_SEARCH 10   /* binary-search steps that cover 257 rows */
#define UNWIND_MAX_TABLES 8192 /* objects with a table loaded at once */
#define UNWIND_MAX_RULES 65536

/* A walked stack's value is a pc, or a runtime's frame tagged in its top nibble (a user pc is
 * below 2^47): each runtime's header says how the other 60 bits read. */
#define UNWIND_FRAME_TAG_SHIFT 60
#define UNWIND_FRAME_TAG(v) ((__u64)(v) >> UNWIND_FRAME_TAG_SHIFT)
#define UNWIND_FRAME_TAG_PYTHON 0x1ull /* bpf/python.h: PY_FRAME */
#define UNWIND_FRAME_TAG_HS_RETURN                                                                \
  0x2ull                                  /* bpf/hotspot.h: a code blob's frame, a return address \
                                           */
#define UNWIND_FRAME_TAG_HS_PC 0x3ull     /* bpf/hotspot.h: the same where the thread was */
#define UNWIND_FRAME_TAG_HS_INTERP 0x4ull /* bpf/hotspot.h: an interpreted Java frame */
#define UNWIND_FRAME_TAG_V8 0x5ull        /* bpf/v8.h: a V8 JavaScript frame */

/* How to find the canonical frame address (the caller's rsp) at a pc. */
enum unwind_cfa_kind {
  UNWIND_CFA_RSP = 0,     /* CFA = rsp + cfa_offset */
  UNWIND_CFA_RBP,         /* CFA = rbp + cfa_offset */
  UNWIND_CFA_PLT,         /* a PLT stub: CFA = rsp + cfa_offset, + 8 when (pc & 15) >=
                           * rbp_offset (11; 10 in IBT PLTs; a PLT stub saves no rbp) */
  UNWIND_CFA_SIGNAL,      /* a signal trampoline (__restore_rt): rsp points at the saved context;
                           * the caller's rsp, rbp and pc are read at rsp + cfa_offset,
                           * rsp + rbp_offset and rsp + ra_offset */
  UNWIND_CFA_END,         /* the return address is undefined: the thread's outermost frame */
  UNWIND_CFA_NONE,        /* no CFI covers this pc: unwind by frame pointer */
  UNWIND_CFA_UNSUPPORTED, /* a rule uscope does not evaluate (a DWARF expression, a register) */
};

/* Where the caller's rbp is. */
enum unwind_rbp_kind {
  UNWIND_RBP_SAME = 0, /* not saved: the caller's rbp is this frame's */
  UNWIND_RBP_AT_CFA,   /* saved at CFA + rbp_offset */
  UNWIND_RBP_UNDEFINED /* lost: frames above can only unwind by rsp */
};

struct unwind_rule {
  __u8 cfa_kind;   /* enum unwind_cfa_kind */
  __u8 rbp_kind;   /* enum unwind_rbp_kind */
  __s16 ra_offset; /* the return address is at CFA + ra_offset (-8 on x86-64) */
  __s32 cfa_offset;
  __s32 rbp_offset;
};

/* One row of a table: `rule` holds from `pc` (an offset from the table's base) to the next row. */
struct unwind_row {
  __u32 pc;
  __u32 rule; /* index into unwind_rules */
};

/* Entry 0 of a table. */
struct unwind_table_header {
  __u32 pages; /* page entries follow, at 1..pages */
  __u32 rows;  /* then the rows, at 1 + pages .. */
};

/* A page entry: the rows to search for a pc in this page; the first is the one in effect at the
 * page's start. */
struct unwind_page {
  __u32 first; /* index of the first row in the table's inner array */
  __u32 count;
};

struct unwind_mapping_key {
  __u32 prefixlen; /* bits of (tgid, address) that must match: 32 + the range's prefix */
  __u32 tgid;      /* big-endian, like address: LPM tries compare bytes in order */
  __u64 address;
};

#define UNWIND_TABLE_FP 0xffffffffu      /* no table: unwind by frame pointer (JIT code, no CFI) */
#define UNWIND_TABLE_PENDING 0xfffffffeu /* a table not loaded (it failed, or had no room) */

struct unwind_mapping {
  __u64 start, end; /* the executable range [start, end) */
  __u64 bias;       /* pc - bias = offset into the table */
  __u32 table;      /* index into unwind_tables, or UNWIND_TABLE_* */
  __u32 pages;      /* the table's page entries (its header's), read here without a lookup */
};

/* Why a walk ended: one per stack, counted. */
enum unwind_end {
  UNWIND_END_ENTRY = 0,   /* reached the thread's entry (CFI marks its return address
                           * undefined): the stack is complete */
  UNWIND_END_TRUNCATED,   /* UNWIND_MAX_FRAMES frames and more above */
  UNWIND_END_FP_ZERO,     /* a frame-pointer walk (no CFI, or tables not loaded yet) reached
                           * rbp 0: complete if the code kept frame pointers */
  UNWIND_END_UNSUPPORTED, /* a CFI rule uscope does not evaluate */
  UNWIND_END_READ_FAILED, /* a return address or saved rbp could not be read */
  UNWIND_END_BAD_FRAME,   /* the CFA did not move up the stack, or a zero return address */
  UNWIND_END_UNLOADED,    /* stopped after a frame walked by frame pointer because its table was
                           * not loaded yet (a new process, a dlopen, an exec) */
  UNWIND_NUM_ENDS
};

/* A walked stack, as the walker leaves it in its per-CPU scratch and as profile.bpf.c stores it
 * (ustacks, keyed by its hash). */
struct unwind_stack {
  __u32 len;                       /* frames */
  __u32 end;                       /* enum unwind_end */
  __u64 frames[UNWIND_MAX_FRAMES]; /* innermost first: the pc, then return addresses */
};

/* What the walker knows of a process (unwind_procs, by tgid). */
enum unwind_proc_state {
  UNWIND_PROC_LOADED = 0, /* its mappings are in unwind_mappings */
  UNWIND_PROC_REQUESTED,  /* asked for by the walker; user space has not loaded it yet */
  UNWIND_PROC_STALE,      /* it exec'd: its mappings are another program's until reloaded */
};

struct unwind_proc {
  __u32 state; /* enum unwind_proc_state */
  __u32 reserved;
  __u64 requested_ns; /* when the walker last asked user space (requests are rate-limited) */
};

/* A request to user space (the unwind_requests ring): read this process's maps (again). */
enum unwind_request_kind {
  UNWIND_REQUEST_MAPS = 0, /* a pc in no known mapping, or a process not loaded */
  UNWIND_REQUEST_EXEC,     /* the process exec'd */
  UNWIND_REQUEST_EXIT,     /* the process exited: drop its mappings */
};

struct unwind_request {
  __u32 tgid;
  __u32 kind; /* enum unwind_request_kind */
};

#define UNWIND_REQUEST_INTERVAL_NS 10000000ull /* per process: at most one request per 10 ms */

/* Per-CPU counters (unwind_stats): each walk's end, then frames by how they were unwound. */
enum unwind_stat {
  UNWIND_STAT_FRAMES_CFI = UNWIND_NUM_ENDS, /* frames unwound by a table row */
  UNWIND_STAT_FRAMES_FP,                    /* frames unwound by frame pointer (no CFI) */
  UNWIND_STAT_FRAMES_UNLOADED, /* frames unwound by frame pointer while their tables load: a new
                                * process, a pc in no known mapping (a dlopen), an exec */
  UNWIND_STAT_REQUESTS_LOST,   /* requests the ring had no room for */
  UNWIND_STAT_PY_FRAMES,       /* Python frames put in stacks (bpf/python.h) */
  UNWIND_STAT_PY_NO_THREAD,    /* walks of a Python process whose thread state was not found (a
                                * thread that never ran Python, or more than PY_MAX_THREADS) */
  UNWIND_STAT_PY_READ_FAILED,  /* Python frame chains cut short: a frame could not be read */
  UNWIND_STAT_PY_UNMATCHED,    /* Python frames left when the native walk ended without meeting
                                * their eval call: appended at the stack's outer end */
  UNWIND_STAT_HS_FRAMES,       /* Java frames put in stacks (bpf/hotspot.h) */
  UNWIND_STAT_HS_NO_BLOB,      /* pcs in a JVM's code cache whose code blob the segment map did
                                * not lead to: walked by frame pointer */
  UNWIND_STAT_HS_NO_RETURN,    /* compiled Java frames whose return address was not where their
                                * frame size says, nor in the words above: the walk ends there */
  UNWIND_STAT_HS_BAD_INTERP,   /* interpreted Java frames whose frame could not be read */
  UNWIND_STAT_V8_FRAMES,       /* V8 JavaScript frames put in stacks (bpf/v8.h) */
  UNWIND_NUM_STATS
};

#endif
