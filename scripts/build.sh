#!/usr/bin/env bash
# Configures and builds uscope. The compiler's output goes to DIR/logs/build.log and is shown only
# when the build fails.
#   scripts/build.sh                      build/: the developer build (binary: build/uscope),
#                                         RelWithDebInfo, warnings are errors
#   scripts/build.sh DIR [CMAKE_ARG...]   DIR configured with these arguments instead;
#                                         BUILD_TARGETS="uscope ..." builds only those targets
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
if (($# > 1)); then
  shift
  configure=("$@")
else
  configure=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSCOPE_WERROR=ON)
fi
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
mkdir -p "$dir/logs"
echo "building $dir: ${BUILD_TARGETS:-uscope, its tests and fixtures} (log: $dir/logs/build.log)" >&2
SECONDS=0
if ! { cmake -S . -B "$dir" "${configure[@]}" &&
       cmake --build "$dir" -j"$(nproc)" "${targets[@]}"; } > "$dir/logs/build.log" 2>&1; then
  tail -60 "$dir/logs/build.log" >&2
  echo "build of $dir failed (full log: $dir/logs/build.log)" >&2
  exit 1
fi
echo "built $dir in ${SECONDS}s" >&2
