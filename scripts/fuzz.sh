#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for SECONDS (default 20),
# starting from its seed corpus in fuzz/seeds/<target>/ (new inputs go to build-fuzz/corpus/).
# Fails on a crash, leak or timeout.
#   scripts/fuzz.sh [SECONDS [TARGET]]     e.g. scripts/fuzz.sh 600 elf_file_fuzz
#   scripts/fuzz.sh build                  only builds build-fuzz/
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
only=${2:-}
mkdir -p build-fuzz/logs
echo "building build-fuzz (log: build-fuzz/logs/build.log)" >&2
if ! { CC=clang CXX=clang++ cmake -S . -B build-fuzz -DUSCOPE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build build-fuzz -j"$(nproc)"; } >build-fuzz/logs/build.log 2>&1; then
  tail -60 build-fuzz/logs/build.log >&2
  echo "fuzz build failed (full log: build-fuzz/logs/build.log)" >&2
  exit 1
fi
[ "$seconds" != build ] || exit 0
# Targets run FUZZ_JOBS at a time (default: one per core; each libFuzzer process uses one), each
# with its own corpus and log. After a failure no further target starts; the running ones finish.
jobs_max=${FUZZ_JOBS:-$(nproc)}
declare -A running=() # pid -> target name
failed=0
# Waits for one running target and reports it: its executed units, or its log's end on failure.
reap_one() {
  local pid rc=0
  wait -n -p pid "${!running[@]}" || rc=$?
  local name=${running[$pid]} log=build-fuzz/logs/${running[$pid]}.log
  unset "running[$pid]"
  if ((rc != 0)); then
    tail -40 "$log" >&2
    echo "fuzz: $name FAILED (log: $log)" >&2
    failed=1
    return
  fi
  grep -E 'stat::number_of_executed_units' "$log" | sed "s/^/fuzz: $name /" >&2
}
for target in build-fuzz/fuzz/*_fuzz; do
  name=$(basename "$target")
  [ -z "$only" ] || [ "$name" = "$only" ] || continue
  while ((${#running[@]} >= jobs_max)); do reap_one; done
  ((failed == 0)) || break
  corpus=build-fuzz/corpus/$name
  mkdir -p "$corpus"
  seeds=fuzz/seeds/$name
  if [ ! -d "$seeds" ]; then
    echo "fuzz: warning: $name has no seed corpus in $seeds" >&2
    seeds=
  fi
  echo "fuzz: $name for ${seconds}s" >&2
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/ "$corpus" ${seeds:+"$seeds"} >"build-fuzz/logs/$name.log" 2>&1 &
  running[$!]=$name
done
while ((${#running[@]})); do reap_one; done
exit $failed
