#!/usr/bin/python3
"""What `uscope profile` shows of a JVM started with no flag, and what reading its Java frames
costs (issue 22, "Speed"), in one run. Needs root, build/uscope and the test build's Java fixtures
(scripts/build.sh), Debian's openjdk-17 (java, jcmd), linux-perf, bpftrace and bpftool
(scripts/install-deps.sh). Standard library only; reuses run.py's process handling, profile.py's
gated runs and complete_stacks.py's stack readers and BPF run-time reading.

    python3 bench/jvm_profile.py                                # the tables on stdout
    python3 bench/jvm_profile.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

Five measurements:

  1. Complete stacks and named Java frames of an untouched JVM: tests/fixtures/java JavaPaths
     (main -> run -> compiledOuter (C2) -> inlinedStep (inlined) and nativeSpin (JNI) ->
     HugeMethod.interpreted (interpreted)), started with no flag, profiled in turn by
     `uscope profile -p PID -F HZ -d S --format folded`, `perf record -g` + `perf script` and
     bpftrace `ustack(perf, 127)`; then the same fixture started with -XX:+PreserveFramePointer
     and a perf map (`jcmd PID Compiler.perfmap`) under perf -g: what the flags buy the peers.
     A stack is complete when its outermost frame is an entry function (complete_stacks.py's
     rule; uscope's own summary for uscope). For uscope, a sample "in Java" is one whose stack
     holds a Java frame, named when none of them is unnamed ("[unknown"); the peers cannot tell
     a JIT frame from another unnamed one, so for them every sample counts (the fixture runs
     under Java code throughout) and it is named when no frame of its stack is "[unknown]".
  2. BPF time per sample with a stack of --depth (30) Java frames (JavaBench deep: recursion,
     then a C2-compiled spin in the innermost), uscope with its HotSpot walk and with
     USCOPE_NO_JAVA=1 (native only: JIT code walked by frame pointer), interleaved over --runs
     rounds after one discarded; run_time_ns / run_cnt of uscope's profile_sample program (per
     run) with kernel.bpf_stats_enabled=1.
  3. The JVM's slowdown at 99 Hz: JavaBench work ROUNDS --gated (profile.py's protocol; the JVM
     times its own loop with its thread's CPU clock) with no profiler and under
     `uscope profile -F 99`, medians of --slowdown-runs rounds after one discarded.
  4. From attach to the first named Java frame: the wall time of
     `uscope profile -p PID -d 0.5 --format folded` on a running JavaPaths, less the 0.5 s it
     samples, with its output checked to name compiledOuter.
  5. Memory for a JVM with 20,000 compiled methods: JavaBench many, once `jcmd PID
     Compiler.codelist` lists 20,000 of its methods, profiled by uscope for --seconds: uscope's
     peak RSS and CPU time, and the Java frames it named.

Every exit status is checked; any surprise aborts the run with the command and its output. The
machine is shared: the load average at the start and the end is printed with the tables.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)
import profile as P  # noqa: E402  (bench/profile.py, which shadows the standard library's profile)
import complete_stacks as C  # noqa: E402  (bench/complete_stacks.py)

BEGIN_MARK = "<!-- bench/jvm_profile.py: begin generated -->"
END_MARK = "<!-- bench/jvm_profile.py: end generated -->"

FLAGS = ["-XX:+PreserveFramePointer"]  # the peers' way out, with a perf map written by jcmd

# A frame label of uscope's that is Java code: C2 (_[j]), C1 (_[1]), inlined (_[i]), a JVM stub,
# or an interpreted method "Class.method (File.java:12)".
JAVA_LABEL = re.compile(r"(_\[[j1i]\]$|^\[jvm stub: |\(\S+\.java:\d+\)$)")


def java_args(a, extra: list[str], *rest: str) -> list[str]:
    return [a.java, *extra, "-cp", str(a.java_dir), f"-Djava.library.path={a.java_dir}", *rest]


@contextlib.contextmanager
def java_target(a, extra: list[str], *rest: str):
    with C.started(java_args(a, extra, *rest), r"^ready \d+$", "java") as t:
        yield t


@contextlib.contextmanager
def no_java_walk(on: bool):
    """USCOPE_NO_JAVA=1 in the environment uscope inherits, for the block (when `on`)."""
    if not on:
        yield
        return
    os.environ["USCOPE_NO_JAVA"] = "1"
    try:
        yield
    finally:
        del os.environ["USCOPE_NO_JAVA"]


def codelist_count(a, pid: int, pattern: str, level: int | None = None) -> int:
    """Methods `jcmd PID Compiler.codelist` lists whose name matches `pattern` (at `level`)."""
    text = R.run([a.jcmd, str(pid), "Compiler.codelist"], timeout=120).text("out")
    names = set()
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 4 and re.search(pattern, f[3]) and (level is None or f[1] == str(level)):
            names.add(f[3])
    return len(names)


def wait_codelist(a, t: R.Proc, pattern: str, want: int, level: int | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while codelist_count(a, t.pid, pattern, level) < want:
        R.check(time.monotonic() < deadline, f"jcmd Compiler.codelist did not list {want} "
                f"methods like {pattern} within {timeout:g} s", t)
        time.sleep(0.5)  # polling the JVM's own list: a condition, checked again


# ---------------------------------------------------------------------------------------------
# 1. Complete stacks and named frames


def folded_java(folded: str) -> tuple[int, int]:
    """(samples whose stack holds Java frames, those whose Java frames are all named)."""
    inside = named = 0
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        java = [f for f in frames if JAVA_LABEL.search(f) or ("[unknown" in f and
                                                              ("java" in f or "JIT" in f))]
        if java:
            inside += int(n)
            named += int(n) if all("[unknown" not in f for f in java) else 0
    return inside, named


def peer_named(unnamed_per_sample: list[tuple[bool, int]]) -> tuple[int, int]:
    """(samples, those with no unnamed frame) for a peer: every sample of the fixture runs under
    Java code, and neither perf nor bpftrace tells a JIT frame from any other unnamed one."""
    return (sum(n for _, n in unnamed_per_sample),
            sum(n for unnamed, n in unnamed_per_sample if not unnamed))


def perf_stacks(a, pid: int) -> tuple[float, int, int, int]:
    data = a.workdir / "perf.data"
    R.run(C.perf_cmd(a, pid, ["-g"], data), timeout=a.seconds + 120)
    text = R.run([a.perf, "script", "-i", str(data)], timeout=600).text("out")
    data.unlink()
    stacks = C.perf_script_stacks(text)
    share, samples = C.stack_share(stacks)
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    inside, named = peer_named([("[unknown]" in b, 1) for b in blocks])
    return share, samples, inside, named


def complete_and_named(a) -> dict:
    res: dict[str, dict] = {}
    with java_target(a, [], "JavaPaths") as t:
        wait_codelist(a, t, r"^JavaPaths\.compiledOuter", 1, 4, 300)
        R.log("  uscope")
        r = C.run_uscope(a, t.pid, "paths")
        inside, named = folded_java(r.pop("folded"))
        res["uscope"] = {"share": r["share"], "samples": r["samples"], "in_java": inside,
                         "named": named, "summary": r["summary"]}
        R.log("  perf -g")
        s, n, i, nm = perf_stacks(a, t.pid)
        res["perf"] = {"share": s, "samples": n, "in_java": i, "named": nm}
        R.log("  bpftrace")
        text = R.run(C.bpftrace_cmd(a, t.pid), timeout=a.seconds + 120).text("out")
        stacks = C.bpftrace_stacks(text)
        s, n = C.stack_share(stacks)
        i, nm = peer_named([("[unknown]" in body, int(k)) for body, k in
                            re.findall(r"^@\[(.*?)\]: (\d+)$", text, re.M | re.S)])
        res["bpftrace"] = {"share": s, "samples": n, "in_java": i, "named": nm}
    R.log("  perf -g, the JVM started with -XX:+PreserveFramePointer and a perf map")
    with java_target(a, FLAGS, "JavaPaths") as t:
        wait_codelist(a, t, r"^JavaPaths\.compiledOuter", 1, 4, 300)
        perf_map = Path(f"/tmp/perf-{t.pid}.map")
        R.run([a.jcmd, str(t.pid), "Compiler.perfmap"], timeout=120)
        try:
            s, n, i, nm = perf_stacks(a, t.pid)
        finally:
            perf_map.unlink(missing_ok=True)
        res["perf_flags"] = {"share": s, "samples": n, "in_java": i, "named": nm}
    return res


# ---------------------------------------------------------------------------------------------
# 2. BPF time per sample


def java_frames(folded: str) -> int:
    """The most Java frames in one stack of a folded profile."""
    return max((sum(1 for f in line.rsplit(" ", 1)[0].split(";") if JAVA_LABEL.search(f))
                for line in folded.splitlines()), default=0)


def bpf_time(a) -> dict:
    res: dict[str, list[dict]] = {"java": [], "native": []}
    with java_target(a, [], "JavaBench", "deep", str(a.depth)) as t:
        wait_codelist(a, t, r"^JavaBench\.spin", 1, 4, 300)
        for rnd in range(a.runs + 1):
            R.log(f"  round {rnd}/{a.runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
            for cfg in res:
                with no_java_walk(cfg == "native"):
                    r = C.run_uscope(a, t.pid, f"deep-{cfg}")
                frames = java_frames(r.pop("folded"))
                # DEPTH frames: main and the down()s; spin is compiled on its own or inlined.
                if cfg == "java" and frames < a.depth:
                    raise R.BenchError(f"uscope showed at most {frames} Java frames in a stack, "
                                       f"not {a.depth}: {r['summary']}")
                if cfg == "native" and frames != 0:
                    raise R.BenchError(f"USCOPE_NO_JAVA=1 still showed {frames} Java frames")
                R.check("bpf_ns" in r, "no BPF run time read (bpftool)", t)
                if rnd > 0:
                    res[cfg].append(r)
    return res


# ---------------------------------------------------------------------------------------------
# 3. Slowdown, 4. attach to first named frame, 5. memory


def slowdown(a) -> dict:
    argv = java_args(a, [], "JavaBench", "work", str(a.rounds))
    res: dict[str, list[dict]] = {"none": [], "uscope": []}
    for rnd in range(a.slowdown_runs + 1):
        R.log(f"  round {rnd}/{a.slowdown_runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
        for cfg in res:
            r = P.one_run(a, cfg, 99, argv, names=("JavaBench.inner",) if cfg == "uscope" else ())
            if rnd > 0:
                res[cfg].append(r)
    return res


def first_named(a) -> list[float]:
    times = []
    with java_target(a, [], "JavaPaths") as t:
        wait_codelist(a, t, r"^JavaPaths\.compiledOuter", 1, 4, 300)
        for _ in range(a.runs):
            t0 = time.monotonic()
            p = R.run([str(a.uscope), "profile", "-p", str(t.pid), "-F", "99", "-d", "0.5",
                       "--format", "folded"], timeout=120)
            took = time.monotonic() - t0
            R.check("JavaPaths.compiledOuter" in p.text("out"),
                    "uscope's first profile does not name compiledOuter", p)
            times.append(took - 0.5)
    return times


def many_methods(a) -> dict:
    with java_target(a, [], "JavaBench", "many") as t:
        R.log("  waiting for 20,000 compiled methods (jcmd Compiler.codelist)")
        wait_codelist(a, t, r"^ManyMethods\d\.m\d+\(", 20000, None, 600)
        out = a.workdir / "many.folded"
        p = R.Proc([str(a.uscope), "profile", "-p", str(t.pid), "-F", "99", "-d",
                    f"{a.seconds:g}", "-o", str(out)], sample_hwm=True)
        R.check(p.wait(a.seconds + 300) and p.rc == 0, "uscope profile failed", p)
        folded = out.read_text(errors="replace")
        named = len({f for line in folded.splitlines() for f in line.rsplit(" ", 1)[0].split(";")
                     if f.startswith("ManyMethods")})
        return {"rss_mib": p.hwm_kib / 1024 if p.hwm_kib else 0.0,
                "cpu": p.cpu_s,
                "methods_named": named, "summary": P.summary_line(p.text("err"))}


def measure(a) -> dict:
    mach = R.machine(a)
    res = {"mach": mach}
    if "complete" not in a.skip:
        R.log("1. complete stacks and named frames (JavaPaths, no JVM flag)")
        res["complete"] = complete_and_named(a)
    if "bpf" not in a.skip:
        R.log(f"2. BPF time per sample, {a.depth} Java frames")
        with C.bpf_stats_enabled():
            res["bpf"] = bpf_time(a)
    if "slowdown" not in a.skip:
        R.log("3. the JVM's slowdown at 99 Hz")
        res["slowdown"] = slowdown(a)
    if "attach" not in a.skip:
        R.log("4. from attach to the first named frame")
        res["attach"] = first_named(a)
    if "memory" not in a.skip:
        R.log("5. memory with 20,000 compiled methods")
        res["memory"] = many_methods(a)
    return res


# ---------------------------------------------------------------------------------------------
# Report


def pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.1f}%" if d else "n/a"


def report(a, res: dict, elapsed: float) -> str:
    mach = res["mach"]
    L = [f"Run {mach['date']} on Linux {mach['kernel']}, {mach['cpus']} CPUs ({mach['cpu']}); "
         f"{mach['uscope']} (git {mach['git']}), {mach['bpftrace']}, {a.java_version}. "
         f"Load average {mach['load']} at the start, {R.loadavg()} at the end (a machine shared with "
         f"other sessions' builds and benchmarks); {elapsed:.0f} s.", "",
         f"Command: `BUILD_TARGETS='uscope fixtures' scripts/build.sh && "
         f"{shlex.join(['python3', 'bench/jvm_profile.py', *sys.argv[1:]])}`", ""]
    goals = []
    if "complete" in res:
        c = res["complete"]
        L += [f"### 1. An untouched JVM (JavaPaths, no flag), {a.seconds:g} s at {a.hz} Hz", "",
              "| tool | samples | complete stacks | samples in Java code | … with every Java frame named |",
              "|---|---:|---:|---:|---:|"]
        rows = [("uscope", "`uscope profile` (no JVM flag)"), ("perf", "perf -g (no JVM flag)"),
                ("bpftrace", "bpftrace ustack (no JVM flag)"),
                ("perf_flags", "perf -g, JVM with -XX:+PreserveFramePointer + perf map")]
        for k, label in rows:
            r = c[k]
            L.append(f"| {label} | {r['samples']} | {r['share']:.1f}% | {r['in_java']} | "
                     f"{pct(r['named'], r['in_java'])} |")
        L += ["", f"uscope's summary: `{c['uscope']['summary']}`", ""]
        u = c["uscope"]
        goals.append(f"- complete stacks of an untouched JVM ≥ 95%: {u['share']:.1f}%: "
                     f"{R.verdict(u['share'] >= 95)}")
        named = 100.0 * u["named"] / u["in_java"] if u["in_java"] else 0
        goals.append(f"- named Java frames ≥ 99% of samples in Java code: {named:.1f}%: "
                     f"{R.verdict(named >= 99)}")
    if "bpf" in res:
        b = res["bpf"]
        jv = [r["bpf_ns"] for r in b["java"]]
        nt = [r["bpf_ns"] for r in b["native"]]
        L += [f"### 2. BPF time per sample, a stack of {a.depth} Java frames (JavaBench deep), "
              f"{a.seconds:g} s at {a.hz} Hz, medians of {a.runs} rounds [min–max]", "",
              "| walk | BPF ns per run |", "|---|---:|",
              f"| HotSpot walk | {R.med(jv):.0f} [{R.spread(jv, '.0f')}] |",
              f"| native only (USCOPE_NO_JAVA=1: JIT code by frame pointer) | {R.med(nt):.0f} "
              f"[{R.spread(nt, '.0f')}] |", "",
              f"The Java walk adds {(R.med(jv) - R.med(nt)) / 1000:.2f} µs per sample.", ""]
    if "slowdown" in res:
        s = res["slowdown"]
        n = R.med([r["cpu"] for r in s["none"]])
        u = R.med([r["cpu"] for r in s["uscope"]])
        paired = R.med([r["cpu"] / z["cpu"] for r, z in zip(s["uscope"], s["none"])]) - 1
        L += [f"### 3. The JVM's slowdown at 99 Hz (JavaBench work {a.rounds}; its thread's CPU "
              f"time, medians of {a.slowdown_runs} rounds)", "",
              "| profiler | CPU time | vs none |", "|---|---:|---:|",
              f"| none | {n:.3f} s [{R.spread([r['cpu'] for r in s['none']], '.3f')}] | |",
              f"| `uscope profile -F 99` | {u:.3f} s [{R.spread([r['cpu'] for r in s['uscope']], '.3f')}]"
              f" | {100 * (u / n - 1):+.1f}% (paired {100 * paired:+.1f}%) |", ""]
        goals.append(f"- the JVM's slowdown at 99 Hz under 1%: {100 * (u / n - 1):+.1f}%: "
                     f"{R.verdict(u / n - 1 < 0.01)}")
    if "attach" in res:
        t = res["attach"]
        L += [f"### 4. From attach to the first named Java frame: {R.med(t):.2f} s "
              f"[{R.spread(t, '.2f')}] over {len(t)} runs (`uscope profile -p PID -d 0.5` wall "
              "time less its 0.5 s of sampling)", ""]
    if "memory" in res:
        m = res["memory"]
        L += ["### 5. A JVM with 20,000 compiled methods (JavaBench many), "
              f"`uscope profile -d {a.seconds:g}`", "",
              f"uscope's peak RSS {m['rss_mib']:.1f} MiB, CPU {m['cpu']:.2f} s; "
              f"{m['methods_named']} distinct ManyMethods methods named in its output.", "",
              f"uscope's summary: `{m['summary']}`", ""]
    if goals:
        L += ["Goals (issue 22):", "", *goals]
    return "\n".join(L)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=R.ROOT / "build" / "uscope")
    ap.add_argument("--java-dir", type=Path, default=R.ROOT / "build" / "tests" / "fixtures" / "java")
    ap.add_argument("--java", default="/usr/bin/java")
    ap.add_argument("--jcmd", default="/usr/bin/jcmd")
    ap.add_argument("--perf", default=shutil.which("perf") or "/usr/bin/perf")
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace") or "/usr/bin/bpftrace")
    ap.add_argument("--bpftool", default=shutil.which("bpftool") or "/usr/sbin/bpftool")
    ap.add_argument("--hz", type=int, default=99)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--depth", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=200_000)
    ap.add_argument("--slowdown-runs", type=int, default=5)
    ap.add_argument("--skip", action="append", default=[],
                    choices=["complete", "bpf", "slowdown", "attach", "memory"])
    ap.add_argument("--markdown", type=Path)
    a = ap.parse_args()
    for tool in ("java", "jcmd", "perf", "bpftrace", "bpftool"):
        if not Path(getattr(a, tool)).exists():
            print(f"jvm_profile.py: {getattr(a, tool)} not found (scripts/install-deps.sh)", file=sys.stderr)
            return 1
    a.java_version = R.run([a.java, "-version"], timeout=60).text("err").splitlines()[0]
    return R.run_marked_bench("jvm_profile", a, measure, report, BEGIN_MARK, END_MARK)


if __name__ == "__main__":
    sys.exit(main())
