#!/usr/bin/python3
"""`uscope profile` against bpftrace and perf, in one run. Needs root, build/uscope,
build/bench/profile_target and build/tests/fixtures/java/HotLoop.class (scripts/build.sh builds
them), bpftrace and perf (Debian's linux-perf), java and jcmd. Standard library only; reuses
run.py's process handling.

    python3 bench/profile.py                                # the tables on stdout
    python3 bench/profile.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

Three measurements:

  P. One process: `profile_target N --gated` (a fixed number of rounds of main -> outer -> middle
     -> inner, built with frame pointers; it times its own loop with CLOCK_MONOTONIC and
     CLOCK_PROCESS_CPUTIME_ID) with no profiler, and under each tool at 99 and 999 Hz, attached
     with -p before the loop starts:
       uscope    uscope profile -p PID -F HZ -o FILE.svg
       bpftrace  bpftrace -e 'profile:hz:HZ /pid == PID/ { @[ustack] = count(); }'
       perf      perf record -e cpu-clock -F HZ -g -p PID -o perf.data, then perf script
     Once the loop is done (the target stays alive, so every tool can name its frames) the tool
     gets SIGINT. Reported, medians of --runs rounds after one discarded warm-up round, the
     configurations interleaved in each round: the target's slowdown over no profiler (its CPU time,
     which counts the sampling interrupts and BPF programs that run on its thread and is robust to
     a loaded machine; and its wall time), the tool's own CPU time (wait4: user + system; perf:
     record + script), its peak RSS, the samples it got, and the time from SIGINT to its output
     written (uscope: the SVG flame graph complete; bpftrace: its map printed with symbolized
     stacks; perf: perf record's exit plus perf script's run; turning perf script's output into a
     flame graph needs FlameGraph's scripts, which Debian does not package, and is not counted).
  S. The whole machine: `uscope profile -a -F 49 -d 10 -o FILE.svg` (49 Hz is its default), the
     time from its "uscope: duration reached" line (the end of sampling) to its exit with the SVG
     written (--system-runs runs); perf and bpftrace at 49 Hz once each, SIGINT 10 s after they
     attached, the time from SIGINT to the output written.
  J. A JVM: tests/fixtures/java/HotLoop (hot in a JIT-compiled method) with a perf map written by
     `jcmd PID Compiler.perfmap`, profiled with `uscope profile -p PID -F 99 -o FILE.svg` for 5 s;
     the time from SIGINT to the SVG written (symbolizing openjdk's libjvm.so, ~57,000 symbols).

A tool is "attached" once it holds perf-event or BPF-link fds and their number has not changed for
0.2 s (bpftrace: also its BEGIN line; uscope: also its "Ctrl-C to stop" line). Every exit status is checked and every output must name the
target's hot path (inner, middle); any surprise aborts the run with the command and its output.
Peak RSS: wait4's ru_maxrss when it is above this script's own peak (Linux starts a child's
ru_maxrss from its parent's, so below that it is not the tool's own), otherwise the tool's VmHWM
sampled every 10 ms (marked *). build/uscope is copied once at the start and the copy is measured.
"""

from __future__ import annotations

import argparse
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

BEGIN_MARK = "<!-- bench/profile.py: begin generated -->"
END_MARK = "<!-- bench/profile.py: end generated -->"
TOOLS = ["uscope", "bpftrace", "perf"]
JVM_FLAGS = ["-XX:+PreserveFramePointer", "-XX:CompileCommand=quiet",
             "-XX:CompileCommand=dontinline,HotLoop::hotMethod"]


# ---------------------------------------------------------------------------------------------
# Tools


def tool_cmd(a, tool: str, hz: int, pid: int | None, out: Path, seconds: float = 0) -> list[str]:
    """The command that profiles `pid` (None: every process) at `hz` into `out` (uscope: the SVG;
    bpftrace: its stdout; perf: perf.data); uscope stops itself after `seconds` if given."""
    if tool == "uscope":
        return [str(a.uscope), "profile", *(["-p", str(pid)] if pid else ["-a"]), "-F", str(hz),
                *(["-d", f"{seconds:g}"] if seconds else []), "-o", str(out)]
    if tool == "bpftrace":
        pred = f" /pid == {pid}/" if pid else ""
        return [a.bpftrace, "-e",
                f'profile:hz:{hz}{pred} {{ @[ustack] = count(); }} BEGIN {{ printf("ready\\n"); }}']
    if tool == "perf":
        return [a.perf, "record", "-e", "cpu-clock", "-F", str(hz), "-g",
                *(["-p", str(pid)] if pid else ["-a"]), "-o", str(out)]
    raise AssertionError(tool)


