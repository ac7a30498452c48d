/* SPDX-License-Identifier: GPL-2.0 */
/* The unwinder's shared maps (layout in bpf/unwind.h). unwind_maps.bpf.c's copies are the ones
 * user space creates and fills (attach/unwind_maps.h); every other object that includes this
 * header (through unwind.bpf.h) is given their fds before it loads: one copy of the tables however
 * many programs walk stacks. BPF only. */
#pragma once

#include "hotspot.h"
#include "python.h"
#include "unwind.h"
#include "v8.h"

struct unwind_entries {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
  __uint(max_entries, 1); /* each table is sized to its rows */
  __type(key, __u32);
  __type(value, __u64); /* a header, a page or a row: all 8 bytes */
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, UNWIND_MAX_TABLES);
  __type(key, __u32);
  __array(values, struct unwind_entries);
} unwind_tables SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, UNWIND_MAX_RULES);
  __type(key, __u32);
  __type(value, struct unwind_rule);
} unwind_rules SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LPM_TRIE);
  __uint(max_entries, 1 << 18); /* ~100 a process: thousands of processes (allocated as used) */
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, struct unwind_mapping_key);
  __type(value, struct unwind_mapping);
} unwind_mappings SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1 << 14);
  __type(key, __u32);
  __type(value, struct unwind_proc);
} unwind_procs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16 << 10);
} unwind_requests SEC(".maps");

/* Processes running CPython (bpf/python.h), filled when their mappings are loaded. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1 << 12);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct py_proc);
} python_procs SEC(".maps");

/* Processes running V8 (bpf/v8.h), filled when their mappings are loaded. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1 << 12);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct v8_proc);
} v8_procs SEC(".maps");

/* A thread's PyThreadState, by tid, as the walker last found it: checked by one read (its
 * native_thread_id) before use, so a reused tid or a freed state is searched for again. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1 << 14);
  __type(key, __u32);
  __type(value, __u64);
} python_threads SEC(".maps");

/* Processes running a HotSpot JVM (bpf/hotspot.h), filled when their mappings are loaded. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1 << 10);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, __u32);
  __type(value, struct hs_proc);
} hotspot_procs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, UNWIND_NUM_STATS);
  __type(key, __u32);
  __type(value, __u64);
} unwind_stats SEC(".maps");

/* Moves on every change to unwind_procs or unwind_mappings: user space's loads and removals
 * (attach/unwind_maps.cc) and a loaded process's exec or exit (unwind_maps.bpf.c). A CPU's memory
 * of the process it walked last (unwind.bpf.h) holds while it has not moved. Mmapped by user space,
 * whose increments are atomic like these. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} unwind_generation SEC(".maps");

static __always_inline __u64 unwind_generation_now(void) {
  __u32 zero = 0;
  __u64* g = bpf_map_lookup_elem(&unwind_generation, &zero);
  return g ? *(volatile __u64*)g : 0;
}

static __always_inline void unwind_changed(void) {
  __u32 zero = 0;
  __u64* g = bpf_map_lookup_elem(&unwind_generation, &zero);
  if (g) __sync_fetch_and_add(g, 1);
}

static __always_inline void unwind_count_n(__u32 stat, __u64 n) {
  __u64* c = bpf_map_lookup_elem(&unwind_stats, &stat);
  if (c) *c += n;
}

static __always_inline void unwind_count(__u32 stat) {
  unwind_count_n(stat, 1);
}
