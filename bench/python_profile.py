#!/usr/bin/python3
"""What reading Python frames costs `uscope profile` (issue 21, "Speed"), in one run. Needs root,
build/uscope (scripts/build.sh), Debian's python3.11, bpftrace and bpftool (scripts/install-deps.sh).
Standard library only; reuses run.py's process handling, profile.py's gated runs and
complete_stacks.py's BPF run-time reading.

    python3 bench/python_profile.py                                # the tables on stdout
    python3 bench/python_profile.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

Three measurements:

  1. BPF time per sample with a Python stack of --depth (30) frames: python3.11 running a script
     that recurses to that depth and spins there (no further calls, so every sample holds the same
     30 Python frames over one _PyEval_EvalFrameDefault), profiled by
     `uscope profile -p PID -F HZ -d S --format folded -v` with the Python walk and with
     USCOPE_NO_PYTHON=1 in uscope's environment (native frames only, the walk of section G), the
     two interleaved over --runs rounds after one discarded round. Meanwhile
     kernel.bpf_stats_enabled=1 (restored after), and run_time_ns / run_cnt of uscope's
     profile_sample program read with bpftool (complete_stacks.py's reading): per run, and
     run_time_ns over the samples uscope's summary counts (per sample kept). The runs count every
     CPU's samples of every process (the program drops the other processes' first thing): per
     sample kept carries those drops, the same in both configurations, so the difference of the
     two is what the Python walk adds. Each Python profile must hold the DEPTH frames, checked in
     its folded output.
  2. The profiled script's slowdown at 99 Hz: python3.11 running a fixed number of rounds of
     outer -> middle -> inner (pure Python; it times its own loop with perf_counter_ns and
     process_time_ns and counts its calls), gated as profile.py's targets are (started, the tool
     attached, then "go"), with no profiler, under `uscope profile -F 99 -p PID -o FILE.svg` (with
     the Python walk, and native only), and under the seed's USDT shadow stack: bpftrace keeping a
     per-thread stack from usdt python:function__entry / function__return and sampling its top at
     99 Hz. Its probes' hits are counted and shown beside the calls the script made. Medians of
     --slowdown-runs rounds after one discarded round, the configurations interleaved in each
     round; the target's CPU time (robust to the load of a shared machine) and wall time.
  3. `uscope dump -p PID` of python3.11 running --threads (50) threads (the main thread and 49
     started by threading), each idle in Event.wait under --thread-depth (20) Python frames:
     wall time (launch to exit, measured here), CPU time (wait4 of /usr/bin/time, which counts
     the uscope it waited for) and peak RSS (/usr/bin/time's %M: uscope's own, not run.py's as
     a direct child's ru_maxrss would be). Beside it, in the same rounds: `dump --no-native`
     (Python frames only), and what listing the threads alone costs without a debugger (py-spy
     is not in Debian 12): `ps -L -o tid,stat,comm -p PID`, and `cat /proc/PID/task/*/stat`.
     Medians of --dump-runs rounds after one discarded (uscope's first dump builds or loads its
     unwind tables' cache). Every dump must show every thread, each worker with its DEPTH frames
     of `down` (checked in its output).

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
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)
import profile as P  # noqa: E402  (bench/profile.py, which shadows the standard library's profile)
import complete_stacks as C  # noqa: E402  (bench/complete_stacks.py)

BEGIN_MARK = "<!-- bench/python_profile.py: begin generated -->"
END_MARK = "<!-- bench/python_profile.py: end generated -->"

# `spin DEPTH`: DEPTH Python frames (<module> and DEPTH-1 down()), spinning in the innermost.
# `work ROUNDS --gated`: profile.py's protocol ("ready PID", wait for a line, the loop, its times),
# then wait for stdin's end so a profiler can still name its frames.
PY_TARGET = """\
import os, sys, time

def down(n):
    if n > 1:
        return down(n - 1)
    print("ready", flush=True)
    x = 0
    while True:
        x += 1

def inner(k):
    s = 0
    for i in range(k):
        s += i * i
    return s

def middle(k):
    return inner(k) + inner(k + 1)

def outer(k):
    return middle(k) + middle(k + 2)

