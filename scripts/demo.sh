#!/usr/bin/env bash
# Installs what is needed, builds, and shows uscope on the bundled demo program.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
run() { printf '\n$ %s\n' "$*"; "$@"; }
run build/uscope list build/uscope-demo 'process_order'
run build/uscope list build/uscope-demo 'demo:*'
run build/uscope check
