/* Shared by the BPF unwinder (unwind.bpf.h) and user space (discover/python_runtime.h fills it,
 * attach/unwind_maps.h loads it): how a thread's Python frames are found at sample time, the way
 * py-spy and the OpenTelemetry profiler read them, from the interpreter's own frame chain.
 *
 * The walker finds the thread's PyThreadState (python_threads caches it by tid; else it walks the
 * interpreter's thread list for the one whose native_thread_id is the tid or, 3.8-3.10, whose
 * thread_id is the thread's fs base), then its current frame.
 * Where the native walk meets the eval function, that native frame is replaced by the Python frames
 * it runs (innermost first) up to its entry frame, and the native walk goes on below. */
#ifndef USCOPE_BPF_PYTHON_H
#define USCOPE_BPF_PYTHON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "unwind.h"

#define PY_NO_OFFSET 0xffffffffu /* a field this version does not have */
#define PY_MAX_THREADS 256       /* PyThreadStates searched for a thread's own */
#define PY_EVAL_RANGES 2         /* the eval function, and its .cold part where symbols show it */

/* How frames map to calls of the eval function. */
enum py_frame_model {
  PY_FRAMES_PER_EVAL = 0, /* <= 3.10: one PyFrameObject per eval call; frame_instr is f_lasti,
                           * an int (bytes before 3.10, code units from 3.10) */
  PY_FRAMES_IS_ENTRY,     /* 3.11: _PyInterpreterFrame; an eval call runs frames up to and
                           * including the first whose is_entry (at frame_entry) is set */
  PY_FRAMES_OWNER,        /* 3.12+: _PyInterpreterFrame; an eval call's frames end at a shim
                           * frame whose owner (at frame_entry) is FRAME_OWNED_BY_CSTACK (3) */
};

#define PY_OWNED_BY_CSTACK 3 /* 3.12, 3.13; py_offsets.owner_cstack says it per version */

/* Byte offsets into the interpreter's structures, for one CPython version and build. */
struct py_offsets {
  __u32 version;                 /* major << 8 | minor: 0x30b for 3.11 */
  __u32 frame_model;             /* enum py_frame_model */
  __u32 runtime_interp_head;     /* _PyRuntimeState.interpreters.head */
  __u32 interp_threads_head;     /* PyInterpreterState.threads.head (tstate_head before 3.11) */
  __u32 tstate_next;             /* PyThreadState.next */
  __u32 tstate_native_thread_id; /* PyThreadState.native_thread_id (the kernel tid), 3.11+ */
  __u32 tstate_thread_id;        /* PyThreadState.thread_id: pthread_self(), which on x86-64
                                  * (glibc, musl) is the thread's TCB, the base its fs points to */
  __u32 tstate_frame;            /* 3.11, 3.12: .cframe (a pointer); 3.13: .current_frame;
                                  * <= 3.10: .frame */
  __u32 cframe_current_frame;    /* _PyCFrame.current_frame, or PY_NO_OFFSET (3.13, <= 3.10) */
  __u32 frame_code;              /* .f_code (.f_executable in 3.13) */
  __u32 frame_previous;          /* .previous (.f_back before 3.11) */
  __u32 frame_instr;             /* .prev_instr (3.11, 3.12), .instr_ptr (3.13), .f_lasti */
  __u32 frame_entry;             /* .is_entry (3.11), .owner (3.12+), PY_NO_OFFSET before */
  __u32 code_adaptive;           /* offsetof(PyCodeObject, co_code_adaptive) (3.11+): the
                                  * instruction index is (instr - code - this) / 2 */
  __u32 frame_read_size;         /* bytes read per frame: covers every frame field above */
  __u32 owner_cstack;            /* PY_FRAMES_OWNER: the owner value of a shim frame, 3
                                  * (PY_OWNED_BY_CSTACK) in 3.12, 3.13; 4 from 3.14, where 3 is
                                  * FRAME_OWNED_BY_INTERPRETER (also not a Python function's) */
};

/* A process running CPython (python_procs, by tgid). Addresses are the process's own. */
struct py_proc {
  __u64 eval_start[PY_EVAL_RANGES], eval_end[PY_EVAL_RANGES]; /* [start, end); 0, 0 unused */
  __u64 runtime;                                              /* &_PyRuntime */
  struct py_offsets off;
  /* 3.8-3.10 (no native_thread_id): offsetof(struct task_struct, thread.fsbase) in the running
   * kernel, from its BTF, so that a thread's state is the one whose thread_id is the current
   * task's fs base; 0 where native_thread_id tells the thread. A value, not a CO-RE read: the
   * programs that walk stacks (trace.bpf.c) then need no kernel BTF at load (target_filter.h). */
  __u32 task_fsbase;
  __u32 unused;
};

/* A Python frame in a walked stack (unwind_stack.frames): a user-space pc is below 2^47, so the
 * top nibble tags the value. The code object's address (8-byte aligned, below 2^47) >> 3 takes 44
 * bits, the instruction index the low 16 (PY_INSTR_UNKNOWN when it does not fit or is unknown).
 * The index counts code units (2 bytes) in every version: 3.11+ (instr - code - code_adaptive) / 2,
 * 3.10 f_lasti as is, <= 3.9 f_lasti / 2 (symbolize/python_code.h decodes its line).
 */
#define PY_INSTR_BITS 16
#define PY_INSTR_UNKNOWN 0xffffu
#define PY_FRAME(code, instr)                                                                      \
  ((UNWIND_FRAME_TAG_PYTHON << UNWIND_FRAME_TAG_SHIFT) | (((__u64)(code) >> 3) << PY_INSTR_BITS) | \
   ((__u64)(instr)&0xffffu))
#define PY_FRAME_CODE(v) ((((v) << 4) >> (4 + PY_INSTR_BITS)) << 3)
#define PY_FRAME_INSTR(v) ((__u32)((v)&0xffffu))

#endif
