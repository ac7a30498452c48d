/* SPDX-License-Identifier: GPL-2.0 */
/* The executable mappings of a process, read as it exits (exit_maps.h says what is sent): the
 * program and its maps, in the object of exit_maps.bpf.c and in the profiler's (profile.bpf.c), so
 * that a profile session loads one object that reads kernel structures, and libbpf parses the
 * kernel's BTF (/sys/kernel/btf/vmlinux, ~5.5 MB) once for it. BPF only; include after vmlinux.h
 * and the libbpf headers. The loader is collect/exit_maps.h.
 *
 * Since Linux 6.16 sched_process_exit fires before exit_mm(), so the exiting task's mm is still
 * there to walk (bpf_iter_task_vma, 6.7). A path is rebuilt as d_path does, from the dentry up
 * through the mounts: bpf_d_path is not allowed in tracepoints. The kfuncs are weak: an object
 * that includes this loads on a kernel without them as long as the program is left out. */
#pragma once

#include "exit_maps.h"

/* Every process's exit, or only those of the tgids in `exit_targets`. */
const volatile __u32 exit_every_process = 0;
/* uscope: its own exit is not sent, and its root ends each path's walk (path_walk). */
const volatile __u32 exit_reader_tgid = 0;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);
  __type(value, __u8);
} exit_targets SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4 << 20); /* sized before load (ExitMaps::configure) */
} exit_records SEC(".maps");

/* Records that did not fit in the ring: their process's snapshot is dropped by user space. */
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} exit_lost SEC(".maps");

extern int bpf_iter_task_vma_new(struct bpf_iter_task_vma* it, struct task_struct* task,
                                 __u64 addr) __ksym __weak;
extern struct vm_area_struct* bpf_iter_task_vma_next(struct bpf_iter_task_vma* it) __ksym __weak;
extern void bpf_iter_task_vma_destroy(struct bpf_iter_task_vma* it) __ksym __weak;
extern struct task_struct* bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct* p) __ksym __weak;

#define VM_EXEC_FLAG 0x4

static __always_inline void exit_record_lost(void) {
  __u32 zero = 0;
  __u64* n = bpf_map_lookup_elem(&exit_lost, &zero);
  if (n) *n += 1;
}

/* One step of d_path's walk: a component of the path, or a crossing from a mount's root to its
 * mount point. Through bpf_loop, so that the verifier sees the walk once, not once per mapping. */
struct path_walk {
  struct exit_mapping* r;
  struct dentry* d;
  struct mount* mnt;
  /* uscope's own root (chroot): the walk ends there, as d_path ends at the reader's root, so the
   * path is the one uscope opens, not the one from the mount namespace's root. */
  struct dentry* root_d;
  struct vfsmount* root_mnt;
};

static long path_step(__u64 i, void* ctx) {
  struct path_walk* w = ctx;
  struct exit_mapping* r = w->r;
  /* Locals: CO-RE relocates kernel types only, and path_walk is uscope's. */
  struct mount* mnt = w->mnt;
  struct dentry* d = w->d;
  if (d == w->root_d && &mnt->mnt == w->root_mnt) return 1;
  if (d == BPF_CORE_READ(mnt, mnt.mnt_root)) {
    struct mount* parent = BPF_CORE_READ(mnt, mnt_parent);
    if (parent == mnt) return 1; /* the root of the namespace */
    w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
    w->mnt = parent;
    return 0;
  }
  struct dentry* up = BPF_CORE_READ(d, d_parent);
  if (up == d) return 1;
  __u32 n = r->count;
  if (n >= EXIT_MAPS_DEPTH) {
    r->cut = 1;
    return 1;
  }
  bpf_probe_read_kernel_str(r->names[n], EXIT_MAPS_NAME, BPF_CORE_READ(d, d_name.name));
  r->count = n + 1;
  w->d = up;
  return 0;
}

