#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test, as CI does (.ci/run):
#   build/          the developer build (warnings are errors): unit tests (no root) and end-to-end
#                   tests (attach to real processes; need root and BPF: a missing capability fails)
#   build-asan/     uscope and the tests with ASan + UBSan: unit and end-to-end tests again, so the
#                   end-to-end tests run the sanitized uscope (they find it through USCOPE_BIN)
#   build-fuzz/     each libFuzzer target for FUZZ_SECONDS (default 10) from its seed corpus
# The last lines give the test counts. Exits non-zero if anything failed, or if a test skipped
# (scripts/ctest-skips.py: ctest counts a skip as a pass, CI does not).
set -euo pipefail
cd "$(dirname "$0")/.."

# Runs ctest in build dir $1 (further arguments go to ctest); leaves "dir: N passed, S skipped,
# M failed" in $summaries.
summaries=()
failed_any=0
run_ctest() {
  local dir=$1 log=$1/logs/ctest.log junit=$1/logs/ctest.xml
  shift
  mkdir -p "$dir/logs"
  echo "ctest in $dir (log: $log)" >&2
  ctest --test-dir "$dir" --output-on-failure -j2 --timeout 300 --output-junit "$(realpath "$junit")" \
    "$@" >"$log" 2>&1 || failed_any=1
  grep -E '^[0-9]+% tests passed|^The following tests FAILED|^[[:space:]]+[0-9]+ - ' "$log" >&2 || true
  local summary failed total
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" || true)
  if [ -z "$summary" ]; then
    tail -40 "$log" >&2
    summaries+=("$dir: ctest did not finish (log: $log)")
    failed_any=1
    return
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$summary")
  total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
  local skips skipped
  skips=$(scripts/ctest-skips.py "$junit") || failed_any=1
  echo "$skips" >&2
  skipped=$(head -1 <<<"$skips" | cut -d' ' -f1)
  [[ $skipped =~ ^[0-9]+$ ]] || skipped=0
  summaries+=("$dir: $((total - failed - skipped)) passed, $skipped skipped, $failed failed")
}
# RUN_CTEST_ONLY=DIR [ctest args]: only run_ctest on an existing build (to check this script).
if [ -n "${RUN_CTEST_ONLY:-}" ]; then
  run_ctest "$RUN_CTEST_ONLY" "$@"
  printf 'tests %s\n' "${summaries[@]}"
  exit $failed_any
fi

scripts/install-deps.sh
scripts/build.sh
# No separate Release tree (a packager's build, docs/DEVELOPING.md): it would only check that uscope
# compiles with -O3 -DNDEBUG, and build/ already compiles all of it with -DNDEBUG (RelWithDebInfo)
# and -Werror, while build-asan/ and build-fuzz/ (clang) compile it with other flags. It cost 210 s
# of CI's time (issue 20).
# Each tree's tests run while the next tree builds, niced: the tests take little CPU (most of their
# time the end-to-end tests wait for a fixture or a session, one at a time), and must pass with
# both cores busy anyway. What a compile produces does not depend on the CPU it gets; the fuzzers'
# runs do, so they run alone, last.
# Warnings are not errors in build-asan/: the sanitizers' instrumentation makes g++ 12 warn falsely
# (e.g. -Wmaybe-uninitialized inside std::regex); build/ holds the code to -Werror.
nice -n 10 scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DUSCOPE_SANITIZE=address,undefined &
asan_build=$!
run_ctest build
if ! wait $asan_build; then
  printf 'tests %s\n' "${summaries[@]}"
  exit 1
fi
nice -n 10 scripts/fuzz.sh build &
fuzz_build=$!
# halt_on_error and no recovery: the first report fails the test that caused it, with a stack.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 run_ctest build-asan
if wait $fuzz_build; then
  scripts/fuzz.sh "${FUZZ_SECONDS:-10}" || { failed_any=1; summaries+=("fuzz: FAILED"); }
else
  failed_any=1
  summaries+=("fuzz: build FAILED")
fi
# The test counts once more as the last lines, after the fuzzers' output.
printf 'tests %s\n' "${summaries[@]}"
exit $failed_any
