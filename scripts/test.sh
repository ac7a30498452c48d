#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test: unit tests (no root), end-to-end tests
# (attach to real processes; need root and BPF: a missing capability fails them) and each
# libFuzzer target for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p build/logs
ctest --test-dir build --output-on-failure -j2 --timeout 300 2>&1 | tee build/logs/ctest.log
scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
# The test count once more as the last line, after the fuzzers' output.
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' build/logs/ctest.log)
failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$summary")
total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
echo "tests: $((total - failed)) passed, $failed failed"
