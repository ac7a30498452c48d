#!/usr/bin/python3
"""What `uscope profile --off-cpu` costs a program that switches often (issue 25: the target's
slowdown at ~50,000 context switches per second, goal < 2%), against a bcc-style offcputime
written in bpftrace, in one run. Needs root, build/uscope, cc and bpftrace.

    python3 bench/offcpu.py                                # the table on stdout
    python3 bench/offcpu.py --markdown docs/BENCHMARKS.md  # also into that file

The workload: two threads hand a token to each other (a semaphore each) --handoffs times, each
doing --work-ns of arithmetic before it passes the token on, so that the process switches about
1e9 / work-ns times a second; it prints its wall time, CPU time and the switches it made. Gated as
bench/runtime_tools.py's workloads are (the tool attaches by PID before the work starts). Modes,
interleaved in each round:

  none      no tool
  bpftrace  offcputime as bcc's, in bpftrace: at each sched_switch of the target, the leaving
            thread's kernel and user stacks (kstack, ustack: frame pointers) and the time, and
            on its return the wait summed by stacks (bpftrace 0.17 needs tracefs for the
            tracepoint: mounted for the run when it is not, and unmounted after)
  uscope    `uscope profile --off-cpu -p PID` (stacks by CFI, the reason, the same sums)

The table: medians of --runs rounds after one discarded: the workload's wall time and its ratio
to `none`, its switches per second, and the time each tool adds per switch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/offcpu.py: begin generated -->"
END_MARK = "<!-- bench/offcpu.py: end generated -->"
ROOT = Path(__file__).resolve().parent.parent

SWITCHER = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static sem_t turn[2];
static long handoffs;
static uint64_t work_ns;

static uint64_t now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void work(void) {
  uint64_t end = now(CLOCK_THREAD_CPUTIME_ID) + work_ns;
  volatile uint64_t x = 0;
  while (now(CLOCK_THREAD_CPUTIME_ID) < end) x = x * 31 + 7;
}

static void* player(void* arg) {
  int me = (int)(intptr_t)arg;
  for (long i = 0; i < handoffs; ++i) {
    sem_wait(&turn[me]);
    work();
    sem_post(&turn[1 - me]);
  }
  return NULL;
}

int main(int argc, char** argv) {
  handoffs = atol(argv[1]);
  work_ns = strtoull(argv[2], NULL, 10);
  sem_init(&turn[0], 0, 1);
  sem_init(&turn[1], 0, 0);
  printf("ready\n");
  fflush(stdout);
  char line[16];
  if (!fgets(line, sizeof line, stdin)) return 1;
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  uint64_t t = now(CLOCK_MONOTONIC), cpu = now(CLOCK_PROCESS_CPUTIME_ID);
  pthread_t a, b;
  pthread_create(&a, NULL, player, (void*)0);
  pthread_create(&b, NULL, player, (void*)1);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  uint64_t wall = now(CLOCK_MONOTONIC) - t;
  cpu = now(CLOCK_PROCESS_CPUTIME_ID) - cpu;
  getrusage(RUSAGE_SELF, &r1);
  long switches = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw);
  printf("done %llu %llu %ld\n", (unsigned long long)wall, (unsigned long long)cpu, switches);
  fflush(stdout);
  fgets(line, sizeof line, stdin);
  return 0;
}
"""

MODES = ["none", "bpftrace", "uscope"]


def bpftrace_script(pid: int) -> str:
    """bcc's offcputime, in bpftrace: stacks at the switch out (the leaving thread is the current
    one), the wait summed by them at the switch in."""
    return f"""
tracepoint:sched:sched_switch /pid == {pid}/ {{
  @start[tid] = nsecs;
  @kst[tid] = kstack;
  @ust[tid] = ustack;
}}
tracepoint:sched:sched_switch /@start[args->next_pid]/ {{
  $t = args->next_pid;
  @off[@kst[$t], @ust[$t]] = sum(nsecs - @start[$t]);
  delete(@start[$t]);
}}
"""


