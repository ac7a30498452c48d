#!/usr/bin/env bash
# Regenerates src/bpf/vmlinux.h from a kernel's BTF. The header is checked in so that builds never
# depend on the build machine's kernel; BPF programs use CO-RE, so it only has to be recent enough.
set -euo pipefail
btf=${1:-/sys/kernel/btf/vmlinux}
out=$(dirname "$0")/../src/bpf/vmlinux.h
bpftool btf dump file "$btf" format c > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out from $btf"
