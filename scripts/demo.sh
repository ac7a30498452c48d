#!/usr/bin/env bash
# Installs what is needed, builds, and shows uscope on the bundled demo program (run as root:
# attaching uprobes needs CAP_BPF and CAP_PERFMON).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Only what the demo runs (uscope and its demo program): the tests and fixtures are test.sh's.
BUILD_TARGETS="uscope uscope-demo" scripts/build.sh
run() { printf '\n$ %s\n' "$*"; "$@"; }
demo=build/uscope-demo
run build/uscope list $demo 'process_order'
run build/uscope list $demo 'demo:*'
run build/uscope check
# Function arguments (a pointer + length string) and a USDT probe whose semaphore uscope raises.
run build/uscope trace -M 6 -c "$demo 10 20" \
  'p::process_order "id=%d item=%s qty=%d", arg1, str(arg2, arg3), arg4' \
  'u::demo:order__done "order %d: %s = %ld cents", arg1, arg2, arg3'
run build/uscope trace -M 2 -c "$demo 5 20" 'r::price_of (retval > 150) "%s -> %ld", $entry(arg1), retval'
run build/uscope count -c "$demo 40 1" 'process_*' 'price_of' 'c:str*'
run build/uscope latency -c "$demo 40 1" 'process_order' 'price_of'
# A CPU profile of the demo taking orders as fast as it can, as an interactive flame graph.
run build/uscope profile -F 999 -c "$demo 200000000 0" -o build/demo-cpu.svg
printf '\nflame graph: %s (open it in a browser)\n' "$PWD/build/demo-cpu.svg"
