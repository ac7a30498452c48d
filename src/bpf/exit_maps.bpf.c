// SPDX-License-Identifier: GPL-2.0
// The exit-maps program on its own (exit_maps.bpf.h), for the commands whose BPF program does not
// include it: trace, count, latency and the other uprobe commands.
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "exit_maps.bpf.h"

char LICENSE[] SEC("license") = "GPL";
