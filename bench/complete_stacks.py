#!/usr/bin/python3
"""How many samples have a complete user stack (one that reaches its thread's entry point), from
`uscope profile` and its peers, on three targets built without frame pointers: the measure of the
.eh_frame unwinding issue (11). Needs root, build/uscope and the test build's
build/tests/fixtures/unwind/nofp_spin; python3.11, redis-server, redis-tools, linux-perf, bpftrace
and bpftool from apt (scripts/install-deps.sh). Standard library only; reuses run.py's process
handling and profile.py's gated slowdown run.

    python3 bench/complete_stacks.py                                # the tables on stdout
    python3 bench/complete_stacks.py --seconds 10
    python3 bench/complete_stacks.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

Targets, each started once and profiled by every tool in turn for --seconds at --hz (99):
  python3.11   /usr/bin/python3.11 running a CPU-bound script (recursive fib in a loop)
  redis-server /usr/bin/redis-server on a free port under `redis-benchmark -q -l` (set/get, 50
               clients)
  nofp_spin    tests/fixtures/unwind/nofp_spin: main and 2 pthreads on a known chain of 8
               -O2 -fomit-frame-pointer functions, half of the time inside libnofp_lib.so

Tools:
  uscope       `uscope profile -p PID -F HZ -d S --format folded`: its own summary line
               ("complete stacks: X%"), as it is. Meanwhile kernel.bpf_stats_enabled=1 (restored
               after), and run_time_ns / run_cnt of its profile_sample program (the program id
               from uscope's own fds, its numbers from `bpftool prog show id N --json`): the BPF
               time per sample
  perf dwarf   `perf record -e cpu-clock -F HZ --call-graph dwarf -p PID -- sleep S`, `perf script`:
               copies the user stack (8 KiB by default) to user space per sample and unwinds there
               afterwards; also the size of its perf.data per sample
  bpftrace     `profile:hz:HZ /pid == PID/ { @[ustack(perf, 127)] = count(); }` for S seconds
  perf fp      `perf record -e cpu-clock -F HZ -g -p PID -- sleep S`, `perf script`: frame pointers
A stack from perf or bpftrace is complete when its outermost frame is one of ENTRY_FUNCTIONS.

And the slowdown of nofp_spin (a fixed number of rounds on its main thread, timing its own CPU
time) under `uscope profile -F 99` against no profiler, --slowdown-runs rounds interleaved after
one discarded round, medians (profile.py's gated run).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)
import profile as P  # noqa: E402  (bench/profile.py, which shadows the standard library's profile)

BEGIN_MARK = "<!-- bench/complete_stacks.py: begin generated -->"
END_MARK = "<!-- bench/complete_stacks.py: end generated -->"

PY_SCRIPT = """
import sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print("ready", flush=True)
while True:
    fib(24)
