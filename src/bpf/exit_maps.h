/* Shared by exit_maps.bpf.c and user space (collect/exit_maps.h): the executable mappings of a
 * process, sent as it exits, so that the addresses it left in events and stacks are named after it
 * is gone (its /proc/PID/maps is empty by the time user space reads its last events). */
#ifndef USCOPE_BPF_EXIT_MAPS_H
#define USCOPE_BPF_EXIT_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define EXIT_MAPS_DEPTH 16 /* path components kept: deeper paths are cut at the top */
#define EXIT_MAPS_NAME 64  /* bytes per component, with its NUL */
/* Walks of an exiting process's mappings tried before it is given up (exit_maps.bpf.h). */
#define EXIT_MAPS_ATTEMPTS 256

/* An END's `unread`: why its process has no snapshot (user space counts each apart). */
enum exit_unread {
  EXIT_UNREAD_NONE = 0,
  EXIT_UNREAD_LOCKED,    /* the iterator could not start: the mm or task was locked throughout */
  EXIT_UNREAD_SKIPPED,   /* the walk passed over a mapping locked for writing */
  EXIT_UNREAD_RING_FULL, /* records did not fit in the ring */
};

enum exit_mapping_kind {
  EXIT_MAPPING_FILE = 0, /* an executable mapping of a file */
  EXIT_MAPPING_VDSO,     /* the vdso (no file) */
  EXIT_MAPPING_END,      /* the last record of a process: `count` records came before it */
};

struct exit_mapping {
  __u32 tgid;
  __u32 kind;  /* enum exit_mapping_kind */
  __u64 start; /* runtime addresses [start, end) */
  __u64 end;
  __u64 offset; /* file offset of start */
  __u64 ino;
  __u32 dev;    /* the kernel's dev_t: major << 20 | minor */
  __u32 count;  /* END: mappings sent before it; otherwise path components in `names` */
  __u32 cut;    /* the path had more than EXIT_MAPS_DEPTH components */
  __u32 unread; /* END: enum exit_unread; otherwise 0 */
  char names[EXIT_MAPS_DEPTH][EXIT_MAPS_NAME]; /* the file's path, innermost component first */
};

#endif