def wait_down(n, event):
    if n > 1:
        return wait_down(n - 1, event)
    event.wait()

if sys.argv[1] == "spin":
    down(int(sys.argv[2]) - 1)
if sys.argv[1] == "threads":  # threads N DEPTH: N - 1 threads idle under DEPTH frames each
    import threading
    event, n = threading.Event(), int(sys.argv[2]) - 1
    started = threading.Barrier(n + 1)
    def worker(depth):
        started.wait()
        wait_down(depth, event)
    for i in range(n):
        threading.Thread(target=worker, args=(int(sys.argv[3]),), name=f"worker-{i}").start()
    started.wait()
    print("ready", flush=True)
    event.wait()
rounds = int(sys.argv[2])
print(f"ready {os.getpid()}", flush=True)
sys.stdin.read(1)
w0, c0 = time.perf_counter_ns(), time.process_time_ns()
for r in range(rounds):
    outer(20)
w1, c1 = time.perf_counter_ns(), time.process_time_ns()
print(f"calls={rounds * 7}", flush=True)
print(f"wall_ns={w1 - w0} cpu_ns={c1 - c0}", flush=True)
sys.stdin.read()
"""

# The seed's shadow stack: a per-thread depth and the function at each depth, from the USDT
# probes; a sample counts the function on top of its thread's stack and the depth. @depth starts
# at 0. bpftrace attaches to the binary, not with -p: bpftrace 0.17's -p cannot read these probes'
# arguments ("couldn't get argument 1", bpftrace issue #2504). So that the probes (and their
# semaphores) reach no other python3.11 on the machine, the slowdown runs a copy of the
# interpreter (its own inode, so its own uprobes), under every configuration alike.
USDT_SCRIPT = """\
BEGIN {{ printf("ready\\n"); }}
usdt:{python}:python:function__entry /pid == {pid}/ {{ @entries = count(); @depth[tid] = @depth[tid] + 1; @stack[tid, @depth[tid]] = str(arg1); }}
usdt:{python}:python:function__return /pid == {pid}/ {{ @returns = count(); @depth[tid] = @depth[tid] - 1; }}
profile:hz:{hz} /pid == {pid}/ {{ @samples[@stack[tid, @depth[tid]], @depth[tid]] = count(); }}
"""

CONFIGS = {  # slowdown configuration: as shown in the table
    "none": "no profiler",
    "uscope": "`uscope profile -F 99` (Python walk)",
    "uscope_native": "`uscope profile -F 99`, USCOPE_NO_PYTHON=1 (native only)",
    "usdt": "bpftrace USDT shadow stack (function__entry/return) + profile:hz:99",
}


@contextlib.contextmanager
def native_only(on: bool):
    """USCOPE_NO_PYTHON=1 in the environment uscope inherits, for the block (when `on`)."""
    if not on:
        yield
        return
    os.environ["USCOPE_NO_PYTHON"] = "1"
    try:
        yield
    finally:
        del os.environ["USCOPE_NO_PYTHON"]


# ---------------------------------------------------------------------------------------------
# 1. BPF time per sample


def python_frames(folded: str) -> int:
    """The most Python frames ("function (file.py:line)") in one stack of a folded profile."""
    py = re.compile(r" \(.*\.py:\d+\)$")
    return max((sum(1 for f in line.rsplit(" ", 1)[0].split(";") if py.search(f))
                for line in folded.splitlines()), default=0)


IDLE = "import time; print('ready', flush=True); time.sleep(3600)"


def bpf_time(a) -> dict:
    """Per round: the spinning target with and without the Python walk, and an idle python3.11
    (every run drops a sample of another process: the cost of a drop)."""
    script = a.workdir / "depth.py"
    res: dict[str, list[dict]] = {"python": [], "native": [], "idle": []}
    with C.started([a.python, str(script), "spin", str(a.depth)], r"^ready$", "python3.11") as t, \
            C.started([a.python, "-c", IDLE], r"^ready$", "python3.11 (idle)") as idle:
        for rnd in range(a.runs + 1):
            R.log(f"  round {rnd}/{a.runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
            for cfg in res:
                with native_only(cfg == "native"):
                    r = C.run_uscope(a, idle.pid if cfg == "idle" else t.pid, f"depth-{cfg}")
                frames = python_frames(r.pop("folded"))
                want = a.depth if cfg == "python" else 0
                if frames != want:
                    raise R.BenchError(f"uscope ({cfg}) showed at most {frames} Python frames in a "
                                       f"stack, not {want}: {r['summary']}")
                R.check("bpf_ns" in r, "no BPF run time read (bpftool)", t)
                if cfg == "idle" and r["samples"] != 0:
                    raise R.BenchError(f"the idle python3.11 was sampled: {r['summary']}")
                if rnd > 0:
                    res[cfg].append(r)
    return res


# ---------------------------------------------------------------------------------------------
# 2. The script's slowdown


def usdt_cmd(a, pid) -> list[str]:
    return [a.bpftrace, "-e", USDT_SCRIPT.format(python=a.python_copy, hz=99, pid=pid)]


def usdt_run(a, argv: list[str]) -> dict:
    """One gated run under the USDT shadow stack: the target's times and calls, the probes' hits."""
    target = R.Proc([*argv, "--gated"], stdin_pipe=True)
    got = target.wait_line("out", r"^ready (\d+)$", 30)
    R.check(got is not None, "python3.11 did not start", target)
    pid = int(got[1].group(1))
    out = a.workdir / "usdt.txt"
    f = open(out, "wb")
    p = R.Proc(usdt_cmd(a, pid), stdout=f.fileno(), sample_hwm=True)
    P.wait_bpftrace_ready(p, out)
    P.wait_attached("bpftrace", p)
    target.send("g\n")
    got = target.wait_line("out", r"^wall_ns=(\d+) cpu_ns=(\d+)$", 1800)
    R.check(got is not None, "python3.11 printed no times", target)
    r = {"wall": int(got[1].group(1)) / 1e9, "cpu": int(got[1].group(2)) / 1e9}
    r.update(P.stop_tool(a, "bpftrace", p, f, out, a.workdir / "unused"))
    text = r.pop("text")
    hits = {k: int(n) for k, n in re.findall(r"^@(entries|returns): (\d+)$", text, re.M)}
    r["entries"], r["returns"] = hits.get("entries", 0), hits.get("returns", 0)
    r["samples"] = sum(int(n) for n in re.findall(r"^@samples\[.*\]: (\d+)$", text, re.M))
    r["calls"] = calls_made(target)
    out.unlink()
    target.p.stdin.close()
    R.check(target.wait(30) and target.rc == 0, "python3.11 failed", target)
    R.check(r["returns"] >= r["calls"], f"function__return fired {r['returns']} times for "
            f"{r['calls']} calls", p)
    return r


def calls_made(target: R.Proc) -> int:
    m = re.search(r"^calls=(\d+)$", target.text("out"), re.M)
    R.check(m is not None, "python3.11 printed no call count", target)
    return int(m.group(1))


def slowdown(a) -> dict:
    argv = [str(a.python_copy), str(a.workdir / "depth.py"), "work", str(a.rounds)]
    res: dict[str, list[dict]] = {k: [] for k in CONFIGS}
    for rnd in range(a.slowdown_runs + 1):
        R.log(f"  round {rnd}/{a.slowdown_runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
        for cfg in CONFIGS:
            if cfg == "usdt":
                r = usdt_run(a, argv)
            else:
                tool = "none" if cfg == "none" else "uscope"
                # uscope's flame graph must name the script's functions (the native-only one
                # names the interpreter's).
                names = ("inner", "middle") if cfg == "uscope" else ("_PyEval_EvalFrameDefault",)
                with native_only(cfg == "uscope_native"):
                    r = P.one_run(a, tool, 99, argv, names=names if tool != "none" else ())
            if rnd > 0:
                res[cfg].append(r)
    return res


# ---------------------------------------------------------------------------------------------
# 3. dump of a process with many threads

TIME_FORMAT = "uscope-bench-time %e %U %S %M"  # /usr/bin/time -f: wall, user, system, peak KiB

DUMP_CONFIGS = {  # name: (label, argv for a PID)
    "dump": ("`uscope dump -p PID`", lambda a, pid: [a.uscope, "dump", "-p", str(pid)]),
    "no_native": ("`uscope dump -p PID --no-native` (Python frames only)",
                  lambda a, pid: [a.uscope, "dump", "-p", str(pid), "--no-native"]),
    "ps": ("`ps -L -o tid,stat,comm -p PID` (the threads and their states only)",
           lambda a, pid: ["ps", "-L", "-o", "tid,stat,comm", "-p", str(pid)]),
    "stat": ("`sh -c 'cat /proc/PID/task/*/stat'` (the same, read raw)",
             lambda a, pid: ["sh", "-c", f"cat /proc/{pid}/task/*/stat"]),
}


def timed(argv: list[str]) -> dict:
    """One run under /usr/bin/time: wall (measured here), CPU (wait4's, which counts the command
    /usr/bin/time waited for), peak RSS (time's %M) and the output."""
    p = R.Proc(["/usr/bin/time", "-f", TIME_FORMAT, *[str(x) for x in argv]])
    R.check(p.wait(120), "no exit within 120 s", p)
    R.check(p.rc == 0, "failed", p)
    m = re.search(r"^uscope-bench-time \S+ \S+ \S+ (\d+)$", p.text("err"), re.M)
    R.check(m is not None, "/usr/bin/time printed no times", p)
    return {"wall": p.end, "cpu": p.cpu_s, "rss_mib": int(m.group(1)) / 1024, "out": p.text("out")}


def check_dump(a, out: str, pid: int, native: bool) -> None:
    """Every thread shown, each worker with its frames of wait_down (and, with native frames,
    start_thread below them)."""
    sections = out.split("\nThread ")[1:]
    if len(sections) != a.threads:
        raise R.BenchError(f"uscope dump showed {len(sections)} threads, not {a.threads}:\n{out}")
    workers = [s for s in sections if '"worker-' in s.split("\n", 1)[0]]
    if len(workers) != a.threads - 1:
        raise R.BenchError(f"uscope dump named {len(workers)} threads worker-N, not "
                           f"{a.threads - 1}:\n{out}")
    for w in workers:
        if w.count("wait_down (") != a.thread_depth or (native and "start_thread" not in w):
            raise R.BenchError(f"a worker's stack is not {a.thread_depth} frames of wait_down"
                               f"{' over start_thread' if native else ''}:\n{w}")


def dump_time(a) -> dict:
    res: dict[str, list[dict]] = {k: [] for k in DUMP_CONFIGS}
    argv = [a.python, str(a.workdir / "depth.py"), "threads", str(a.threads), str(a.thread_depth)]
    with C.started(argv, r"^ready$", "python3.11 (threads)") as t:
        tids = len(os.listdir(f"/proc/{t.pid}/task"))
        R.check(tids == a.threads, f"the target has {tids} threads, not {a.threads}", t)
        for rnd in range(a.dump_runs + 1):
            R.log(f"  round {rnd}/{a.dump_runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
            for cfg, (_, cmd) in DUMP_CONFIGS.items():
                r = timed(cmd(a, t.pid))
                if cfg in ("dump", "no_native"):
                    check_dump(a, r["out"], t.pid, cfg == "dump")
                r.pop("out")
                if rnd > 0:
                    res[cfg].append(r)
    return res


# ---------------------------------------------------------------------------------------------
# Report


def paired(sl: dict, cfg: str) -> float:
    """The median over the rounds of cfg's CPU time over the no-profiler run of the same round, - 1."""
    return R.med([r["cpu"] / n["cpu"] for r, n in zip(sl[cfg], sl["none"])]) - 1


def us(xs: list[float]) -> str:
    return f"{R.med(xs) / 1000:.2f} µs [{R.spread([x / 1000 for x in xs], '.2f')}]"


def report(a, mach: dict, bt: dict | None, sl: dict | None, dt: dict | None,
           elapsed: float) -> str:
    L = [f"Run {mach['date']} on Linux {mach['kernel']}, {mach['cpus']} CPUs ({mach['cpu']}); "
         f"{mach['uscope']} (git {mach['git']}), {mach['bpftrace']}, {a.python_version}. "
         f"Load average {mach['load']} at the start, {R.loadavg()} at the end (a machine shared with "
         f"other sessions' builds and benchmarks); {elapsed:.0f} s.", "",
         f"Command: `BUILD_TARGETS=uscope scripts/build.sh && "
         f"{shlex.join(['python3', 'bench/python_profile.py', *sys.argv[1:]])}`", ""]
    goals = []
    if bt:
        L.append(f"### 1. BPF time per sample, a Python stack of {a.depth} frames ({a.seconds:g} s at "
                 f"{a.hz} Hz per profile; medians of {a.runs} rounds after one discarded, [min–max])")
        L.append("")
        drop = R.med([r["bpf_ns"] for r in bt["idle"]])
        L.append("| uscope profile | samples kept | BPF runs | BPF time per run | per sample kept "
                 "| per sample kept, net of the drops |")
        L.append("|---|---:|---:|---:|---:|---:|")
        net = {}
        for cfg, label in (("native", "native only (USCOPE_NO_PYTHON=1)"),
                           ("python", f"with the Python walk ({a.depth} frames)")):
            rs = bt[cfg]
            kept = [r["bpf_ns"] * r["bpf_runs"] / max(r["samples"], 1) for r in rs]
            net[cfg] = [(r["bpf_ns"] * r["bpf_runs"] - (r["bpf_runs"] - r["samples"]) * drop)
                        / max(r["samples"], 1) for r in rs]
            L.append(f"| {label} | {R.med([r['samples'] for r in rs]):,.0f} | "
                     f"{R.med([r['bpf_runs'] for r in rs]):,.0f} | {us([r['bpf_ns'] for r in rs])} | "
                     f"{us(kept)} | {us(net[cfg])} |")
        L.append(f"| an idle python3.11 (every run a drop) | 0 | "
                 f"{R.med([r['bpf_runs'] for r in bt['idle']]):,.0f} | {us([r['bpf_ns'] for r in bt['idle']])} "
                 f"| — | — |")
        net_n, net_p = R.med(net["native"]), R.med(net["python"])
        pairs = [p - n for p, n in zip(net["python"], net["native"])]
        L.append("")
        L.append(f"The Python walk adds {(net_p - net_n) / 1000:+.2f} µs per sample kept, net of the "
                 f"drops (medians: {net_p / 1000:.2f} against {net_n / 1000:.2f} µs, ratio "
                 f"{net_p / net_n:.2f}; per round, the walk's rounds against the native rounds: "
                 f"{', '.join(f'{x / 1000:+.2f}' for x in pairs)} µs).")
        L.append("")
        L.append("The runs are every CPU's samples of every process; the program drops another "
                 "process's sample first thing. So that the share of drops (which the machine's load "
                 "moves from profile to profile) does not count as the walk's cost, each round also "
                 "profiles an idle python3.11 (every run a drop), and a sample kept is its profile's "
                 "run time less its drops at the idle profiles' median cost per run, over the "
                 "samples its summary counts.")
        L.append("")
        L.append(f"uscope's summaries (last round): with the walk `{bt['python'][-1]['summary']}`; "
                 f"native only `{bt['native'][-1]['summary']}`")
        L.append("")
        goals.append(f"- BPF time per sample with {a.depth} Python frames at most 1 µs above the native "
                     f"walk alone: {(net_p - net_n) / 1000:+.2f} µs: {R.verdict(net_p - net_n <= 1000)}")
    if sl:
        base = sl["none"]
        cpu0, wall0 = R.med([r["cpu"] for r in base]), R.med([r["wall"] for r in base])
        calls = sl["usdt"][0]["calls"]
        L.append(f"### 2. The profiled script's slowdown at 99 Hz (`python3.11 SCRIPT work {a.rounds}`: "
                 f"{calls:,} calls of outer -> middle -> inner; medians of {a.slowdown_runs} rounds "
                 f"after one discarded, [min–max])")
        L.append("")
        L.append("| profiler | samples | target CPU | slowdown (CPU) | slowdown (CPU), paired | target wall "
                 "| slowdown (wall) | probe hits |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---|")
        for cfg, label in CONFIGS.items():
            rs = sl[cfg]
            cpu, wall = R.med([r["cpu"] for r in rs]), R.med([r["wall"] for r in rs])
            samples = f"{R.med([r['samples'] for r in rs]):,.0f}" if cfg != "none" else "—"
            hits = (f"function__entry {R.med([r['entries'] for r in rs]):,.0f}, function__return "
                    f"{R.med([r['returns'] for r in rs]):,.0f} for {rs[0]['calls']:,} calls"
                    if cfg == "usdt" else "—")
            slow = f"{P.pct(cpu / cpu0 - 1)}" if cfg != "none" else "—"
            pair = f"{P.pct(paired(sl, cfg))}" if cfg != "none" else "—"
            slow_w = f"{P.pct(wall / wall0 - 1)}" if cfg != "none" else "—"
            L.append(f"| {label} | {samples} | {P.secs([r['cpu'] for r in rs])} | {slow} | {pair} | "
                     f"{P.secs([r['wall'] for r in rs])} | {slow_w} | {hits} |")
        L.append("")
        L.append("Paired: the median over the rounds of the configuration's CPU time over the run with no "
                 "profiler in the same round (the rounds interleave the configurations, so a slow "
                 "stretch of the shared machine weighs on both).")
        L.append("")
        s = R.med([r["cpu"] for r in sl["uscope"]]) / cpu0 - 1
        s_p = paired(sl, "uscope")
        s_w = R.med([r["wall"] for r in sl["uscope"]]) / wall0 - 1
        s_u = R.med([r["cpu"] for r in sl["usdt"]]) / cpu0 - 1
        cpus0 = [r["cpu"] for r in base]
        goals.append(f"- the script's slowdown under uscope (Python walk) at 99 Hz under 1%: {P.pct(s)} CPU "
                     f"time, {P.pct(s_p)} paired ({P.pct(s_w)} wall; the runs with no profiler spread over "
                     f"{(max(cpus0) - min(cpus0)) / cpu0 * 100:.1f}% of their median): "
                     f"{R.verdict(s < 0.01 and s_p < 0.01)}; the USDT shadow stack: {P.pct(s_u)}")
        L.append("```")
        L.append(R.shown(a, P.tool_cmd(a, "uscope", 99, "PID", Path("p.svg"))))
        L.append("USCOPE_NO_PYTHON=1 " + R.shown(a, P.tool_cmd(a, "uscope", 99, "PID", Path("p.svg"))))
        L.append(shlex.join(usdt_cmd(a, "PID")).replace(str(a.workdir), "COPY"))
        L.append(f"# PID: COPY/{Path(a.python).name} SCRIPT work {a.rounds}: COPY/ holds a copy of "
                 f"{a.python} (see USDT_SCRIPT), SCRIPT is bench/python_profile.py's PY_TARGET")
        L.append("```")
        L.append("")
    if dt:
        L.append(f"### 3. `uscope dump` of a process with {a.threads} threads (`python3.11 SCRIPT "
                 f"threads {a.threads} {a.thread_depth}`: {a.threads - 1} threads idle in Event.wait "
                 f"under {a.thread_depth} Python frames each, and the main thread; medians of "
                 f"{a.dump_runs} rounds after one discarded, [min–max])")
        L.append("")
        L.append("| command | wall | CPU | peak RSS |")
        L.append("|---|---:|---:|---:|")
        for cfg, (label, _) in DUMP_CONFIGS.items():
            rs = dt[cfg]
            ms = lambda k: f"{R.med([r[k] for r in rs]) * 1000:.1f} ms [{R.spread([r[k] * 1000 for r in rs], '.1f')}]"
            L.append(f"| {label} | {ms('wall')} | {ms('cpu')} | "
                     f"{R.med([r['rss_mib'] for r in rs]):.1f} MiB |")
        L.append("")
        L.append("Wall: from launch to exit as this script sees it (a command run by /usr/bin/time, "
                 "whose own start is in every row). CPU: user + system of the command and "
                 "/usr/bin/time, from wait4.")
        L.append("")
        wall = R.med([r["wall"] for r in dt["dump"]])
        goals.append(f"- `uscope dump` of {a.threads} threads within 50 ms: {wall * 1000:.1f} ms wall, "
                     f"{R.med([r['cpu'] for r in dt['dump']]) * 1000:.1f} ms CPU: "
                     f"{R.verdict(wall <= 0.050)}")
    if bt:
        L.append("```")
        L.append(R.shown(a, C.uscope_cmd(a, "PID", Path("TARGET.folded"))))
        L.append("USCOPE_NO_PYTHON=1 " + R.shown(a, C.uscope_cmd(a, "PID", Path("TARGET.folded"))))
        L.append(f"# PID: {a.python} SCRIPT spin {a.depth}; SCRIPT is bench/python_profile.py's PY_TARGET")
        L.append("```")
        L.append("")
    L.append("Goals:")
    L.append("")
    L.extend(goals)
    return "\n".join(L)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=R.ROOT / "build" / "uscope")
    ap.add_argument("--python", default="/usr/bin/python3.11")
    ap.add_argument("--bpftrace", default="/usr/bin/bpftrace")
    ap.add_argument("--bpftool", default=shutil.which("bpftool") or "/usr/sbin/bpftool")
    ap.add_argument("--depth", type=int, default=30, help="Python frames of the spinning stack (default 30)")
    ap.add_argument("--seconds", type=float, default=5.0, help="duration of each BPF-time profile (default 5)")
    ap.add_argument("--hz", type=int, default=99, help="sampling frequency of the BPF-time profiles (default 99)")
    ap.add_argument("--runs", type=int, default=5, help="measured rounds of the BPF time (default 5)")
    ap.add_argument("--rounds", type=int, default=1_000_000,
                    help="the script's rounds of outer() for the slowdown (default 1000000, ~3 s of CPU)")
    ap.add_argument("--slowdown-runs", type=int, default=5, help="measured slowdown rounds (default 5)")
    ap.add_argument("--threads", type=int, default=50, help="threads of the dumped process (default 50)")
    ap.add_argument("--thread-depth", type=int, default=20,
                    help="Python frames each of its threads waits under (default 20)")
    ap.add_argument("--dump-runs", type=int, default=5, help="measured dump rounds (default 5)")
    ap.add_argument("--skip", action="append", default=[], choices=["bpf-time", "slowdown", "dump"],
                    help="leave out a part (repeatable)")
    ap.add_argument("--markdown", type=Path, help="write the tables into this file (between markers)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("python_profile.py: needs root (perf events, BPF)", file=sys.stderr)
        return 1
    for exe in (a.uscope, Path(a.python), Path(a.bpftrace), Path(a.bpftool)):
        if not os.access(exe, os.X_OK):
            print(f"python_profile.py: {exe} missing (scripts/build.sh, scripts/install-deps.sh)",
                  file=sys.stderr)
            return 1
    a.workdir = Path(tempfile.mkdtemp(prefix="uscope-python-bench-"))
    a.uscope_shown = str(a.uscope.resolve())
    (a.workdir / "depth.py").write_text(PY_TARGET)
    a.python_copy = a.workdir / Path(a.python).name
    shutil.copy2(a.python, a.python_copy)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t0 = time.monotonic()
    bt = sl = dt = None
    try:
        a.uscope = R.snapshot_binary(a.uscope.resolve(), a.workdir)
        a.python_version = subprocess.run([a.python, "--version"], capture_output=True,
                                          text=True).stdout.strip()
        mach = R.machine(a)
        if "bpf-time" not in a.skip:
            R.log(f"1. BPF time per sample, {a.depth} Python frames")
            with C.bpf_stats_enabled():
                bt = bpf_time(a)
        if "slowdown" not in a.skip:
            R.log("2. the script's slowdown at 99 Hz")
            sl = slowdown(a)
        if "dump" not in a.skip:
            R.log(f"3. uscope dump of {a.threads} threads")
            dt = dump_time(a)
    except R.BenchError as e:
        print(f"python_profile.py: FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("python_profile.py: interrupted", file=sys.stderr)
        return 130
    finally:
        R.cleanup()
        shutil.rmtree(a.workdir, ignore_errors=True)
    body = report(a, mach, bt, sl, dt, time.monotonic() - t0)
    print(body)
    if a.markdown:
        R.write_marked_block(a.markdown, body, BEGIN_MARK, END_MARK)
        R.log(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
