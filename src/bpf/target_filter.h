/* SPDX-License-Identifier: GPL-2.0 */
/* Which processes a uscope BPF program acts on; every program includes this once, and the loader
 * (attach/bpf_loader.h, BpfObject::set_target) sets the variables by name before load. BPF only. */
#pragma once

const volatile __u32 target_tgid = 0; /* 0: every process */
const volatile __u32 self_tgid = 0; /* uscope itself: never traced, or its own output would loop */
/* -c: the target runs uscope's code between its fork and its exec; only the command counts. A
 * forked child's self_exec_id equals its parent_exec_id until its exec increments it (copy_process,
 * begin_new_exec); threads inherit both, so they differ in every thread of the exec'd command. */
const volatile __u32 only_after_exec = 0;

static __always_inline int before_exec(void) {
  struct task_struct* t = bpf_get_current_task_btf();
  return BPF_CORE_READ(t, self_exec_id) == BPF_CORE_READ(t, parent_exec_id);
}

/* Whether the current task is one the program should act on. */
static __always_inline int target_matches(__u32 tgid) {
  if ((target_tgid && tgid != target_tgid) || tgid == self_tgid) return 0;
  if (only_after_exec && before_exec()) return 0;
  return 1;
}
