/* Shared by hit_counter.bpf.c and user space: per-site hit counters indexed by the attach cookie.
 */
#ifndef USCOPE_BPF_HIT_COUNTER_H
#define USCOPE_BPF_HIT_COUNTER_H

/* Value of one slot of the `hits` per-CPU array: the number of times site `cookie` was hit. */
#define HIT_COUNTER_DEFAULT_SITES 1

#endif
