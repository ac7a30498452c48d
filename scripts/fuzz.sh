#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for SECONDS (default 20)
# from a seed corpus of real files. Fails on the first crash, leak or timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DUSCOPE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)"
corpus_root=build-fuzz/corpus
for target in build-fuzz/fuzz/*_fuzz; do
  name=$(basename "$target")
  corpus=$corpus_root/$name
  mkdir -p "$corpus"
  if [ -d "fuzz/seeds/$name" ]; then cp -n fuzz/seeds/"$name"/* "$corpus"/ 2>/dev/null || true; fi
  echo "fuzz: $name for ${seconds}s" >&2
  log=build-fuzz/$name.log
  if ! "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/ "$corpus" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "fuzz: $name FAILED (log: $log)" >&2
    exit 1
  fi
  grep -E 'stat::number_of_executed_units' "$log" | sed "s/^/fuzz: $name /" >&2
done