def one(mode: str, exe: Path, uscope: str, handoffs: int, work_ns: int, work: Path) -> list[int]:
    """The workload's wall ns, CPU ns and switches under `mode`."""
    target = subprocess.Popen([str(exe), str(handoffs), str(work_ns)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline().strip() == "ready"
    tool = None
    if mode == "bpftrace":
        tool = subprocess.Popen(["bpftrace", "-e", bpftrace_script(target.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        while True:
            line = tool.stdout.readline()
            assert line, "bpftrace ended before attaching"
            if line.startswith("Attaching"):
                break
    elif mode == "uscope":
        tool = subprocess.Popen([uscope, "profile", "--off-cpu", "-p", str(target.pid), "-o",
                                 str(work / "off.folded")], stderr=subprocess.PIPE, text=True)
        while True:
            line = tool.stderr.readline()
            assert line, "uscope ended before attaching"
            if "Ctrl-C to stop" in line:
                break
    target.stdin.write("go\n")
    target.stdin.flush()
    words = target.stdout.readline().split()
    assert words and words[0] == "done", words
    target.stdin.close()
    target.wait()
    if tool:
        if mode == "bpftrace":
            tool.terminate()
        tool.wait(timeout=120)
        if mode == "uscope":
            err = tool.stderr.read()
            assert tool.returncode == 0, err
            assert (work / "off.folded").stat().st_size > 0, err
    return [int(w) for w in words[1:4]]


def measure(a) -> dict:
    """The workload's wall time and switches, per mode, over --runs rounds after one discarded."""
    exe = a.workdir / "switcher"
    (a.workdir / "switcher.c").write_text(SWITCHER)
    subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe),
                    str(a.workdir / "switcher.c")], check=True)
    load0 = os.getloadavg()[0]
    wall = {m: [] for m in MODES}
    switches = {m: [] for m in MODES}
    with R.Tracefs():
        for r in range(a.runs + 1):
            for m in MODES:
                w, _, s = one(m, exe, str(a.uscope), a.handoffs, a.work_ns, a.workdir)
                if r:
                    wall[m].append(w)
                    switches[m].append(s)
    return {"wall": wall, "switches": switches, "load": (load0, os.getloadavg()[0])}


def report(a, res: dict, seconds: float) -> str:
    load0, load1 = res["load"]
    med = {m: statistics.median(v) for m, v in res["wall"].items()}
    sw = statistics.median(res["switches"]["none"])
    L = [f"### Medians of {a.runs} rounds after one discarded: {a.handoffs:,} handoffs of "
         f"{a.work_ns / 1e3:.0f} µs of work each (load average {load0:.2f} at the start, "
         f"{load1:.2f} at the end)", "",
         "| tool | wall time | ratio to none | switches/s | added per switch |",
         "|---|---|---|---|---|"]
    for m in MODES:
        rate = statistics.median(res["switches"][m]) / (med[m] / 1e9)
        added = "—" if m == "none" else f"{(med[m] - med['none']) / sw / 1e3:.2f} µs"
        L.append(f"| {m} | {med[m] / 1e6:.0f} ms | {med[m] / med['none']:.3f}x | {rate:,.0f} | "
                 f"{added} |")
    L.append("")
    L.append("Command: `scripts/build.sh && python3 bench/offcpu.py --markdown docs/BENCHMARKS.md`")
    return "\n".join(L)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--uscope", type=Path, default=ROOT / "build/uscope")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--handoffs", type=int, default=100_000)
    p.add_argument("--work-ns", type=int, default=20_000)
    p.add_argument("--markdown", type=Path)
    return R.run_marked_bench("offcpu", p.parse_args(), measure, report, BEGIN_MARK, END_MARK)


if __name__ == "__main__":
    sys.exit(main())
