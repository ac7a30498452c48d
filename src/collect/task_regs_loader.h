#pragma once
/* `uscope dump`'s task iterator (bpf/task_regs.bpf.c) loaded through its light skeleton, which is
 * C only (its generated code converts from void*): this is the C side, thread_regs.cc the rest. */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct task_regs;

/* Loads dump_task for the threads of `tgid`: the skeleton in *skel (freed by task_regs_unload)
 * and 0, or a negative errno (*skel is then null). */
int task_regs_load(uint32_t tgid, struct task_regs** skel);
/* The loaded program's fd, for bpf_link_create (owned by the skeleton). */
int task_regs_program_fd(const struct task_regs* skel);
void task_regs_unload(struct task_regs* skel);

#ifdef __cplusplus
}
#endif