"""

# The outermost frame of a complete user stack, as perf and bpftrace name it: the main thread's
# _start (perf also names glibc's frames below main, __libc_start_main_impl as an inlined frame),
# a pthread's start_thread or clone3 (clone on older glibc).
ENTRY_FUNCTIONS = {"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
                   "start_thread", "clone3", "clone"}

TARGETS = {  # how each target runs, as shown under the table
    "python3.11": "/usr/bin/python3.11 -c FIB_LOOP (bench/complete_stacks.py)",
    "redis-server": "redis-server --port PORT --save '' under redis-benchmark -q -l -t set,get -c 50",
    "nofp_spin": "build/tests/fixtures/unwind/nofp_spin (main + 2 pthreads, -O2 -fomit-frame-pointer)",
}
TOOLS = {  # column: how the tool is shown
    "uscope": "uscope profile",
    "perf_dwarf": "perf --call-graph dwarf",
    "bpftrace": "bpftrace ustack(perf, 127)",
    "perf_fp": "perf -g (frame pointers)",
}


# ---------------------------------------------------------------------------------------------
# Targets: each a context manager that yields the PID to profile while it runs under load


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, p: R.Proc, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        R.check(p.end is None, "redis-server exited", p)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise R.BenchError(f"redis-server did not listen on {port} within {timeout} s\n{p.describe()}")


def commands_processed(a, port: int) -> int:
    info = R.run([a.redis_cli, "-p", str(port), "info", "stats"], timeout=30).text("out")
    m = re.search(r"^total_commands_processed:(\d+)", info, re.M)
    return int(m.group(1)) if m else 0


@contextlib.contextmanager
def started(cmd: list[str], ready: str, what: str):
    """`cmd` started and killed after use, once it printed a line matching `ready`."""
    t = R.Proc(cmd)
    try:
        R.check(t.wait_line("out", ready, 30) is not None, f"{what} did not start", t)
        yield t
    finally:
        t.kill()
        t.wait(30)


@contextlib.contextmanager
def python_target(a):
    with started([a.python, "-c", PY_SCRIPT], r"^ready$", "python3.11") as t:
        yield t.pid


@contextlib.contextmanager
def nofp_spin_target(a):
    with started([str(a.nofp_spin)], r"^ready$", "nofp_spin") as t:
        yield t.pid


@contextlib.contextmanager
def redis_target(a):
    port = free_port()
    server = R.Proc([a.redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                     "--appendonly", "no"])
    load = None
    try:
        wait_port(port, server)
        load = R.Proc([a.redis_benchmark, "-p", str(port), "-q", "-l", "-t", "set,get", "-c", "50"])
        # Until the benchmark's requests reach the server (its progress lines end in \r, not \n).
        deadline = time.monotonic() + 30
        while commands_processed(a, port) < 10_000:
            R.check(load.end is None and time.monotonic() < deadline,
                    "redis-benchmark sent no load within 30 s", load)
            time.sleep(0.05)
        yield server.pid
    finally:
        if load is not None:
            load.kill()
            load.wait(30)
        server.kill()
        server.wait(30)


# ---------------------------------------------------------------------------------------------
# uscope, and its BPF time per sample


@contextlib.contextmanager
def bpf_stats_enabled():
    """kernel.bpf_stats_enabled=1 for the block (the kernel then times every BPF program), then
    its old value."""
    knob = Path("/proc/sys/kernel/bpf_stats_enabled")
    old = knob.read_text().strip()
    knob.write_text("1")
    try:
        yield
    finally:
        knob.write_text(old)


def owned_prog_ids(pid: int) -> list[int]:
    """Ids of the BPF programs process `pid` holds fds of (from /proc/PID/fdinfo)."""
    ids = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                    continue
                m = re.search(r"^prog_id:\s*(\d+)", Path(f"/proc/{pid}/fdinfo/{fd}").read_text(), re.M)
            except OSError:
                continue
            if m:
                ids.append(int(m.group(1)))
    except OSError:
        pass
    return ids


def prog_stats(pid: int, name: str | None = None,
               bpftool: str = "bpftool") -> tuple[int, int] | None:
    """(run_time_ns, run_cnt) of the BPF programs process `pid` holds, per bpftool: of the one
    named `name`, or of all of them summed; None when there is none."""
    found = None
    for prog_id in owned_prog_ids(pid):
        p = subprocess.run([bpftool, "prog", "show", "id", str(prog_id), "--json"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            continue
        prog = json.loads(p.stdout)
        if name is None or prog.get("name") == name:
            ns, runs = found or (0, 0)
            found = (ns + prog.get("run_time_ns", 0), runs + prog.get("run_cnt", 0))
            if name is not None:
                return found
    return found


def uscope_cmd(a, pid, out: Path) -> list[str]:
    return [str(a.uscope), "profile", "-p", str(pid), "-F", str(a.hz), "-d", f"{a.seconds:g}",
            "--format", "folded", "-o", str(out), "-v"]


def run_uscope(a, pid: int, name: str) -> dict:
    out = a.workdir / f"{name}.folded"
    p = R.Proc(uscope_cmd(a, pid, out))
    stats = None
    deadline = time.monotonic() + a.seconds + 120
    # Its program's counters, read until it exits: the last reading misses at most 0.2 s of samples.
    while not p.wait(0.2):
        if time.monotonic() > deadline:
            p.kill()
            p.wait(30)
            raise R.BenchError(f"uscope did not exit after {a.seconds + 120:g} s\n{p.describe()}")
        if a.bpftool:
            stats = prog_stats(p.pid, "profile_sample", a.bpftool) or stats
    R.check(p.rc == 0, "uscope profile failed", p)
    summary = P.summary_line(p.text("err"))
    R.check(bool(summary), "uscope printed no summary line", p)
    # "n/a (no samples)": a target that slept throughout (python_profile.py's measure of the runs
    # that drop other processes' samples).
    m = re.search(r"complete stacks: (?:([\d.]+)%|n/a)", summary)
    R.check(m is not None, "uscope's summary has no complete-stack share", p)
    n = re.search(r"([\d,]+) samples", summary)
    folded = out.read_text(errors="replace") if out.exists() else ""
    r = {"share": float(m.group(1) or 0), "samples": int(n.group(1).replace(",", "")) if n else 0,
         "summary": summary, "distinct": len(folded.splitlines()), "folded": folded}
    if stats and stats[1] > 0:
        r["bpf_ns"], r["bpf_runs"] = stats[0] / stats[1], stats[1]
    tables = unwind_tables_line(p.text("err"))
    if tables:
        r["tables"] = tables
    out.unlink(missing_ok=True)
    return r


def unwind_tables_line(err: str) -> str | None:
    """`uscope profile -v`'s line on its unwind tables (objects, rows, MiB in BPF maps, build time)."""
    for line in err.splitlines():
        if line.startswith("uscope: unwind tables: "):
            return line[len("uscope: "):]
    return None


