/* SPDX-License-Identifier: GPL-2.0 */
/* Which processes a uscope BPF program acts on; every program includes this once, and the loader
 * (attach/bpf_loader.h, BpfObject::set_target) sets the variables by name before load. BPF only. */
#pragma once

#include "pre_exec_comm.h"

const volatile __u32 target_tgid = 0; /* 0: every process */
const volatile __u32 self_tgid = 0; /* uscope itself: never traced, or its own output would loop */
/* -c: the target runs uscope's code between its fork and its exec; only the command counts. uscope
 * forks it named USCOPE_PRE_EXEC_COMM, a name its exec replaces (LaunchedCommand). Not a CO-RE
 * read of the task's exec ids: a program without CO-RE relocations needs no kernel BTF, which
 * libbpf would parse (~5.5 MB: milliseconds and megabytes of uscope's peak memory) at each load. */
const volatile __u32 only_after_exec = 0;

static __always_inline int before_exec(void) {
  static const char pre_exec[16] = USCOPE_PRE_EXEC_COMM;
  char comm[16];
  if (bpf_get_current_comm(comm, sizeof(comm))) return 0;
#pragma unroll
  for (int i = 0; i < 16; i++)
    if (comm[i] != pre_exec[i]) return 0;
  return 1;
}

/* Whether the current task is one the program should act on. */
static __always_inline int target_matches(__u32 tgid) {
  if ((target_tgid && tgid != target_tgid) || tgid == self_tgid) return 0;
  if (only_after_exec && before_exec()) return 0;
  return 1;
}
