#!/usr/bin/env bash
# Configures and builds uscope into build/ (binary: build/uscope), the developer build: warnings are
# errors. The compiler's output goes to build/logs/build.log and is shown only when the build fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build/logs
echo "building uscope, its tests and fixtures (log: build/logs/build.log)" >&2
if ! { cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSCOPE_WERROR=ON &&
       cmake --build build -j"$(nproc)"; } > build/logs/build.log 2>&1; then
  tail -60 build/logs/build.log >&2
  echo "build failed (full log: build/logs/build.log)" >&2
  exit 1
fi
