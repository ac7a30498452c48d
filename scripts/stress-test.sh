#!/usr/bin/env bash
# Runs the built test suite RUNS times in a row while HOGS busy loops (default: one per core) compete
# for the CPU at the tests' own priority: a test that depends on timing fails here. Build first
# (scripts/build.sh). Reports each run and which tests failed; exits non-zero if any run failed.
#   scripts/stress-test.sh [RUNS [BUILD_DIR]]      e.g. HOGS=4 scripts/stress-test.sh 5 build-asan
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
dir=${2:-build}
hogs=${HOGS:-$(nproc)}
[ -f "$dir/CTestTestfile.cmake" ] || { echo "no test build in $dir: run scripts/build.sh first" >&2; exit 2; }
hog_pids=()
trap '((${#hog_pids[@]})) && kill "${hog_pids[@]}" 2>/dev/null' EXIT
for ((i = 0; i < hogs; ++i)); do
  nice -n 0 yes >/dev/null &
  hog_pids+=($!)
done
mkdir -p "$dir/logs"
passed_runs=0
for ((run = 1; run <= runs; ++run)); do
  log=$dir/logs/stress-$run.log
  SECONDS=0
  if ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300 >"$log" 2>&1; then
    passed_runs=$((passed_runs + 1))
    status=passed
  else
    status=FAILED
  fi
  summary=$(grep -E '^[0-9]+% tests passed' "$log" || echo "ctest did not finish")
  echo "stress run $run/$runs ($hogs hogs): $status in ${SECONDS}s: $summary (log: $log)"
  grep -E '^[[:space:]]+[0-9]+ - ' "$log" | sed 's/^[[:space:]]*/  failed: /' || true
done
echo "stress: $passed_runs of $runs runs passed with $hogs busy loops"
((passed_runs == runs))
