/* Shared by the BPF unwinder (unwind.bpf.h) and user space (discover/hotspot_runtime.h fills it,
 * attach/unwind_maps.h loads it, symbolize/hotspot_code.h names its frames): how a HotSpot JVM's
 * Java frames are walked at sample time with no JVM flag, from the JVM's own description of
 * itself (gHotSpotVMStructs: the tables the Serviceability Agent reads).
 *
 * A pc in the code cache is looked up in its code heap's segment map, which leads back to the
 * code blob (nmethod, stub, the interpreter) that holds it:
 * - an interpreted frame (the pc is in the template interpreter) keeps rbp: the Method* and the
 *   bytecode pointer are in its frame, at word offsets from rbp (x86_64 frame_x86.hpp);
 * - a compiled frame (nmethod, stub) keeps no frame pointer: its blob's frame size (in words) says
 *   where its return address is (CFA = sp + 8 * frame_size, return address at CFA - 8, the
 *   caller's rbp at CFA - 16); inside its prologue or epilogue the frame is only partly built;
 * - a blob with no frame size (StubRoutines, the call stub) keeps rbp.
 * Each is recorded as a tagged value (below); user space names it (method, tier, inlined calls,
 * line) while the blob lives: the profiler announces new stacks on its ring. */
#ifndef USCOPE_BPF_HOTSPOT_H
#define USCOPE_BPF_HOTSPOT_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "unwind.h"

#define HS_MAX_HEAPS 4       /* code heaps: non-nmethods, profiled, non-profiled (segmented) */
#define HS_SEGMAP_STEPS 16   /* segment-map hops back to a blob's first segment */
#define HS_BLOB_READ 256     /* bytes of a code blob read at once: covers every field below */
#define HS_RA_SEARCH_SLOTS 6 /* words above a compiled frame searched for its return address */
#define HS_SEGMAP_FREE 0xff  /* a segment-map byte of a free segment */

/* The first 4 bytes of CodeBlob::_name, little-endian: what kind of blob holds a pc. */
#define HS_NAME_NMETHOD 0x74656d6eu     /* "nmethod" */
#define HS_NAME_NATIVE 0x6974616eu      /* "native nmethod" (a JNI wrapper: keeps rbp) */
#define HS_NAME_INTERPRETER 0x65746e49u /* "Interpreter" */
#define HS_NAME_VTABLE 0x62617476u      /* "vtable chunks": only the return address is pushed */

struct hs_heap {
  __u64 low, high; /* the heap's reserved range [low, high) (VirtualSpace low/high_boundary) */
  __u64 segmap;    /* its segment map: one byte per segment (CodeHeap::_segmap's low) */
  __u32 shift;     /* log2 of its segment size (CodeHeap::_log2_segment_size) */
  __u32 reserved;
};

/* Offsets into the JVM's structures, from its VMStructs tables (user space fails when a field is
 * missing, never guesses). */
struct hs_offsets {
  __u32 heapblock_size;      /* sizeof(HeapBlock): a blob starts this far into its segment */
  __u32 blob_name;           /* CodeBlob::_name (const char*) */
  __u32 blob_frame_size;     /* CodeBlob::_frame_size (int, words) */
  __u32 blob_frame_complete; /* CodeBlob::_frame_complete_offset (int; from code begin) */
  __u32 blob_code_begin;     /* CodeBlob::_code_begin (a pointer), or _code_offset (an int from
                              * the blob: hs_offsets.code_begin_is_offset) */
  __u32 code_begin_is_offset;
  __u32 method_const;     /* Method::_constMethod */
  __u32 constmethod_size; /* sizeof(ConstMethod): its bytecodes follow it */
  /* Interpreter frame slots, in words from rbp (negative: below it; frame_x86.hpp) */
  __s32 interp_method;        /* interpreter_frame_method_offset: -3 */
  __s32 interp_sender_sp;     /* interpreter_frame_sender_sp_offset: -1 */
  __s32 interp_bcp;           /* interpreter_frame_bcp_offset: -8 (JDK 9+), -7 before */
  __u32 frame_complete_bytes; /* of CodeBlob::_frame_complete_offset: 4 (int) to JDK 22, 2
                               * (int16_t) from JDK 23 */
  __u32 nm_compile_id;        /* nmethod::_compile_id (int; CompiledMethod's in some JDKs): past
                               * the HS_BLOB_READ bytes (304 in JDK 17), read on its own */
  __s32 interp_mirror;        /* interpreter_frame_mirror_offset: -4 (JDK 9+; 0: none), the
                               * holder class's java.lang.Class, mixed into the stack's hash */
};

