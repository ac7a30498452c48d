#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for SECONDS (default 20)
# from a seed corpus of real files. Fails on the first crash, leak or timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DUSCOPE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)"
corpus_root=build-fuzz/corpus
# Seeds from real inputs of this machine, so each run starts from valid structure.
seed() { mkdir -p "$corpus_root/$1"; cp -f "$2" "$corpus_root/$1/seed-$(basename "$2")" 2>/dev/null || true; }
seed elf_file_fuzz /usr/bin/true
seed elf_file_fuzz /usr/lib/x86_64-linux-gnu/libz.so.1
seed ld_so_cache_fuzz /etc/ld.so.cache
cat /proc/self/maps > "$corpus_root/proc_maps_fuzz.seed" && seed proc_maps_fuzz "$corpus_root/proc_maps_fuzz.seed"
printf '%s' '-4@%eax 8@-8(%rbp) 8@(%rax,%rdx,8) 8@foo(%rip) -2@$5' > "$corpus_root/usdt_args.seed" && seed usdt_args_fuzz "$corpus_root/usdt_args.seed"
printf '%s' 'r:c:malloc (arg1 > 100 && $comm == "x") "size=%d -> %p", $entry(arg1), retval' > "$corpus_root/spec.seed" && seed probe_spec_fuzz "$corpus_root/spec.seed"
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