# ---------------------------------------------------------------------------------------------
# Unwind tables: what they cost to build per object (cold and from uscope's disk cache), and in
# BPF maps for everything a process maps (python3.11 above; a JVM here).

TABLE_OBJECTS = {
    "libc.so.6": "/lib/x86_64-linux-gnu/libc.so.6",
    "python3.11": "/usr/bin/python3.11",
    "libjvm.so": "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so",
}

JAVA_SPIN = """
public class Spin {
  static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
  public static void main(String[] args) {
    System.out.println("ready");
    long s = 0;
    while (true) s += fib(25);
  }
}
"""


def object_table(a, path: str, cache: Path) -> dict:
    p = R.Proc([str(a.uscope), "list", "--info", path, "--format", "json"],
               env={**os.environ, "USCOPE_CACHE_DIR": str(cache)})
    p.wait(120)
    R.check(p.rc == 0, f"uscope list --info {path} failed", p)
    u = json.loads(p.text("out"))["unwind"]
    R.check(u is not None and not u["error"], f"no unwind table for {path}", p)
    return u


def table_costs(a) -> dict:
    """Per object: rows, cache file size, build time cold and read time from the cache (median of
    3 each, the cache emptied before each cold build)."""
    out = {}
    for name, path in TABLE_OBJECTS.items():
        if not Path(path).exists():
            continue
        cold, warm, u = [], [], None
        for _ in range(3):
            cache = a.workdir / "cache"
            shutil.rmtree(cache, ignore_errors=True)
            u = object_table(a, path, cache)
            if u["from_cache"]:
                raise R.BenchError(f"{path}: a cold build read the cache")
            cold.append(u["milliseconds"])
            w = object_table(a, path, cache)
            if not w["from_cache"]:
                raise R.BenchError(f"{path}: the second run did not read the cache")
            warm.append(w["milliseconds"])
        size = Path(u["cache_file"]).stat().st_size if u["cache_file"] else 0
        out[name] = {"rows": u["rows"], "rules": u["rules"], "fdes": u["fdes"], "cold": cold,
                     "warm": warm, "bytes": size}
    return out


def jvm_tables(a) -> str | None:
    """`uscope profile -v`'s table line for a JVM running a loop (every object it maps)."""
    if not shutil.which("java"):
        return None
    src = a.workdir / "Spin.java"
    src.write_text(JAVA_SPIN)
    with started(["java", str(src)], r"^ready$", "java") as t:
        p = R.Proc([str(a.uscope), "profile", "-p", str(t.pid), "-d", "1", "--format", "folded",
                    "-o", str(a.workdir / "jvm.folded"), "-v"])
        p.wait(120)
        R.check(p.rc == 0, "uscope profile of the JVM failed", p)
        return unwind_tables_line(p.text("err"))


# ---------------------------------------------------------------------------------------------
# The peers: perf (DWARF and frame pointers) and bpftrace. Both print one frame a line as
# "ADDR FUNCTION+OFFSET (OBJECT)", innermost first.

FRAME = re.compile(r"^\s*[0-9a-f]+ (.*) \((.*)\)$")


def frame_function(line: str) -> str | None:
    m = FRAME.match(line)
    return re.sub(r"\+(0x)?[0-9a-f]+$", "", m.group(1)) if m else None


def stack_share(stacks: list[tuple[list[str], int]]) -> tuple[float, int]:
    """(% of samples whose outermost frame is an entry function, samples) over (frames, count)."""
    total = sum(n for _, n in stacks)
    complete = sum(n for frames, n in stacks if frames and frames[-1] in ENTRY_FUNCTIONS)
    return (100.0 * complete / total if total else 0.0), total