/* The path of `file`, innermost component first, crossing mount points as d_path does. */
static __always_inline void file_path(struct exit_mapping* r, struct file* file,
                                      const struct path* root) {
  struct path_walk w = {.r = r, .root_d = root->dentry, .root_mnt = root->mnt};
  w.d = BPF_CORE_READ(file, f_path.dentry);
  w.mnt = container_of(BPF_CORE_READ(file, f_path.mnt), struct mount, mnt);
  r->count = 0;
  bpf_loop(EXIT_MAPS_DEPTH * 2, path_step, &w, 0);
}

/* What a walk counted, in a map rather than on the stack: the verifier proves an iterator's loop
 * by finding its states equal, and a stack counter that is compared later is a new state at every
 * turn. Per CPU; the program runs with migration off. */
struct exit_counts {
  __u32 sent; /* records sent by this walk */
  __u32 vmas; /* mappings this walk met, executable or not */
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct exit_counts);
} exit_counts SEC(".maps");

/* The walks of the exiting process's mappings (exit_walk_once). */
struct exit_walk {
  __u32 tgid;
  __u32 lost;   /* a record did not fit in the ring */
  __u32 done;   /* a walk met every mapping, and sent them all */
  __u32 failed; /* why no walk did: enum exit_unread */
  __u64 vdso;
  struct mm_struct* mm;
  struct path root;
};

static __always_inline void exit_send_end(struct exit_walk* w, __u32 sent, __u32 unread) {
  struct exit_mapping* end = bpf_ringbuf_reserve(&exit_records, sizeof(*end), 0);
  if (!end) {
    exit_record_lost();
    return;
  }
  end->tgid = w->tgid;
  end->kind = EXIT_MAPPING_END;
  end->start = end->end = end->offset = end->ino = 0;
  end->dev = end->cut = 0;
  end->unread = unread;
  end->count = sent; /* names[] stays unwritten: user space reads no names of an END */
  bpf_ringbuf_submit(end, 0);
}

/* One walk of the mappings: counts them all, and with `send`, sends the executable ones. -1 when
 * the iterator could not start. */
static __always_inline int exit_walk_vmas(struct exit_walk* w, struct exit_counts* c, int send) {
  /* The exiting task is the current one: bpf_get_current_task_btf()'s pointer is trusted here,
   * where a pointer handed through bpf_loop's context would not be. */
  struct task_struct* p = bpf_get_current_task_btf();
  struct bpf_iter_task_vma it;
  c->sent = c->vmas = 0;
  if (bpf_iter_task_vma_new(&it, p, 0) != 0) {
    bpf_iter_task_vma_destroy(&it);
    return -1;
  }
  /* No counter: the verifier proves an iterator's loop by convergence, not by unrolling it. */
  struct vm_area_struct* vma;
  while ((vma = bpf_iter_task_vma_next(&it))) {
    c->vmas++;
    if (!send || !(vma->vm_flags & VM_EXEC_FLAG)) continue;
    struct file* file = BPF_CORE_READ(vma, vm_file);
    __u64 start = vma->vm_start;
    if (!file && start != w->vdso) continue; /* JIT code: named by perf maps, read while alive */
    struct exit_mapping* r = bpf_ringbuf_reserve(&exit_records, sizeof(*r), 0);
    if (!r) {
      w->lost = 1;
      break;
    }
    r->tgid = w->tgid;
    r->start = start;
    r->end = vma->vm_end;
    r->cut = 0;
    r->unread = 0;
    r->count = 0;
    if (file) {
      r->kind = EXIT_MAPPING_FILE;
      r->offset = vma->vm_pgoff << 12;
      r->ino = BPF_CORE_READ(file, f_inode, i_ino);
      r->dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
      file_path(r, file, &w->root);
    } else {
      r->kind = EXIT_MAPPING_VDSO;
      r->offset = 0;
      r->ino = 0;
      r->dev = 0;
    }
    bpf_ringbuf_submit(r, 0);
    c->sent++;
  }
  bpf_iter_task_vma_destroy(&it);
  return 0;
}