def event_fds(pid: int) -> int:
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link in ("anon_inode:[perf_event]", "anon_inode:bpf_link"):
                n += 1
    except OSError:
        pass
    return n


def wait_attached(tool: str, p: R.Proc, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        R.check(p.end is None, f"{tool} exited before it attached", p)
        n = event_fds(p.pid)
        if n != last:
            last, since = n, time.monotonic()
        elif n > 0 and time.monotonic() - since >= 0.2:
            return
        time.sleep(0.02)
    raise R.BenchError(f"{tool} held no perf-event or BPF-link fd after {timeout} s\n{p.describe()}")


def start_tool(a, tool: str, hz: int, pid: int | None, out: Path, seconds: float) -> tuple[R.Proc, object]:
    cmd = tool_cmd(a, tool, hz, pid, out, seconds)
    if tool == "bpftrace":
        f = open(out, "wb")
        # bpftrace's "ready" goes to the file: read it from there.
        return R.Proc(cmd, stdout=f.fileno(), sample_hwm=True), f
    return R.Proc(cmd, sample_hwm=True), None


def wait_bpftrace_ready(p: R.Proc, out: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        R.check(p.end is None, "bpftrace exited before it attached", p)
        if re.search(r"^ready$", out.read_text(errors="replace"), re.M):
            return
        time.sleep(0.02)
    raise R.BenchError(f"bpftrace did not attach within {timeout} s\n{p.describe()}")


def attach(a, tool: str, hz: int, pid: int | None, out: Path, seconds: float = 0) -> tuple[R.Proc, object]:
    p, f = start_tool(a, tool, hz, pid, out, seconds)
    if tool == "bpftrace":
        wait_bpftrace_ready(p, out)
    if tool == "uscope":
        R.check(p.wait_line("err", r"Ctrl-C to stop$", 120) is not None, "uscope did not start sampling", p)
    wait_attached(tool, p)
    return p, f


def rss_mib(p: R.Proc, own_peak_kib: int) -> tuple[float, bool]:
    """The tool's peak RSS, and whether it is exact (ru_maxrss) or sampled (VmHWM)."""
    if p.maxrss_kib > own_peak_kib:
        return p.maxrss_kib / 1024, True
    return max(p.hwm_kib, 1) / 1024, False


def own_peak_kib() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def stop_tool(a, tool: str, p: R.Proc, f, out: Path, text_out: Path, timeout: float = 300,
              sigint: bool = True) -> dict:
    """SIGINT (or, for uscope with -d, its own stop), wait for the output; for perf, then perf
    script. Time from the end of sampling to the output written, CPU, RSS, samples."""
    peak = own_peak_kib()
    t_stop = time.monotonic()
    if sigint:
        os.kill(p.pid, signal.SIGINT)
    if not p.wait(timeout):
        p.kill()
        raise R.BenchError(f"{tool} did not exit {timeout} s after the end of sampling\n{p.describe()}")
    if not sigint:  # uscope says when it stopped sampling: "uscope: duration reached"
        got = p.wait_line("err", r"^uscope: duration reached$", 0)
        R.check(got is not None, "uscope did not say when it stopped sampling", p)
        t_stop = p.t0 + got[0]
    if f is not None:
        f.close()
    R.check(p.rc == 0 or (tool == "perf" and p.rc in (130, -2)), f"{tool} failed", p)
    r = {"stop_s": p.t0 + p.end - t_stop, "cpu_s": p.cpu_s}
    rss, exact = rss_mib(p, peak)
    r["rss"], r["rss_exact"] = rss, exact
    if tool == "uscope":
        svg = out.read_text(errors="replace") if out.exists() else ""
        R.check(svg.rstrip().endswith("</svg>"), f"uscope wrote no complete SVG to {out}", p)
        r["svg"] = svg
        r["summary"] = summary_line(p.text("err"))
        m = re.search(r"([\d,]+) samples", r["summary"])
        R.check(m is not None, "uscope printed no summary line with a sample count", p)
        r["samples"] = int(m.group(1).replace(",", ""))
        r["text"] = svg
    elif tool == "bpftrace":
        text = out.read_text(errors="replace")
        r["samples"] = sum(int(n) for n in re.findall(r"^\]: (\d+)$", text, re.M))
        r["text"] = text
    else:
        m = re.search(r"\((\d+) samples\)", p.text("err"))
        R.check(m is not None, "perf record reported no sample count", p)
        r["samples"] = int(m.group(1))
        with open(text_out, "wb") as tf:
            t0 = time.monotonic()
            s = R.Proc([a.perf, "script", "-i", str(out)], stdout=tf.fileno(), sample_hwm=True)
            if not s.wait(timeout):
                s.kill()
                raise R.BenchError(f"perf script did not finish within {timeout} s\n{s.describe()}")
            R.check(s.rc == 0, "perf script failed", s)
        r["script_s"] = s.t0 + s.end - t0
        r["stop_s"] += r["script_s"]
        r["cpu_s"] += s.cpu_s
        srss, sexact = rss_mib(s, peak)
        if srss > r["rss"]:
            r["rss"], r["rss_exact"] = srss, sexact
        r["text"] = text_out.read_text(errors="replace")
        text_out.unlink()
        out.unlink()
    return r


def summary_line(err: str) -> str:
    """uscope profile's last stderr line that counts samples (its one-line summary)."""
    lines = [line.strip() for line in err.splitlines() if re.search(r"\d samples", line)]
    return lines[-1] if lines else ""


# ---------------------------------------------------------------------------------------------
# P. One process


def one_run(a, tool: str, hz: int, argv: list[str] | None = None,
            names: tuple[str, ...] = ("inner", "middle")) -> dict:
    """One gated run of a target that speaks profile_target's protocol (`argv`, default
    `profile_target ROUNDS`; bench/complete_stacks.py runs nofp_spin), under `tool` (or "none"),
    whose output must name every function in `names`."""
    argv = argv or [str(a.target), str(a.rounds)]
    target = R.Proc([*argv, "--gated"], stdin_pipe=True)
    got = target.wait_line("out", r"^ready (\d+)$", 30)
    R.check(got is not None, f"{Path(argv[0]).name} did not start", target)
    pid = int(got[1].group(1))
    out = a.workdir / {"uscope": "p.svg", "bpftrace": "p.txt", "perf": "perf.data"}.get(tool, "x")
    p = f = None
    if tool != "none":
        p, f = attach(a, tool, hz, pid, out)
    target.send("g")
    got = target.wait_line("out", r"^wall_ns=(\d+) cpu_ns=(\d+)$", 1800)
    R.check(got is not None, f"{Path(argv[0]).name} printed no times", target)
    r = {"wall": int(got[1].group(1)) / 1e9, "cpu": int(got[1].group(2)) / 1e9}
    if p is not None:
        r.update(stop_tool(a, tool, p, f, out, a.workdir / "perf.txt"))
        for fn in names:
            R.check(fn in r["text"], f"{tool}'s output does not name {fn}()", p)
        r.pop("text")
        r.pop("svg", None)
        if out.exists():
            out.unlink()
    target.p.stdin.close()
    R.check(target.wait(30) and target.rc == 0, f"{Path(argv[0]).name} failed", target)
    return r


def bench_process(a) -> dict:
    configs = [("none", 0)] + [(t, hz) for hz in (99, 999) for t in TOOLS]
    res: dict = {}
    for rnd in range(a.runs + 1):
        R.log(f"  round {rnd}/{a.runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
        for tool, hz in configs:
            r = one_run(a, tool, hz)
            if rnd > 0:
                res.setdefault((tool, hz), []).append(r)
    return res


# ---------------------------------------------------------------------------------------------
# S. The whole machine, J. a JVM


def timed_profile(a, tool: str, hz: int, pid: int | None, seconds: float, out: Path,
                  own_duration: bool = False) -> dict:
    """A profile of `seconds`: SIGINT after that long, or uscope's own -d (`own_duration`)."""
    p, f = attach(a, tool, hz, pid, out, seconds if own_duration else 0)
    if not own_duration:
        time.sleep(seconds)  # the profile's duration, not a wait for a condition
    r = stop_tool(a, tool, p, f, out, a.workdir / "perf.txt", timeout=seconds + 300,
                  sigint=not own_duration)
    r.pop("text")
    return r


def bench_system(a) -> dict:
    res: dict = {}
    for tool in TOOLS:
        for i in range(a.system_runs if tool == "uscope" else 1):
            R.log(f"  {tool} -a, {a.system_seconds:g} s ({i + 1})")
            out = a.workdir / {"uscope": "sys.svg", "bpftrace": "sys.txt", "perf": "sys.data"}[tool]
            r = timed_profile(a, tool, 49, None, a.system_seconds, out, own_duration=tool == "uscope")
            r.pop("svg", None)
            if out.exists():
                out.unlink()
            res.setdefault(tool, []).append(r)
    return res


def bench_jvm(a) -> list[dict]:
    res = []
    for i in range(a.jvm_runs):
        R.log(f"  HotLoop ({i + 1})")
        java = R.Proc([a.java, *JVM_FLAGS, "-cp", str(a.java_dir), "HotLoop"])
        perf_map = Path(f"/tmp/perf-{java.pid}.map")  # the launcher runs the JVM in its own process
        try:
            got = java.wait_line("out", r"^ready (\d+)$", 120)
            R.check(got is not None and int(got[1].group(1)) == java.pid, "HotLoop did not start", java)
            pid = java.pid
            R.run([a.jcmd, str(pid), "Compiler.perfmap"], timeout=120)
            R.check("HotLoop.hotMethod" in perf_map.read_text(errors="replace"),
                    f"{perf_map} does not name HotLoop.hotMethod", java)
            out = a.workdir / "jvm.svg"
            r = timed_profile(a, "uscope", 99, pid, a.jvm_seconds, out)
            svg = r.pop("svg")
            r["jit_named"] = "HotLoop.hotMethod(long)_[j]" in svg
            # The Java main thread's stack runs through libjvm's call stub whatever else was sampled.
            r["libjvm_named"] = "JavaCalls::call_helper" in svg
            out.unlink()
            res.append(r)
        finally:
            java.kill()
            java.wait(30)
            perf_map.unlink(missing_ok=True)
    return res


# ---------------------------------------------------------------------------------------------
# Report


def pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def mib(rs: list[dict]) -> str:
    exact = all(r["rss_exact"] for r in rs)
    return f"{R.med([r['rss'] for r in rs]):.1f} MiB{'' if exact else '*'}"


def secs(xs: list[float]) -> str:
    return f"{R.med(xs):.2f} s [{R.spread(xs, '.2f')}]"


def report(a, mach: dict, pr: dict | None, sy: dict | None, jv: list[dict] | None,
           elapsed: float) -> str:
    L = [f"Run {mach['date']} on Linux {mach['kernel']}, {mach['cpus']} CPUs ({mach['cpu']}), Debian "
         f"{mach['debian']}; {mach['uscope']} (git {mach['git']}), {mach['bpftrace']}, {a.perf_version}. "
         f"Load average {mach['load']} at the start, {R.loadavg()} at the end; {elapsed:.0f} s. "
         f"This script's own peak RSS: {own_peak_kib() / 1024:.1f} MiB.", "",
         "Command: `scripts/build.sh && python3 bench/profile.py --markdown docs/BENCHMARKS.md`", ""]
    goals = []
    if pr:
        base = pr[("none", 0)]
        cpu0, wall0 = R.med([r["cpu"] for r in base]), R.med([r["wall"] for r in base])
        L.append(f"### P. One CPU-bound process (`profile_target {a.rounds}`), medians of {a.runs} rounds "
                 f"after one discarded round [min–max]")
        L.append("")
        L.append("| tool | Hz | samples | target CPU | slowdown (CPU) | target wall | slowdown (wall) "
                 "| tool CPU | tool peak RSS | SIGINT → output written |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        L.append(f"| no profiler | — | — | {secs([r['cpu'] for r in base])} | — | "
                 f"{secs([r['wall'] for r in base])} | — | — | — | — |")
        for hz in (99, 999):
            for tool in TOOLS:
                rs = pr[(tool, hz)]
                cpu, wall = R.med([r["cpu"] for r in rs]), R.med([r["wall"] for r in rs])
                stop = secs([r["stop_s"] for r in rs])
                if tool == "perf":
                    stop += f" (perf script {R.med([r['script_s'] for r in rs]):.2f} s)"
                L.append(f"| {tool} | {hz} | {R.med([r['samples'] for r in rs]):,.0f} | {cpu:.2f} s | "
                         f"{pct(cpu / cpu0 - 1)} | {wall:.2f} s | {pct(wall / wall0 - 1)} | "
                         f"{R.med([r['cpu_s'] for r in rs]):.3f} s | {mib(rs)} | {stop} |")
        L.append("")
        L.append("\\* VmHWM sampled every 10 ms: ru_maxrss was not above this script's own peak, so not the "
                 "tool's own. perf: record + script (CPU summed, RSS the larger).")
        L.append("")
        for hz in (99, 999):
            me = pr[("uscope", hz)]
            for what, key in (("CPU", "cpu_s"), ("peak RSS", "rss")):
                mine = R.med([r[key] for r in me])
                peers = {t: R.med([r[key] for r in pr[(t, hz)]]) for t in TOOLS[1:]}
                ok = all(mine < v for v in peers.values())
                goals.append(f"- {hz} Hz: uscope's own {what} below both peers': {mine:.3g} against "
                             + ", ".join(f"{t} {v:.3g}" for t, v in peers.items())
                             + f" ({'s' if key == 'cpu_s' else 'MiB'}): {R.verdict(ok)}")
        slow = R.med([r["cpu"] for r in pr[("uscope", 99)]]) / cpu0 - 1
        slow_w = R.med([r["wall"] for r in pr[("uscope", 99)]]) / wall0 - 1
        goals.append(f"- target slowdown under uscope at 99 Hz below 1%: {pct(slow)} CPU time "
                     f"({pct(slow_w)} wall): {R.verdict(slow < 0.01)}")
        L.append("```")
        for tool in TOOLS:
            L.append(R.shown(a, tool_cmd(a, tool, 99, "PID", Path("p.svg" if tool == "uscope" else "perf.data")))
                     + (" > p.txt" if tool == "bpftrace" else ""))
        L.append(f"{a.perf} script -i perf.data > perf.txt")
        L.append("```")
        L.append("")
    if sy:
        L.append(f"### S. The whole machine for {a.system_seconds:g} s at 49 Hz: uscope's own `-d`, from "
                 f"its \"duration reached\" line to its exit; the peers from SIGINT {a.system_seconds:g} s "
                 "after they attached")
        L.append("")
        L.append("| tool | runs | samples | SIGINT → output written | tool CPU | tool peak RSS |")
        L.append("|---|---:|---:|---:|---:|---:|")
        for tool in TOOLS:
            rs = sy[tool]
            stop = secs([r["stop_s"] for r in rs])
            if tool == "perf":
                stop += f" (perf script {R.med([r['script_s'] for r in rs]):.2f} s)"
            L.append(f"| {tool} | {len(rs)} | {R.med([r['samples'] for r in rs]):,.0f} | {stop} | "
                     f"{R.med([r['cpu_s'] for r in rs]):.2f} s | {mib(rs)} |")
        L.append("")
        worst = max(r["stop_s"] for r in sy["uscope"])
        goals.append(f"- a {a.system_seconds:g} s system-wide profile written in under 1 s: median "
                     f"{R.med([r['stop_s'] for r in sy['uscope']]):.2f} s, slowest {worst:.2f} s: "
                     f"{R.verdict(worst < 1)}")
        if sy["uscope"][-1].get("summary"):
            L.append(f"uscope's summary (last run): `{sy['uscope'][-1]['summary']}`")
            L.append("")
        L.append("```")
        for tool in TOOLS:
            L.append(R.shown(a, tool_cmd(a, tool, 49, None, Path("sys.svg" if tool == "uscope" else "perf.data"),
                                         a.system_seconds if tool == "uscope" else 0))
                     + (" > sys.txt" if tool == "bpftrace" else ""))
        L.append("```")
        L.append("")
    if jv:
        L.append(f"### J. A JVM (openjdk 17, libjvm.so), {a.jvm_seconds:g} s at 99 Hz, {len(jv)} runs")
        L.append("")
        L.append("| SIGINT → SVG written | tool CPU | tool peak RSS | samples | JIT frames named (`_[j]`) | libjvm frames named |")
        L.append("|---:|---:|---:|---:|---|---|")
        L.append(f"| {secs([r['stop_s'] for r in jv])} | {R.med([r['cpu_s'] for r in jv]):.2f} s | {mib(jv)} | "
                 f"{R.med([r['samples'] for r in jv]):,.0f} | "
                 f"{'yes' if all(r['jit_named'] for r in jv) else '**no**'} | "
                 f"{'yes' if all(r['libjvm_named'] for r in jv) else '**no**'} |")
        L.append("")
        worst = max(r["stop_s"] for r in jv)
        goals.append(f"- a profile touching libjvm.so symbolized and written in under 1 s: median "
                     f"{R.med([r['stop_s'] for r in jv]):.2f} s, slowest {worst:.2f} s: "
                     f"{R.verdict(worst < 1 and all(r['libjvm_named'] for r in jv))}")
        L.append(f"uscope's summary (last run): `{jv[-1]['summary']}`")
        L.append("")
        L.append("```")
        L.append(shlex.join([a.java, *JVM_FLAGS, "-cp", str(a.java_dir), "HotLoop"]) + " &")
        L.append(f"{a.jcmd} PID Compiler.perfmap")
        L.append(R.shown(a, tool_cmd(a, "uscope", 99, "PID", Path("jvm.svg"))))
        L.append("```")
        L.append("")
    L.append("Goals:")
    L.append("")
    L.extend(goals)
    return "\n".join(L)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=R.ROOT / "build" / "uscope")
    ap.add_argument("--target", type=Path, default=R.ROOT / "build" / "bench" / "profile_target")
    ap.add_argument("--java-dir", type=Path, default=R.ROOT / "build" / "tests" / "fixtures" / "java")
    ap.add_argument("--bpftrace", default="/usr/bin/bpftrace")
    ap.add_argument("--perf", default="/usr/bin/perf")
    ap.add_argument("--java", default="/usr/bin/java")
    ap.add_argument("--jcmd", default="/usr/bin/jcmd")
    ap.add_argument("--rounds", type=int, default=100_000,
                    help="profile_target's rounds of outer() (default 100000, ~1.7 s of CPU)")
    ap.add_argument("--runs", type=int, default=5, help="measured rounds of P (default 5)")
    ap.add_argument("--system-runs", type=int, default=3, help="uscope runs of S (default 3)")
    ap.add_argument("--system-seconds", type=float, default=10.0)
    ap.add_argument("--jvm-runs", type=int, default=3)
    ap.add_argument("--jvm-seconds", type=float, default=5.0)
    ap.add_argument("--skip", action="append", default=[], choices=["process", "system", "jvm"],
                    help="leave out a part (repeatable)")
    ap.add_argument("--markdown", type=Path, help="write the tables into this file (between markers)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("profile.py: needs root (perf events, BPF)", file=sys.stderr)
        return 1
    need = [a.uscope, a.target, Path(a.bpftrace), Path(a.perf), Path(a.java), Path(a.jcmd)]
    for exe in need:
        if not os.access(exe, os.X_OK):
            print(f"profile.py: {exe} missing; run scripts/build.sh (and scripts/install-deps.sh) first",
                  file=sys.stderr)
            return 1
    if "jvm" not in a.skip and not (a.java_dir / "HotLoop.class").exists():
        print(f"profile.py: {a.java_dir}/HotLoop.class missing; run scripts/build.sh first", file=sys.stderr)
        return 1
    a.target = a.target.resolve()
    a.java_dir = a.java_dir.resolve()
    a.workdir = Path(tempfile.mkdtemp(prefix="uscope-profile-bench-"))
    a.uscope_shown = str(a.uscope.resolve())
    a.perf_version = R.run([a.perf, "--version"]).text("out").strip()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t0 = time.monotonic()
    pr = sy = jv = None
    try:
        a.uscope = R.snapshot_binary(a.uscope.resolve(), a.workdir)
        mach = R.machine(a)
        if "process" not in a.skip:
            R.log("P. one process")
            pr = bench_process(a)
        if "system" not in a.skip:
            R.log("S. the whole machine")
            sy = bench_system(a)
        if "jvm" not in a.skip:
            R.log("J. a JVM")
            jv = bench_jvm(a)
    except R.BenchError as e:
        print(f"profile.py: FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("profile.py: interrupted", file=sys.stderr)
        return 130
    finally:
        R.cleanup()
        shutil.rmtree(a.workdir, ignore_errors=True)
    body = report(a, mach, pr, sy, jv, time.monotonic() - t0)
    print(body)
    if a.markdown:
        R.write_marked_block(a.markdown, body, BEGIN_MARK, END_MARK)
        R.log(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