def perf_script_stacks(text: str) -> list[tuple[list[str], int]]:
    """perf script's samples: a header line, frame lines, a blank line."""
    stacks: list[tuple[list[str], int]] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        if lines:
            stacks.append(([f for f in map(frame_function, lines[1:]) if f is not None], 1))
    return stacks


def bpftrace_stacks(text: str) -> list[tuple[list[str], int]]:
    """bpftrace's map: `@[` frame lines `]: COUNT`, or `@[]: COUNT` for an empty stack."""
    stacks = []
    for body, count in re.findall(r"^@\[(.*?)\]: (\d+)$", text, re.M | re.S):
        stacks.append(([f for f in map(frame_function, body.splitlines()) if f is not None], int(count)))
    return stacks


def perf_cmd(a, pid, call_graph: list[str], out: Path) -> list[str]:
    return [a.perf, "record", "-q", "-e", "cpu-clock", "-F", str(a.hz), *call_graph, "-p", str(pid),
            "-o", str(out), "--", "sleep", f"{a.seconds:g}"]


def run_perf(a, pid: int, call_graph: list[str]) -> dict:
    data = a.workdir / "perf.data"
    R.run(perf_cmd(a, pid, call_graph, data), timeout=a.seconds + 120)
    size = data.stat().st_size
    # perf script names inlined frames with addr2line helpers that outlive it by a moment: run()'s
    # "left processes behind" warning for it is expected.
    text = R.run([a.perf, "script", "-i", str(data)], timeout=600).text("out")
    data.unlink()
    share, samples = stack_share(perf_script_stacks(text))
    return {"share": share, "samples": samples, "data_bytes": size}


def bpftrace_cmd(a, pid) -> list[str]:
    return [a.bpftrace, "-e", f"profile:hz:{a.hz} /pid == {pid}/ {{ @[ustack(perf, 127)] = count(); }} "
            f"interval:ms:{int(a.seconds * 1000)} {{ exit(); }}"]


def run_bpftrace(a, pid: int) -> dict:
    text = R.run(bpftrace_cmd(a, pid), timeout=a.seconds + 120).text("out")
    share, samples = stack_share(bpftrace_stacks(text))
    return {"share": share, "samples": samples}


def profile_target(a, name: str, pid: int) -> dict:
    res = {}
    for tool in TOOLS:
        if tool in a.missing:
            continue
        R.log(f"  {TOOLS[tool]}")
        if tool == "uscope":
            res[tool] = run_uscope(a, pid, name)
        elif tool == "perf_dwarf":
            res[tool] = run_perf(a, pid, ["--call-graph", "dwarf"])
        elif tool == "perf_fp":
            res[tool] = run_perf(a, pid, ["-g"])
        else:
            res[tool] = run_bpftrace(a, pid)
    return res


# ---------------------------------------------------------------------------------------------
# The profiled program's slowdown


