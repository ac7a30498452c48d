// SPDX-License-Identifier: GPL-2.0
// Counts hits per attach site. The bpf cookie of each uprobe link is the site's index into `hits`,
// so one program serves any number of sites without recompiling.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "hit_counter.h"

#include "target_filter.h"

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, HIT_COUNTER_DEFAULT_SITES); /* resized before load */
  __type(key, __u32);
  __type(value, __u64);
} hits SEC(".maps");

static __always_inline int count(struct pt_regs* ctx) {
  if (!target_matches(bpf_get_current_pid_tgid() >> 32)) return 0;
  __u32 site = (__u32)bpf_get_attach_cookie(ctx);
  __u64* n = bpf_map_lookup_elem(&hits, &site);
  if (n) *n += 1;
  return 0;
}

/* Attached through one perf-event uprobe link per site. */
SEC("uprobe")
int count_hit(struct pt_regs* ctx) {
  return count(ctx);
}

/* Attached through uprobe_multi links: user space sets its expected attach type before load
 * (libbpf 1.1 does not know the "uprobe.multi" section) and disables autoload when the kernel
 * lacks the link type. */
SEC("uprobe")
int count_hit_multi(struct pt_regs* ctx) {
  return count(ctx);
}

char LICENSE[] SEC("license") = "GPL";
