#include "collect/task_regs_loader.h"

#include <errno.h>

#include "task_regs.lskel.h"

int task_regs_load(uint32_t tgid, struct task_regs** skel) {
  *skel = task_regs__open();
  if (!*skel) return -ENOMEM;
  (*skel)->rodata->target_tgid = tgid;
  int err = task_regs__load(*skel); /* a negative errno */
  if (err) {
    task_regs__destroy(*skel);
    *skel = 0;
    return err < 0 ? err : -EINVAL;
  }
  return 0;
}

int task_regs_program_fd(const struct task_regs* skel) {
  return skel->progs.dump_task.prog_fd;
}

void task_regs_unload(struct task_regs* skel) {
  task_regs__destroy(skel);
}