def slowdown(a) -> dict:
    argv = [str(a.nofp_spin), "--rounds", str(a.rounds)]
    res: dict[str, list[float]] = {"none": [], "uscope": []}
    for rnd in range(a.slowdown_runs + 1):
        R.log(f"  round {rnd}/{a.slowdown_runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
        for tool in res:
            r = P.one_run(a, tool, 99, argv, names=("spin_leaf",))
            if rnd > 0:
                res[tool].append(r["cpu"])
    return res


# ---------------------------------------------------------------------------------------------
# Report


def cell(r: dict | None, tool: str, a) -> str:
    if r is None:
        return f"— ({a.missing[tool]})" if tool in a.missing else "—"
    return f"{r['share']:.1f}% of {r['samples']:,}"


def report(a, mach: dict, results: dict, slow: dict | None, tables: dict, jvm: str | None,
           elapsed: float) -> str:
    L = [f"Run {mach['date']} on Linux {mach['kernel']}, {mach['cpus']} CPUs ({mach['cpu']}); "
         f"{mach['uscope']} (git {mach['git']}), {a.versions}. Load average {mach['load']} at the "
         f"start, {R.loadavg()} at the end; {elapsed:.0f} s.", "",
         f"Command: `scripts/build.sh && {shlex.join(['python3', 'bench/complete_stacks.py', *sys.argv[1:]])}`", "",
         f"Share of samples whose user stack reaches its thread's entry, of the samples each tool got "
         f"in {a.seconds:g} s at {a.hz} Hz:", "",
         "| target | " + " | ".join(TOOLS.values()) + " | perf dwarf's perf.data | uscope's BPF time |",
         "|---|" + "---:|" * (len(TOOLS) + 2)]
    for name, res in results.items():
        dw = res.get("perf_dwarf")
        data = (f"{dw['data_bytes'] / 1e6:.1f} MB, {dw['data_bytes'] / max(dw['samples'], 1) / 1024:.1f} KiB/sample"
                if dw else "—")
        us = res.get("uscope")
        bpf = (f"{us['bpf_ns'] / 1000:.2f} µs per run ({us['bpf_runs']:,} runs); "
               f"{us['bpf_ns'] * us['bpf_runs'] / max(us['samples'], 1) / 1000:.2f} µs per sample kept"
               if us and "bpf_ns" in us else "—")
        L.append(f"| {name} | " + " | ".join(cell(res.get(t), t, a) for t in TOOLS) + f" | {data} | {bpf} |")
    L.append("")
    if slow:
        none, us = R.med(slow["none"]), R.med(slow["uscope"])
        L.append(f"Slowdown of `nofp_spin --rounds {a.rounds}` (its own CPU time, medians of "
                 f"{a.slowdown_runs} rounds after one discarded, [min–max]): no profiler "
                 f"{none:.3f} s [{R.spread(slow['none'], '.3f')}], `uscope profile -F 99` {us:.3f} s "
                 f"[{R.spread(slow['uscope'], '.3f')}]: ratio {us / none:.3f} ({(us / none - 1) * 100:+.1f}%).")
        L.append("")
    if tables:
        L.append("Unwind tables per object (`uscope list --info OBJECT --format json`; medians of 3, "
                 "[min–max]; the cache emptied before each cold build):")
        L.append("")
        L.append("| object | rows | rules | FDEs | cache file | built | from the cache |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for name, t in tables.items():
            L.append(f"| {name} | {t['rows']:,} | {t['rules']:,} | {t['fdes']:,} | "
                     f"{t['bytes'] / 1e6:.2f} MB | {R.med(t['cold']):.1f} ms [{R.spread(t['cold'], '.1f')}] | "
                     f"{R.med(t['warm']):.1f} ms [{R.spread(t['warm'], '.1f')}] |")
        L.append("")
    L.append("Tables in BPF maps for everything each process maps (`uscope profile -v`):")
    L.append("")
    for name, res in results.items():
        if "uscope" in res and "tables" in res["uscope"]:
            L.append(f"- {name}: `{res['uscope']['tables']}`")
    if jvm:
        L.append(f"- a JVM (`java Spin.java`, a fib loop): `{jvm}`")
    L.append("")
    L.append("uscope's summaries:")
    L.append("")
    for name, res in results.items():
        if "uscope" in res:
            L.append(f"- {name}: `{res['uscope']['summary']}`")
    L.append("")
    L.append("```")
    shown_pid = "PID"
    L.append(R.shown(a, uscope_cmd(a, shown_pid, Path("TARGET.folded"))))
    L.append(shlex.join(perf_cmd(a, shown_pid, ["--call-graph", "dwarf"], Path("perf.data")))
             + f" && {a.perf} script -i perf.data")
    L.append(shlex.join(bpftrace_cmd(a, shown_pid)))
    L.append(shlex.join(perf_cmd(a, shown_pid, ["-g"], Path("perf.data"))) + f" && {a.perf} script -i perf.data")
    for name, how in TARGETS.items():
        L.append(f"# {name}: {how}")
    L.append("```")
    L.append("")
    L.append(f"A perf or bpftrace stack is complete when its outermost frame is one of "
             f"{', '.join(sorted(ENTRY_FUNCTIONS))}; uscope's share is its own summary's. uscope's "
             f"BPF time: run_time_ns / run_cnt of its profile_sample program (every run, on every CPU, "
             f"also those that drop a sample of another process), and run_time_ns over the samples "
             f"its summary counts (its last reading is up to 0.2 s before the end).")
    return "\n".join(L)


def find_tools(a) -> None:
    """a.missing: the peers that cannot run here, each with why (the table says so)."""
    a.missing = {}
    for tool, exe, pkg in (("perf_dwarf", a.perf, "linux-perf"), ("perf_fp", a.perf, "linux-perf"),
                           ("bpftrace", a.bpftrace, "bpftrace")):
        if not os.access(exe, os.X_OK):
            a.missing[tool] = f"{exe} missing: apt-get install {pkg} (scripts/install-deps.sh)"
    for why in sorted(set(a.missing.values())):
        R.log(f"complete_stacks.py: {why}; its columns stay empty")
    if not os.access(a.bpftool, os.X_OK):
        R.log(f"complete_stacks.py: {a.bpftool} missing (apt-get install bpftool): no BPF time per sample")
        a.bpftool = None
    versions = []
    if "perf_fp" not in a.missing:
        versions.append(R.run([a.perf, "--version"]).text("out").strip())
    if "bpftrace" not in a.missing:
        versions.append(R.run([a.bpftrace, "--version"]).text("out").strip())
    a.versions = ", ".join(versions) or "no peers"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=R.ROOT / "build" / "uscope")
    ap.add_argument("--nofp-spin", type=Path,
                    default=R.ROOT / "build" / "tests" / "fixtures" / "unwind" / "nofp_spin")
    ap.add_argument("--python", default="/usr/bin/python3.11")
    ap.add_argument("--redis-server", default="/usr/bin/redis-server")
    ap.add_argument("--redis-benchmark", default="/usr/bin/redis-benchmark")
    ap.add_argument("--redis-cli", default="/usr/bin/redis-cli")
    ap.add_argument("--perf", default="/usr/bin/perf")
    ap.add_argument("--bpftrace", default="/usr/bin/bpftrace")
    ap.add_argument("--bpftool", default=shutil.which("bpftool") or "/usr/sbin/bpftool")
    ap.add_argument("--seconds", type=float, default=5.0, help="profile duration per tool (default 5)")
    ap.add_argument("--hz", type=int, default=99, help="sampling frequency of every tool (default 99)")
    ap.add_argument("--rounds", type=int, default=15000,
                    help="nofp_spin's rounds for the slowdown (default 15000, ~1.5 s of CPU)")
    ap.add_argument("--slowdown-runs", type=int, default=5, help="measured slowdown rounds (default 5)")
    ap.add_argument("--skip", action="append", default=[],
                    choices=[*TARGETS, "slowdown", "tables"],
                    help="leave out a target, the slowdown or the table costs (repeatable)")
    ap.add_argument("--markdown", type=Path, help="write the tables into this file (between markers)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("complete_stacks.py: needs root (perf events, BPF)", file=sys.stderr)
        return 1
    need = [a.uscope, a.nofp_spin, Path(a.python), Path(a.redis_server), Path(a.redis_benchmark),
            Path(a.redis_cli)]
    for exe in need:
        if not os.access(exe, os.X_OK):
            print(f"complete_stacks.py: {exe} missing (scripts/build.sh, scripts/install-deps.sh)",
                  file=sys.stderr)
            return 1
    find_tools(a)
    a.nofp_spin = a.nofp_spin.resolve()
    a.workdir = Path(tempfile.mkdtemp(prefix="uscope-complete-"))
    a.uscope_shown = str(a.uscope.resolve())
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t0 = time.monotonic()
    results, slow, tables, jvm = {}, None, {}, None
    try:
        a.uscope = R.snapshot_binary(a.uscope.resolve(), a.workdir)
        mach = R.machine(argparse.Namespace(bpftrace="/bin/true", uscope=a.uscope))
        with bpf_stats_enabled():
            for name, target in (("python3.11", python_target), ("redis-server", redis_target),
                                 ("nofp_spin", nofp_spin_target)):
                if name in a.skip:
                    continue
                R.log(name)
                with target(a) as pid:
                    results[name] = profile_target(a, name, pid)
        if "slowdown" not in a.skip:
            R.log("slowdown of nofp_spin under uscope profile -F 99")
            slow = slowdown(a)
        if "tables" not in a.skip:
            R.log("unwind tables: per object, and a JVM's")
            tables = table_costs(a)
            jvm = jvm_tables(a)
    except R.BenchError as e:
        print(f"complete_stacks.py: FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("complete_stacks.py: interrupted", file=sys.stderr)
        return 130
    finally:
        R.cleanup()
        shutil.rmtree(a.workdir, ignore_errors=True)
    body = report(a, mach, results, slow, tables, jvm, time.monotonic() - t0)
    print(body)
    if a.markdown:
        R.write_marked_block(a.markdown, body, BEGIN_MARK, END_MARK)
        R.log(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
