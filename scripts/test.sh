#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test: unit tests (no root), end-to-end tests
# (attach to real processes; need root and BPF: a missing capability fails them) and each
# libFuzzer target for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j2 --timeout 300
scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
