#!/usr/bin/env bash
# Installs everything uscope needs to build, test (also with ASan/UBSan and libFuzzer) and benchmark,
# from Debian 12's apt only, on a minimal root (debootstrap --variant=minbase).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
packages=(
  # build
  cmake g++ make pkg-config clang llvm bpftool libbpf-dev
  libelf-dev libdw-dev libcapstone-dev libzydis-dev libiberty-dev zlib1g-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libexpected-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev
  # uscope agent: its HTTP listener (/metrics), config file, pushes, and the metrics model
  libmicrohttpd-dev libyaml-cpp-dev libcurl4-openssl-dev prometheus-cpp-dev
  # man pages made from --help at build time (uscope-trace(1), ...), and man to test them
  help2man man-db
  # pprof's profile.proto (compiled into the pprof output), libpng to check flame graph screenshots
  golang-github-google-pprof-dev libpng-dev
  # sanitizers and fuzzers: g++'s ASan/UBSan runtimes come with it; clang's (and libFuzzer) do not
  libasan8 libubsan1 libclang-rt-14-dev
  # fixtures and real targets the tests attach to
  systemtap-sdt-dev binutils elfutils xz-utils python3.11 openjdk-17-jdk-headless golang-go rustc
  libssl3 openssl redis-server redis-tools
  # uscope tls: a client (curl), and libssl.a for a program with OpenSSL linked into it
  curl libssl-dev
  # libc's separate debug file: the names of its internal functions (__memcpy_avx2_...)
  libc6-dbg
  # Python frames: python3.11's debug file (its eval function's .cold part, the functions
  # profiles show as [unknown in python3.11]) and the Py_DEBUG interpreter python3.11d with its
  # headers; the release headers, whose offsetof the table of CPython offsets is checked against
  python3.11-dbg libpython3.11-dbg libpython3.11-dev
  # JavaScript frames: node (Debian's nodejs 18, V8 in libnode.so.108 with its v8dbg_* constants)
  nodejs
  # runtime tools (gc, threads, ...): Ruby's and PHP's interpreters, whose USDT probes they read
  ruby php-cli
  # tools tests and scripts run: setpriv (util-linux), ps (procps), file; chromium renders the
  # SVG flame graph headless
  util-linux procps file chromium
  # peers for benchmarks, and the python3 that runs them; a big stripped Go binary (prometheus,
  # ~63,000 functions) for bench/big_binary.py, and the real Go server http_prometheus_test traces
  bpftrace linux-perf python3 prometheus
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