/* A process running a HotSpot JVM (hotspot_procs, by tgid). Addresses are the process's own. */
struct hs_proc {
  struct hs_heap heaps[HS_MAX_HEAPS]; /* heaps[i].high == 0: unused */
  __u64 code_start, code_end;         /* every heap's range: the first check of a pc */
  __u64 interp_start, interp_end; /* the template interpreter's code (AbstractInterpreter::_code) */
  struct hs_offsets off;
};

/* Java frames in a walked stack (unwind_stack.frames; the top nibble tags a value, bpf/python.h):
 * - HS_FRAME_CODE: a code blob's frame, by the blob's offset in the code cache (from
 *   hs_proc.code_start; a blob is 16-byte aligned, a HeapBlock header past a segment boundary, and
 *   the code cache is at most 2 GiB: 27 bits), the nmethod's generation (the low 16 bits of its
 *   compile id, 0 for a blob that is no nmethod) and the pc's offset from the blob (17 bits;
 *   HS_OFFSET_UNKNOWN when it does not fit). The generation tells apart two nmethods the JVM put
 *   at one address in turn (one flushed, its memory reused): their frames are different values,
 *   so different stacks, and user space names each by the nmethod that ran, or not at all.
 *   TAG_HS_RETURN: the pc is a return address (its call is just before it: PcDesc is keyed by
 *   it); TAG_HS_PC: where the thread was (or a pc the frame was deoptimized from).
 * - HS_FRAME_INTERP: an interpreted frame, by its Method* >> 3 (44 bits) and bytecode index (16
 *   bits; HS_BCI_UNKNOWN when the bcp is not in the method's bytecodes). A Method's memory is
 *   reused once its class is unloaded, and no bit is left for a generation: the frame's class
 *   mirror (a heap object of each class loaded) goes into the stack's hash instead, so that a
 *   stack of the new method is a new stack, announced, and user space sees the Method* hold
 *   another method (and names neither, rather than one by the other's name). */
#define HS_OFFSET_BITS 17
#define HS_OFFSET_UNKNOWN 0x1ffffu
#define HS_GEN_BITS 16
#define HS_GEN_MASK 0xffffu
#define HS_BLOB_BITS 27
#define HS_CODE_CACHE_MAX (1ull << (HS_BLOB_BITS + 4)) /* 2 GiB: HotSpot's own limit */
#define HS_GEN(compile_id) ((__u32)(compile_id)&HS_GEN_MASK)
#define HS_FRAME_CODE(tag, code_start, blob, gen, offset)                             \
  (((__u64)(tag) << UNWIND_FRAME_TAG_SHIFT) |                                         \
   ((((__u64)(blob) - (__u64)(code_start)) >> 4) << (HS_GEN_BITS + HS_OFFSET_BITS)) | \
   ((__u64)HS_GEN(gen) << HS_OFFSET_BITS) |                                           \
   ((__u64)(offset) < HS_OFFSET_UNKNOWN ? (__u64)(offset) : (__u64)HS_OFFSET_UNKNOWN))
#define HS_FRAME_BLOB(v, code_start) \
  ((__u64)(code_start) + ((((v) << 4) >> (4 + HS_GEN_BITS + HS_OFFSET_BITS)) << 4))
#define HS_FRAME_GEN(v) ((__u32)((v) >> HS_OFFSET_BITS) & HS_GEN_MASK)
#define HS_FRAME_OFFSET(v) ((__u32)((v)&HS_OFFSET_UNKNOWN))
#define HS_BCI_BITS 16
#define HS_BCI_UNKNOWN 0xffffu
#define HS_FRAME_INTERP(method, bci)                        \
  ((UNWIND_FRAME_TAG_HS_INTERP << UNWIND_FRAME_TAG_SHIFT) | \
   (((__u64)(method) >> 3) << HS_BCI_BITS) | ((__u64)(bci)&HS_BCI_UNKNOWN))
#define HS_FRAME_METHOD(v) ((((v) << 4) >> (4 + HS_BCI_BITS)) << 3)
#define HS_FRAME_BCI(v) ((__u32)((v)&HS_BCI_UNKNOWN))

#endif
