#!/usr/bin/python3
"""What Go return probes cost: uprobes on every RET instead of a uretprobe (issue 10).

    python3 bench/go_returns.py                                 # print the table
    python3 bench/go_returns.py --markdown docs/BENCHMARKS.md   # also write it there

Per call of a probed function, in µs of wall time: each configuration runs its target with N_SMALL
and N_BIG calls under `uscope ... -c`, and the difference divided by N_BIG - N_SMALL removes
start-up and exit; the same without uscope gives the function's own cost, which is subtracted.
  - Go: gowork's main.work (a leaf without Go's stack check: its first instruction, a spill
    `mov [rsp+0x10], rbx`, is single-stepped; functions with the check are probed on its jcc) with `uscope count` (entry only) and `uscope latency` (entry + a uprobe on each RET, keyed by
    goroutine). latency minus count is the RET site's cost per hit.
  - C: target_loop's work() (entry `endbr64`, moved onto an emulated `push`) with `uscope count`
    and `uscope latency` (entry + the kernel's uretprobe).
And `uscope stat` (entry probes on runtime.newproc1, goexit0, gcMarkTermination and the
stop/start of the world): gostack's wall time with and without it, per goroutine created.
Medians of --runs rounds. Needs root and the test build (build/tests/fixtures).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as shared  # noqa: E402  (write_marked_block)

ROOT = Path(__file__).resolve().parent.parent
N_SMALL, N_BIG = 1000, 60000


def wall(cmd: list[str]) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr}")
    return time.perf_counter() - t


def per_call(uscope: str, target: str, func: str, mode: str | None) -> float:
    def cmd(n: int) -> list[str]:
        if mode is None:
            return [target, str(n)]
        return [uscope, mode, "-c", f"{target} {n}", f"{target}:{func}"]
    return (wall(cmd(N_BIG)) - wall(cmd(N_SMALL))) / (N_BIG - N_SMALL) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args()
    uscope = str(ROOT / "build/uscope")
    fx = ROOT / "build/tests/fixtures"
    targets = {"Go main.work": (str(fx / "go/gowork"), "main.work"),
               "C work()": (str(fx / "native/target_loop"), "work")}
    rows = []
    for name, (target, func) in targets.items():
        samples: dict[str, list[float]] = {"none": [], "count": [], "latency": []}
        for _ in range(a.runs):
            base = per_call(uscope, target, func, None)
            samples["none"].append(base)
            for mode in ("count", "latency"):
                samples[mode].append(per_call(uscope, target, func, mode) - base)
        med = {k: statistics.median(v) for k, v in samples.items()}
        rows.append((name, med["count"], med["latency"], med["latency"] - med["count"]))
    lines = ["| function | `count` (entry) µs/call | `latency` µs/call | return probe µs/hit |",
             "|---|---:|---:|---:|"]
    for name, c, l, r in rows:
        kind = "RET uprobe" if name.startswith("Go") else "uretprobe"
        lines.append(f"| {name} | {c:.2f} | {l:.2f} | {r:.2f} ({kind}) |")
    # uscope stat: gostack runs rounds of goroutines (each round ends in a GC); the difference of
    # two sizes removes start-up and exit, as per_call does.
    stack = str(fx / "go/gostack")
    workers, small, big = 64, 100, 1500

    def stack_wall(rounds: int, traced: bool) -> float:
        cmd = [stack, str(rounds), str(workers), "10"]
        return wall([uscope, "stat", "-c", " ".join(cmd)] if traced else cmd)
    plains = [stack_wall(big, False) - stack_wall(small, False) for _ in range(a.runs)]
    traceds = [stack_wall(big, True) - stack_wall(small, True) for _ in range(a.runs)]
    plain, traced = statistics.median(plains), statistics.median(traceds)
    goroutines = (big - small) * workers

    def spread(v: list[float]) -> str:
        return f"{min(v):.3f}–{max(v):.3f}"
    lines += ["", "| `uscope stat` on gostack | untraced s (spread) | under `stat` s (spread) | "
              "added µs per goroutine |", "|---|---:|---:|---:|",
              f"| {big - small} rounds x {workers} goroutines, a GC each | {plain:.3f} "
              f"({spread(plains)}) | {traced:.3f} ({spread(traceds)}) | "
              f"{(traced - plain) / goroutines * 1e6:.2f} |",
              "", "A goroutine costs `stat` two entry hits (newproc1, goexit0), both on emulated "
              "jcc sites; where the added time is smaller than the spread it is noise."]
    table = "\n".join(lines)
    print(table)
    if a.markdown:
        body = (f"## I. Go return probes (RET uprobes against a C uretprobe) and uscope stat\n\nCommand: `python3 bench/go_returns.py --markdown docs/BENCHMARKS.md` "
                f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, medians of {a.runs} "
                f"rounds, {N_BIG - N_SMALL} calls per difference).\n\n{table}\n")
        shared.write_marked_block(a.markdown, body, "<!-- bench/go_returns.py: begin generated -->",
                                  "<!-- bench/go_returns.py: end generated -->")


if __name__ == "__main__":
    main()