/* One attempt, through bpf_loop. The walk cannot wait for locks (a tracepoint cannot sleep):
 * depending on the kernel, the iterator try-locks the mm, or the task and then each mapping, and
 * silently passes over a mapping that someone is changing (its lock taken for writing: an mmap by
 * another thread, a uprobe being installed in it). So a walk counts every mapping it meets, and
 * counts as whole only if it met all of mm->map_count; a cheap walk that only counts goes first.
 * Locks are held briefly, and a later attempt gets them. A walk found short after it sent its
 * records is closed by an END that tells user space to drop them. */
static long exit_walk_once(__u64 attempt, void* ctx) {
  struct exit_walk* w = ctx;
  __u32 zero = 0;
  struct exit_counts* c = bpf_map_lookup_elem(&exit_counts, &zero);
  if (!c) return 1;
  struct mm_struct* mm = w->mm; /* a local: CO-RE relocates kernel types only */
  __u32 expected = BPF_CORE_READ(mm, map_count);
  if (exit_walk_vmas(w, c, 0) != 0) {
    w->failed = EXIT_UNREAD_LOCKED;
    return 0;
  }
  if (c->vmas != expected) {
    w->failed = EXIT_UNREAD_SKIPPED;
    return 0;
  }
  if (exit_walk_vmas(w, c, 1) != 0) {
    w->failed = EXIT_UNREAD_LOCKED;
    return 0;
  }
  if (w->lost) { /* a full ring does not empty while this program runs */
    exit_record_lost();
    exit_send_end(w, c->sent, EXIT_UNREAD_RING_FULL);
    return 1;
  }
  if (c->vmas != expected || BPF_CORE_READ(mm, map_count) != expected) {
    exit_send_end(w, c->sent, EXIT_UNREAD_SKIPPED);
    w->failed = EXIT_UNREAD_SKIPPED;
    return 0;
  }
  exit_send_end(w, c->sent, EXIT_UNREAD_NONE);
  w->done = 1;
  return 1;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_maps, struct task_struct* p) {
  __u32 tgid = p->tgid;
  if (tgid == exit_reader_tgid) return 0;
  /* The group leader's exit: /proc/PID/maps reads the leader's mm, so it stops answering when the
   * leader leaves, whichever thread is last out (exit_group ends the threads in any order). Its
   * mm is whole until then, shared with any thread still running. */
  if (p->pid != tgid) return 0;
  if (!exit_every_process && !bpf_map_lookup_elem(&exit_targets, &tgid)) return 0;
  /* Pointers are read with BPF_CORE_READ, not loaded through the BTF pointer: the verifier looks
   * up each such load's type by name among the kernel's ~127,000 (btf_nested_type_is_trusted), at
   * every visit, which made this program's BPF_PROG_LOAD ~35 ms. Only the vma is used trusted. */
  struct mm_struct* mm = BPF_CORE_READ(p, mm);
  if (!mm) return 0; /* a kernel thread, or a kernel without the early tracepoint */
  struct exit_walk w = {.tgid = tgid, .mm = mm, .vdso = (__u64)BPF_CORE_READ(mm, context.vdso)};

  /* uscope's root, where each path's walk ends (path_walk). */
  struct task_struct* self = bpf_task_from_pid(exit_reader_tgid);
  if (self) {
    w.root.dentry = BPF_CORE_READ(self, fs, root.dentry);
    w.root.mnt = BPF_CORE_READ(self, fs, root.mnt);
    bpf_task_release(self);
  }
  bpf_loop(EXIT_MAPS_ATTEMPTS, exit_walk_once, &w, 0);
  if (!w.done && !w.lost)
    exit_send_end(&w, 0, w.failed); /* no attempt got a whole walk: user space counts it */
  return 0;
}
