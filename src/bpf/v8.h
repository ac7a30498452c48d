/* Shared by the BPF unwinder (unwind.bpf.h) and user space (discover/v8_runtime.h fills it,
 * attach/unwind_maps.h loads it, symbolize/v8_code.h names its frames): how a V8 (node) process's
 * JavaScript frames are told apart at sample time with no node flag, from V8's own postmortem
 * metadata (the v8dbg_* constants node or libnode exports for llnode).
 *
 * V8's generated code and its builtins keep frame pointers, so the native walk already goes
 * through them (a pc with no CFI is walked by rbp). What it lacks is a name: at such a pc, in a
 * process with a v8_proc, the walker reads the frame's slots below rbp:
 *   rbp + fp_context   the context (a tagged heap object) in a JavaScript frame; a Smi (low bit
 *                      clear) frame-type marker in a typed frame (entry, exit, stub, internal)
 *   rbp + fp_function  the JSFunction that runs; its SharedFunctionInfo (at function_shared) is
 *                      checked by its map's instance type before anything trusts it
 *   rbp + fp_bytecode_offset  a Smi (the bytecode offset + BytecodeArray's header - 1) in an
 *                      interpreted frame, whose rbp + fp_bytecode_array holds its BytecodeArray;
 *                      something else (the feedback vector, a spill slot) in compiled code
 * and records a tagged value (below) in place of the pc. User space reads the SharedFunctionInfo
 * (name, script, start position) while it lives: the profiler announces new stacks on its ring.
 * Objects move only in a GC, and a SharedFunctionInfo of running code lives in old space. */
#ifndef USCOPE_BPF_V8_H
#define USCOPE_BPF_V8_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "unwind.h"

/* Fixed on every 64-bit V8 without pointer compression (node's builds): checked against the
 * process's v8dbg_HeapObjectTag, v8dbg_SmiTagMask, v8dbg_SmiShiftSize by discover/v8_runtime. */
#define V8_HEAP_OBJECT_TAG 1ull
#define V8_HEAP_OBJECT_TAG_MASK 3ull
#define V8_SMI_TAG_MASK 1ull
#define V8_SMI_SHIFT 32

/* Byte offsets, from the process's v8dbg_* constants. */
struct v8_offsets {
  __s32 fp_context;           /* v8dbg_off_fp_context_or_frame_type (off_fp_context before) */
  __s32 fp_function;          /* v8dbg_off_fp_function */
  __s32 fp_bytecode_offset;   /* v8dbg_off_fp_bytecode_offset */
  __s32 fp_bytecode_array;    /* v8dbg_off_fp_bytecode_array */
  __u32 heap_object_map;      /* v8dbg_class_HeapObject__map__Map */
  __u32 map_instance_type;    /* v8dbg_class_Map__instance_type__uint16_t */
  __u32 function_shared;      /* v8dbg_class_JSFunction__shared__SharedFunctionInfo */
  __u32 bytecode_data;        /* v8dbg_class_BytecodeArray__data__uintptr_t: its header size */
  __u16 type_shared_function; /* v8dbg_type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE */
  __u16 type_bytecode_array;  /* v8dbg_type_BytecodeArray__BYTECODE_ARRAY_TYPE */
};

/* A process running V8 (v8_procs, by tgid). */
struct v8_proc {
  struct v8_offsets off;
};

/* How the frame ran. */
enum v8_frame_kind {
  V8_KIND_INTERPRETED = 0, /* Ignition: the frame holds a bytecode offset */
  V8_KIND_COMPILED,        /* JIT code (Sparkplug, Maglev, Turbofan): a pc in an anonymous
                            * mapping */
  V8_KIND_BUILTIN,         /* a JavaScript builtin of V8's embedded code (Array.prototype.map) */
};

/* A V8 frame in a walked stack (unwind_stack.frames), under UNWIND_FRAME_TAG_V8: the kind in 2
 * bits, the bytecode offset in 14 (V8_OFFSET_UNKNOWN when compiled, or too large), and the
 * SharedFunctionInfo's address (untagged: 8-byte aligned, below 2^47) >> 3 in the low 44. */
#define V8_OFFSET_BITS 14
#define V8_OFFSET_UNKNOWN 0x3fffu
#define V8_FRAME(sfi, kind, offset)                                              \
  ((UNWIND_FRAME_TAG_V8 << UNWIND_FRAME_TAG_SHIFT) | ((__u64)((kind)&3) << 58) | \
   ((__u64)((offset)&V8_OFFSET_UNKNOWN) << 44) | (((__u64)(sfi) >> 3) & ((1ull << 44) - 1)))
#define V8_FRAME_SFI(v) (((v) & ((1ull << 44) - 1)) << 3)
#define V8_FRAME_KIND(v) ((__u32)(((v) >> 58) & 3))
#define V8_FRAME_OFFSET(v) ((__u32)(((v) >> 44) & V8_OFFSET_UNKNOWN))

#endif
