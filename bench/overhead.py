#!/usr/bin/python3
"""Is uscope's overhead estimate right? The target's measured slowdown against what uscope reports.
Needs root, build/uscope and build/bench/bench_target. Standard library only; reuses run.py's
process handling.

    python3 bench/overhead.py                                # the table on stdout
    python3 bench/overhead.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)
    python3 bench/overhead.py --calibrate                    # the HitCosts table for site_cost.cc

`bench_target SITE N` calls one assembly function N times and prints its own CPU time over the
loop (CLOCK_PROCESS_CPUTIME_ID: the uprobe traps and BPF programs run on the target's thread and
are charged to it). Each configuration runs --runs rounds (plus one discarded warm-up round),
interleaved, so drift of a shared VM spreads over all of them:

  none      the target alone
  count     uscope count --json -c CMD FUNC
  trace     uscope trace --json -c CMD 'p::FUNC "%d", arg1'   (events to a file, not a terminal)
  latency   uscope latency --json -c CMD FUNC                  (entry and return on one site)

at three sites: `bench_emulated` (push %rbp first: an emulated trap), `bench_stepped` (sub $8,%rsp,
nothing cheaper to move to: single-stepped) and `bench_endbr` (endbr64; push %rbp: uscope moves the
probe to the emulated push; not used by --calibrate). measured = median CPU of the configuration minus the
median CPU of `none`; reported = the median of uscope's own total (its JSON "overhead" object);
ratio = reported / measured. Goal: every ratio within 0.8-1.2.

--calibrate derives the per-hit table uscope ships (plan/site_cost.cc, HitCosts) from `count` and
`latency` at the two sites: trap = CPU per call over `none` minus count's measured BPF run time per
run; return = latency's CPU per call over `none` minus the emulated trap minus two BPF runs. The
validation table is then a second, separate run (and trace's BPF path and every hit count are not
part of the calibration).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/overhead.py: begin generated -->"
END_MARK = "<!-- bench/overhead.py: end generated -->"

SITES = [  # (site argument, function, calls, class)
    ("emulated", "bench_emulated", 200_000, "emulated"),
    ("stepped", "bench_stepped", 20_000, "single-stepped"),
    # Not used by --calibrate: endbr64 at +0, the probe moved to the emulated push at +4.
    ("endbr", "bench_endbr", 200_000, "emulated, moved"),
]
# Compiler-made functions (tests/fixtures/matrix, `matrix N` calls each function N times), not used
# by --calibrate. The target does not time itself: its CPU time is wait4's for the run without
# probes, and the one uscope read (wait4 of its -c child: `target_cpu_ns`) under probes, both the
# whole process.
MATRIX = [  # (variant, function, calls, class)
    ("matrix-O0-fp-nocet-pie", "mx_args1", 200_000, "emulated"),
    ("matrix-O2-nofp-nocet-pie", "mx_args1", 20_000, "single-stepped"),
]
CONFIGS = ["none", "count", "trace", "latency"]


def sig2(v: float) -> str:
    """Two significant digits, no exponent: what uscope itself prints."""
    if v <= 0:
        return "0"
    digits = 1 - math.floor(math.log10(v))
    return f"{round(v, digits):,.{max(digits, 0)}f}"


def cpu_ns(p: R.Proc) -> float:
    m = re.search(r"^cpu_ns=([0-9.]+)$", p.text("out") if p.text("out") else "", re.M)
    if not m:
        raise R.BenchError(f"the target printed no cpu_ns line\n{p.describe()}")
    return float(m.group(1))


def overhead_of(text: str, p: R.Proc) -> dict:
    for line in text.splitlines():
        if line.startswith("{") and '"overhead"' in line:
            j = json.loads(line)
            return j["overhead"] if j.get("kind") == "summary" else j
    raise R.BenchError(f"uscope printed no overhead JSON\n{p.describe()}")


def target_argv(a, site: str, n: int) -> list[str]:
    if site.startswith("matrix-"):
        return [str(a.fixtures / "matrix" / site), str(n)]
    return [str(a.target), site, str(n)]


def command(a, site: str, func: str, n: int, config: str, out: Path) -> tuple[list[str], Path | None]:
    target = shlex.join(target_argv(a, site, n))
    if config == "none":
        return target_argv(a, site, n), None
    # -v: the kernel's BPF stats measure the programs' run time (without it the report takes the
    # table's figure, which this script calibrates); -v's site lines go to stderr beside the JSON.
    if config == "count":
        return [str(a.uscope), "count", "-v", "--json", "-c", target, func], None
    if config == "trace":
        return [str(a.uscope), "trace", "-v", "--json", "-c", target, f'p::{func} "%d", arg1'], out
    if config == "latency":
        return [str(a.uscope), "latency", "-v", "--json", "-c", target, func], None
    raise AssertionError(config)


def one_run(a, site: str, func: str, n: int, config: str) -> dict:
    out_file = a.workdir / "trace.jsonl"
    cmd, to_file = command(a, site, func, n, config, out_file)
    if to_file is None:
        p = R.run(cmd, timeout=300)
        text_out = p.text("out")
    else:
        with open(to_file, "wb") as f:
            p = R.Proc(cmd, stdout=f.fileno())
            if not p.wait(300):
                p.kill()
                raise R.BenchError(f"timed out\n{p.describe()}")
        if p.rc != 0:
            raise R.BenchError(f"tool failed\n{p.describe()}")
        text_out = to_file.read_text()
        to_file.unlink()
    matrix = site.startswith("matrix-")
    if config == "none":
        return {"cpu": p.cpu_s * 1e9 if matrix else cpu_ns(p)}
    ov = overhead_of(text_out if config == "trace" else p.text("err"), p)
    if matrix:
        cpu = float(ov["target_cpu_ns"])
    else:
        # -c: the target's stdout is uscope's (trace: the file), so its cpu_ns line is in there.
        m = re.search(r"^cpu_ns=([0-9.]+)$", text_out, re.M)
        if not m:
            raise R.BenchError(f"the target printed no cpu_ns line\n{p.describe()}")
        cpu = float(m.group(1))
    want = n if config != "latency" else 2 * n
    if ov["hits"] != want:
        raise R.BenchError(f"uscope reported {ov['hits']} hits, not {want}\n{p.describe()}")
    if config == "trace":
        events = sum(1 for line in text_out.splitlines() if line.startswith('{"kind":"event"'))
        summary = json.loads([l for l in text_out.splitlines() if '"kind":"summary"' in l][-1])
        if events + summary.get("lost", 0) != n:
            raise R.BenchError(f"trace: {events} events + {summary.get('lost')} lost != {n}")
    return {"cpu": cpu, "ov": ov}


def measure(a) -> dict:
    res: dict = {}
    for rnd in range(a.runs + 1):
        R.log(f"  round {rnd}/{a.runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
        for site, func, n, _ in SITES + (MATRIX if not a.calibrate else []):
            for config in CONFIGS:
                r = one_run(a, site, func, n, config)
                if rnd > 0:
                    res.setdefault((site, config), []).append(r)
    return res


def table(a, res: dict, mach: str) -> str:
    L = [f"Run {mach}. Medians of {a.runs} rounds after one discarded warm-up round.", ""]
    L.append("| site | calls | uscope | target CPU, measured slowdown | uscope's reported overhead "
             "| reported / measured [each round] | BPF per run (measured) | target CPU share reported |")
    L.append("|---|---:|---|---:|---:|---:|---:|---:|")
    worst = 0.0
    for site, func, n, cls in SITES + MATRIX:
        base = R.med([r["cpu"] for r in res[(site, "none")]])
        for config in CONFIGS[1:]:
            rs = res[(site, config)]
            measured = R.med([r["cpu"] for r in rs]) - base
            reported = R.med([r["ov"]["total_ns"] for r in rs])
            ratio = reported / measured if measured > 0 else float("inf")
            worst = max(worst, abs(ratio - 1))
            # Each round's own ratio, against the median of the runs without probes.
            rounds = [r["ov"]["total_ns"] / (r["cpu"] - base) for r in rs]
            per_run = R.med([r["ov"]["bpf_ns_per_run"] for r in rs])
            share = R.med([r["ov"]["share"] or 0 for r in rs])
            where = f"`{site}`: `{func}`" if site.startswith("matrix-") else f"`{func}`"
            L.append(f"| {where} ({cls}) | {n:,} | {config} | {measured / 1e6:.1f} ms "
                     f"({measured / n:,.0f} ns/call) | ≈ {sig2(reported / 1e6)} ms | **{ratio:.2f}** "
                     f"[{min(rounds):.2f}–{max(rounds):.2f}] | {per_run:.0f} ns | "
                     f"≈ {sig2(share * 100)}% |")
    L.append("")
    L.append("uscope's numbers carry two significant digits (as it prints them), so a ratio moves by "
             "up to ±5% from rounding alone.")
    L.append("")
    L.append(f"Largest deviation of a median ratio from 1: {worst * 100:.0f}% "
             f"(goal ≤ 20%: {'**met**' if worst <= 0.2 else '**not met**'}).")
    L.append("")
    L.append("```")
    for site, func, n in [("emulated", "bench_emulated", 200_000), (*MATRIX[1][:3],)]:
        for config in CONFIGS:
            cmd, to_file = command(a, site, func, n, config, Path("FILE"))
            L.append(R.shown(a, cmd) + (" > FILE" if to_file else ""))
    L.append("```")
    return "\n".join(L)


def calibrate(res: dict, runs: int) -> str:
    def per_call(site, config):
        n = next(n for s, _, n, _ in SITES if s == site)
        base = R.med([r["cpu"] for r in res[(site, "none")]])
        return (R.med([r["cpu"] for r in res[(site, config)]]) - base) / n

    def bpf(site, config):
        return R.med([r["ov"]["bpf_ns_per_run"] for r in res[(site, config)]])

    # The endbr site is left out on purpose: it checks the table on a function it was not made on.
    emu = per_call("emulated", "count") - bpf("emulated", "count")
    step = per_call("stepped", "count") - bpf("stepped", "count")
    ret = per_call("emulated", "latency") - emu - 2 * bpf("emulated", "latency")
    counter = R.med([bpf("emulated", "count"), bpf("stepped", "count")])
    trace = R.med([bpf("emulated", "trace"), bpf("stepped", "trace")])
    return (f"// bench/overhead.py --calibrate ({runs} rounds)\n"
            f"      .emulated_trap_ns = {emu:.0f},\n"
            f"      .single_stepped_trap_ns = {step:.0f},\n"
            f"      .return_ns = {ret:.0f},\n"
            f"      .counter_program_ns = {counter:.0f},\n"
            f"      .trace_program_ns = {trace:.0f},")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=R.ROOT / "build" / "uscope")
    ap.add_argument("--target", type=Path, default=R.ROOT / "build" / "bench" / "bench_target")
    ap.add_argument("--fixtures", type=Path, default=R.ROOT / "build" / "tests" / "fixtures")
    ap.add_argument("--runs", type=int, default=5, help="measured rounds (default 5)")
    ap.add_argument("--calibrate", action="store_true", help="print the HitCosts table instead")
    ap.add_argument("--markdown", type=Path, help="write the table into this file (between markers)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("overhead.py: needs root (uprobes, BPF)", file=sys.stderr)
        return 1
    a.target = a.target.resolve()
    a.fixtures = a.fixtures.resolve()
    a.workdir = Path(tempfile.mkdtemp(prefix="uscope-overhead-"))
    a.uscope_shown = str(a.uscope.resolve())
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t0 = time.monotonic()
    try:
        a.uscope = R.snapshot_binary(a.uscope.resolve(), a.workdir)
        m = R.machine(argparse.Namespace(bpftrace="/bin/true", uscope=a.uscope))
        load0 = R.loadavg()
        res = measure(a)
    except R.BenchError as e:
        print(f"overhead.py: FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("overhead.py: interrupted", file=sys.stderr)
        return 130
    finally:
        R.cleanup()
        shutil.rmtree(a.workdir, ignore_errors=True)
    if a.calibrate:
        print(calibrate(res, a.runs))
        return 0
    mach = (f"{m['date']} on Linux {m['kernel']}, {m['cpus']} CPUs; {m['uscope']} (git {m['git']}); "
            f"load average {load0} at the start, {R.loadavg()} at the end; {time.monotonic() - t0:.0f} s")
    body = table(a, res, mach)
    print(body)
    if a.markdown:
        R.write_marked_block(a.markdown, body, BEGIN_MARK, END_MARK)
        R.log(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
