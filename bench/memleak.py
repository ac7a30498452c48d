#!/usr/bin/python3
"""What `uscope memleak` costs an allocation-heavy program (issue 25: per-allocation cost on a
program doing ~1 M malloc/free pairs per second, full and sampled, against bpftrace doing the
same; goal: sampled < 5% slowdown), in one run. Needs root, build/uscope, cc and bpftrace.

    python3 bench/memleak.py                                # the table on stdout
    python3 bench/memleak.py --markdown docs/BENCHMARKS.md  # also into that file

The workload: --pairs malloc(64)/free pairs in a loop, with arithmetic between them so that it
does one pair per --pair-ns without a tool (~1 M pairs/s), and one block in 1,000 kept (a leak
for the tools to find); it prints its wall time. Gated as bench/offcpu.py's is (the tool attaches by
PID before the work starts). Modes, interleaved in each round:

  none             no tool
  bpftrace         bcc's memleak in bpftrace: malloc's size at entry, at its return the block's
                   size and user stack (frame pointers) kept by address and summed by stack, and
                   at free the block found and taken off its stack's sum
  uscope           `uscope memleak -p PID`: every block followed (stacks by CFI)
  uscope-sampled   `uscope memleak --sample-bytes 512K -p PID`: one block per 512 KiB followed

The table: medians of --runs rounds after one discarded: the workload's wall time, its ratio to
`none` and the time each tool adds per pair. Every call still traps into the kernel in sampled
mode (a uprobe on malloc and free, a return probe on malloc: ~0.4-1 µs each on this VM); what
sampling saves is the BPF work of following a block (its stack walk, its table entries).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/memleak.py: begin generated -->"
END_MARK = "<!-- bench/memleak.py: end generated -->"
ROOT = Path(__file__).resolve().parent.parent
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"

ALLOCATOR = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void* kept[100000];

static uint64_t now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long spins; /* arithmetic between two pairs, calibrated to --pair-ns */

__attribute__((noinline)) static void work(void) {
  volatile uint64_t x = 0;
  for (long i = 0; i < spins; ++i) x = x * 31 + 7;
}

__attribute__((noinline)) static void pairs(long n) {
  size_t k = 0;
  for (long i = 0; i < n; ++i) {
    work();
    void* volatile p = malloc(64);
    if (i % 1000 == 0 && k < sizeof kept / sizeof kept[0])
      kept[k++] = p;
    else
      free(p);
  }
}

int main(int argc, char** argv) {
  long n = atol(argv[1]);
  uint64_t pair_ns = strtoull(argv[2], NULL, 10);
  spins = 1000000;
  uint64_t t0 = now();
  work();
  double per_spin = (double)(now() - t0) / spins;
  spins = (long)(pair_ns / per_spin);
  printf("ready\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 1;
  uint64_t t = now();
  pairs(n);
  printf("done %llu\n", (unsigned long long)(now() - t));
  fflush(stdout);
  fgets(line, sizeof line, stdin);
  return 0;
}
"""

MODES = ["none", "bpftrace", "uscope", "uscope-sampled"]


def bpftrace_script(pid: int) -> str:
    return f"""
uprobe:{LIBC}:malloc /pid == {pid}/ {{ @size[tid] = arg0; }}
uretprobe:{LIBC}:malloc /pid == {pid}/ {{
  @sz[retval] = @size[tid];
  @stk[retval] = ustack;
  @out[ustack] = sum(@size[tid]);
  delete(@size[tid]);
}}
uprobe:{LIBC}:free /pid == {pid} && @sz[arg0]/ {{
  @out[@stk[arg0]] = sum(-@sz[arg0]);
  delete(@sz[arg0]);
  delete(@stk[arg0]);
}}
"""


def uprobes_of(pid: int) -> list:
    """The uprobes (perf events) process `pid` holds, as bpftool lists them."""
    out = subprocess.run(["bpftool", "perf", "list", "-j"], capture_output=True, text=True).stdout
    return [p for p in json.loads(out or "[]") if p.get("pid") == pid and
            p.get("fd_type") in ("uprobe", "uretprobe")]


def one(mode: str, exe: Path, uscope: str, n: int, pair_ns: int) -> int:
    """The workload's wall ns under `mode`."""
    target = subprocess.Popen([str(exe), str(n), str(pair_ns)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert target.stdout.readline().strip() == "ready"
    tool = None
    if mode == "bpftrace":
        tool = subprocess.Popen(["bpftrace", "-e", bpftrace_script(target.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        wait_for = "Attaching"
        stream = tool.stdout
    elif mode.startswith("uscope"):
        args = [uscope, "memleak", "-p", str(target.pid)]
        if mode == "uscope-sampled":
            args[2:2] = ["--sample-bytes", "512K"]
        tool = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for = "Ctrl-C to stop"
        stream = tool.stderr
    if tool:
        while True:
            line = stream.readline()
            assert line, f"{mode} ended before attaching"
            if wait_for in line:
                break
        if mode == "bpftrace":  # "Attaching" comes before the probes are: wait for all three
            while len(uprobes_of(tool.pid)) < 3:
                time.sleep(0.05)
    target.stdin.write("go\n")
    target.stdin.flush()
    words = target.stdout.readline().split()
    assert words and words[0] == "done", words
    if tool:
        # Stopped while the target lives: bpftrace names a dead process's stacks slowly.
        tool.send_signal(signal.SIGINT)
        out, err = tool.communicate(timeout=300)
        if mode.startswith("uscope"):
            assert tool.returncode == 0, err
            # Every kept block found (sampled: 12.8 KB kept of 64 MB is rarely sampled at all).
            assert " bytes in " in out or mode == "uscope-sampled", out
    target.stdin.close()
    target.wait()
    return int(words[1])


def measure(a) -> dict:
    exe = a.workdir / "allocator"
    (a.workdir / "allocator.c").write_text(ALLOCATOR)
    subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(a.workdir / "allocator.c")], check=True)
    wall = {m: [] for m in MODES}
    with R.Tracefs():
        for r in range(a.runs + 1):
            for m in MODES:
                w = one(m, exe, str(a.uscope), a.pairs, a.pair_ns)
                if r:
                    wall[m].append(w)
    return {"wall": wall}


def report(a, res: dict, seconds: float) -> str:
    med = {m: statistics.median(v) for m, v in res["wall"].items()}
    L = [f"### Medians of {a.runs} rounds after one discarded: {a.pairs:,} malloc(64)/free pairs "
         f"({a.pairs / (med['none'] / 1e9) / 1e6:.1f} M pairs/s without a tool)", "",
         "| tool | wall time | ratio to none | added per pair |", "|---|---|---|---|"]
    for m in MODES:
        added = "—" if m == "none" else f"{(med[m] - med['none']) / a.pairs / 1e3:.2f} µs"
        L.append(f"| {m} | {med[m] / 1e6:.0f} ms | {med[m] / med['none']:.1f}x | {added} |")
    L.append("")
    L.append("Command: `scripts/build.sh && python3 bench/memleak.py --markdown docs/BENCHMARKS.md`")
    return "\n".join(L)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--uscope", type=Path, default=ROOT / "build/uscope")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--pairs", type=int, default=1_000_000)
    p.add_argument("--pair-ns", type=int, default=1000,
                   help="the workload's time per pair without a tool (1000: ~1 M pairs/s)")
    p.add_argument("--markdown", type=Path)
    return R.run_marked_bench("memleak", p.parse_args(), measure, report, BEGIN_MARK, END_MARK)


if __name__ == "__main__":
    sys.exit(main())
