#!/usr/bin/python3
"""uscope benchmarks against bpftrace, in one go. Needs root, build/uscope and build/bench/bench_target
(scripts/build.sh builds both). Standard library only.

    python3 bench/run.py                                  # print the tables
    python3 bench/run.py --markdown docs/BENCHMARKS.md    # also write them into that file

Four measurements; medians are reported, with min–max. A: --runs runs per tool after one
discarded warm-up run; B: --per-hit-runs rounds over all configurations after one discarded round;
C: --libc-runs uscope runs, and bpftrace once; D: --storm-runs and --slow-runs rounds, none discarded.

  A. Start-up to first event: `uscope trace -M 1 -c CMD 'p::F'` against
     `bpftrace -c CMD -e 'uprobe:BIN:F { printf("hit\\n"); exit(); }'`: wall time from launch to
     exit, peak RSS (ru_maxrss from wait4 of the tool: the largest of the tool and its waited-for
     children, i.e. the tool; the target is ~1 MiB).
  B. Per-hit cost at three sites of bench_target: the ns per call the target measures itself
     around its loop, with no probe, bpftrace `{}` (the bare trap plus an empty BPF program),
     bpftrace `{ @c = count(); }`, `uscope count`, `uscope trace` with a predicate that is always
     false, and for the endbr64 function `uscope count --no-move`. Hit counts are checked.
  B'. What a sleepable program costs per hit: `uscope trace` with an always-false string predicate
     (`str(ctx->sp) == "never"`: a short string on a mapped page) at the emulated and single-stepped
     sites, sleepable (the default where the kernel has them) against `USCOPE_NO_SLEEPABLE=1`, with
     an integer predicate and no probe beside them; --per-hit-runs rounds, as B.
  C. `uscope count -p PID -d 5 'c:*'` over all of libc in a process calling a mix of libc
     functions: attach time, events counted per second, and whether the counts equal the calls
     the target made itself. bpftrace's `uprobe:libc:*` attach over the same process (at most
     once, it is slow to tear down).
  D. Event storm: `bench_target emulated 500000` with one `"%d", arg1` probe, uscope `trace --json`
     against bpftrace `printf("%d\n", arg0)`, attached with -p before the target starts its loop.
     To a file: events delivered, counted as lost, and the target's cost per call (its own clock,
     and its user+system CPU time from wait4, which is robust to the load of a shared machine)
     against `uscope count` at the same site and no probe. To a slow pipe (a python3.11 reader
     that sleeps between batches of lines): events delivered and lost, and the tools' peak RSS.
     Then SIGTERM 1 s into a storm whose output is a pipe nobody reads: time until the tool exits
     (SIGKILL after --sigterm-bound, reported as "> N s").

Every tool exit status and hit count is checked; any surprise aborts the run with the command and
its output. Every process started here is killed (by pid and process group) on timeout, error or
Ctrl-C. build/uscope is copied once at the start and the copy is measured throughout, so a rebuild
by someone else during the run cannot mix two versions. ~3.5 minutes, ~2 of them bpftrace tearing
down its libc probes (--skip bpftrace-libc leaves that out).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
BEGIN_MARK = "<!-- bench/run.py: begin generated -->"
END_MARK = "<!-- bench/run.py: end generated -->"


class BenchError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Processes


def _children_of(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may contain spaces and parentheses: ppid is the 2nd field after the last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            kids.append(int(entry))
    return kids


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for k in _children_of(p):
            out.append(k)
            todo.append(k)
    return out


LIVE: set["Proc"] = set()


class Proc:
    """A started command: stdout/stderr lines with arrival times, exit time, rc, peak RSS and CPU
    time (from wait4, done in a thread so the exit time is exact). stdin/stdout: an fd to give the
    command instead (then its stdout is not read here)."""

    def __init__(self, cmd: list[str], stdin_pipe: bool = False, env: dict | None = None,
                 stdin: int | None = None, stdout: int | None = None, sample_hwm: bool = False):
        self.cmd = cmd
        self.cond = threading.Condition()
        self.lines: dict[str, list[tuple[float, str]]] = {"out": [], "err": []}
        self.end: float | None = None
        self.rc: int | None = None
        self.maxrss_kib = 0
        self.cpu_s = 0.0
        self.hwm_kib = 0  # VmHWM, sampled (sample_hwm): the process's own peak, unlike ru_maxrss
        self.t0 = time.monotonic()
        try:
            self.p = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE if stdin_pipe else (subprocess.DEVNULL if stdin is None else stdin),
                stdout=subprocess.PIPE if stdout is None else stdout,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own process group: a kill reaches the target of -c too
                env=env,
            )
        except OSError as e:
            raise BenchError(f"cannot start {shlex.join(cmd)}: {e}") from e
        self.pid = self.p.pid
        LIVE.add(self)
        self.threads = [
            threading.Thread(target=self._read, args=(self.p.stderr, "err"), daemon=True),
            threading.Thread(target=self._reap, daemon=True),
        ]
        if stdout is None:
            self.threads.append(threading.Thread(target=self._read, args=(self.p.stdout, "out"), daemon=True))
        if sample_hwm:
            threading.Thread(target=self._sample_hwm, daemon=True).start()
        for t in self.threads:
            t.start()

    def _read(self, stream, key: str) -> None:
        for raw in iter(stream.readline, b""):
            with self.cond:
                self.lines[key].append((time.monotonic() - self.t0, raw.decode(errors="replace")))
                self.cond.notify_all()
        stream.close()

    def _sample_hwm(self) -> None:
        # ru_maxrss of a child starts from its parent's peak (Linux keeps the larger across fork and
        # exec), so a tool smaller than run.py cannot be told from run.py: read its own high-water
        # mark while it lives. It only grows, so the last sample misses at most its last 10 ms.
        while self.end is None:
            try:
                m = re.search(r"^VmHWM:\s+(\d+) kB", Path(f"/proc/{self.pid}/status").read_text(), re.M)
                if m:
                    self.hwm_kib = max(self.hwm_kib, int(m.group(1)))
            except OSError:
                return
            time.sleep(0.01)

    def _reap(self) -> None:
        _, status, ru = os.wait4(self.pid, 0)
        with self.cond:
            self.end = time.monotonic() - self.t0
            self.rc = os.waitstatus_to_exitcode(status)
            self.maxrss_kib = ru.ru_maxrss
            self.cpu_s = ru.ru_utime + ru.ru_stime
            self.p.returncode = self.rc  # reaped here: keep Popen from waiting again
            self.cond.notify_all()

    def text(self, key: str) -> str:
        with self.cond:
            return "".join(line for _, line in self.lines[key])

    def send(self, line: str) -> None:
        self.p.stdin.write(line.encode())
        self.p.stdin.flush()

    def wait_line(self, key: str, pattern: str, timeout: float, start: int = 0):
        """First line of stream `key` (from index `start`) matching `pattern`:
        (time since launch, match, index). None if the process exits or time runs out first."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            i = start
            while True:
                while i < len(self.lines[key]):
                    t, line = self.lines[key][i]
                    m = rx.search(line)
                    if m:
                        return t, m, i
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or (self.end is not None and not any(t.is_alive() for t in self.threads)):
                    return None
                self.cond.wait(min(left, 0.5))

    def wait(self, timeout: float) -> bool:
        """True if the process exited (and its output was read) within timeout."""
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if self.end is None:
            return False
        LIVE.discard(self)
        return True

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the process and every descendant by pid, and its process group (which outlives
        the reaped leader while a member, e.g. the target of -c, is left)."""
        if self.end is None:
            for pid in [self.pid] + _descendants(self.pid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def group_left(self) -> bool:
        try:
            os.killpg(self.pid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def describe(self) -> str:
        return (f"command: {shlex.join(self.cmd)}\nexit status: {self.rc}\n"
                f"--- stdout (tail) ---\n{self.text('out')[-3000:]}"
                f"--- stderr (tail) ---\n{self.text('err')[-3000:]}")


def run(cmd: list[str], timeout: float = 120, env: dict | None = None) -> Proc:
    """Run to completion; fail loudly on timeout or a non-zero exit status."""
    p = Proc(cmd, env=env)
    if not p.wait(timeout):
        p.kill()
        p.wait(30)
        raise BenchError(f"timed out after {timeout} s\n{p.describe()}")
    if p.group_left():
        log(f"run.py: warning: {shlex.join(cmd)} exited and left processes behind; killing them")
        p.kill()
    if p.rc != 0:
        raise BenchError(f"tool failed\n{p.describe()}")
    return p


def cleanup() -> None:
    for p in list(LIVE):
        p.kill()
    for p in list(LIVE):
        if not p.wait(300):
            print(f"run.py: WARNING: pid {p.pid} ({p.cmd[0]}) did not exit", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# Helpers


def write_marked_block(path: Path, body: str, begin: str, end: str) -> None:
    """Replaces the text between `begin` and `end` in `path` (a script's own generated section of
    docs/BENCHMARKS.md) with `body`, or appends the marked block when the markers are absent."""
    block = f"{begin}\n{body}\n{end}"
    text = path.read_text()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        path.write_text(head + block + tail)
    else:
        path.write_text(text.rstrip("\n") + "\n\n" + block + "\n")


class Tracefs:
    """bpftrace 0.17 reads a tracepoint's format from tracefs, which this machine does not mount:
    mounted for the bench's duration when it is not, and unmounted after."""

    PATH = Path("/sys/kernel/tracing")

    def __enter__(self):
        self.mounted = not (self.PATH / "events").exists()
        if self.mounted:
            subprocess.run(["mount", "-t", "tracefs", "nodev", str(self.PATH)], check=True)
        return self

    def __exit__(self, *exc):
        if self.mounted:
            subprocess.run(["umount", str(self.PATH)], check=False)


def run_marked_bench(name: str, a, measure, report, begin: str, end: str) -> int:
    """The body of a bench script's main() (http.py, tls.py): a work directory (a.workdir) holding
    a snapshot of a.uscope, `measure(a)` run with SIGTERM as an interrupt, every process it started
    and the directory removed at the end, then `report(a, result, seconds)` printed and, with
    a.markdown, written into that file between `begin` and `end`. Returns the exit code."""
    a.workdir = Path(tempfile.mkdtemp(prefix=f"uscope-{name}-bench-"))
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    t0 = time.monotonic()
    try:
        a.uscope = snapshot_binary(a.uscope.resolve(), a.workdir)
        result = measure(a)
    except BenchError as e:
        print(f"{name}.py: FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{name}.py: interrupted", file=sys.stderr)
        return 130
    finally:
        cleanup()
        shutil.rmtree(a.workdir, ignore_errors=True)
    body = report(a, result, time.monotonic() - t0)
    print(body)
    if a.markdown:
        write_marked_block(a.markdown, body, begin, end)
        log(f"wrote {a.markdown}")
    return 0


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def spread(xs: list[float], fmt: str) -> str:
    return f"{format(min(xs), fmt)}–{format(max(xs), fmt)}"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ns_per_call(p: Proc) -> float:
    m = re.search(r"^ns_per_call=([0-9.]+) calls=(\d+)$", p.text("out"), re.M)
    if not m:
        raise BenchError(f"the target printed no ns_per_call line\n{p.describe()}")
    return float(m.group(1))


def check(cond: bool, what: str, p: Proc) -> None:
    if not cond:
        raise BenchError(f"{what}\n{p.describe()}")


# ---------------------------------------------------------------------------------------------
# A. Start-up to first event


def bench_startup(a, runs: int) -> dict:
    func = "bench_emulated"
    cmd = f"{shlex.quote(str(a.target))} emulated 1"
    tools = {
        "uscope": [str(a.uscope), "trace", "-M", "1", "-c", cmd, f"p::{func}"],
        "bpftrace": [a.bpftrace, "-c", cmd, "-e",
                     f'uprobe:{a.target}:{func} {{ printf("hit\\n"); exit(); }}'],
    }
    res = {k: {"wall": [], "event": [], "rss": [], "first_wall": None, "first_rss": None} for k in tools}
    for i in range(runs + 1):
        for name, argv in tools.items():
            p = run(argv, timeout=60)
            # uscope's line: PID TID COMM FUNC (a time column first with -t)
            event = (rf"^(?:\S+\s+)?\d+\s+\d+\s+bench_target\s+{func}\b" if name == "uscope"
                     else r"^hit$")
            got = p.wait_line("out", event, timeout=0)
            check(got is not None, f"{name} printed no event", p)
            r = res[name]
            if i == 0:
                r["first_wall"], r["first_rss"] = p.end, p.maxrss_kib / 1024
            else:
                r["wall"].append(p.end)
                r["event"].append(got[0])
                r["rss"].append(p.maxrss_kib / 1024)
    loads = {name: program_loads(argv) for name, argv in tools.items()}
    return {"cmds": tools, "loads": loads, **res}


def program_loads(argv: list[str]) -> list[tuple[str, int, float]]:
    """Each BPF_PROG_LOAD of one more run under `strace -f -T -e trace=bpf`: (program name,
    instructions, seconds in the syscall, the verifier's time for the most part). Feature probes
    of a few instructions (libbpf's, bpftrace's) are summed under one name."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".strace") as f:
        run(["strace", "-f", "-T", "-qq", "-e", "trace=bpf", "-o", f.name, *argv], timeout=60)
        loads, probes = [], [0, 0.0]
        for line in f.read().splitlines():
            if "BPF_PROG_LOAD" not in line:
                continue
            insns = re.search(r"insn_cnt=(\d+)", line)
            name = re.search(r'prog_name="([^"]*)"', line)
            took = re.search(r"<([\d.]+)>\s*$", line)
            if not (insns and took):
                continue
            n, t = int(insns.group(1)), float(took.group(1))
            if n <= 16:
                probes[0] += 1
                probes[1] += t
            else:
                loads.append((name.group(1) if name else "?", n, t))
        if probes[0]:
            loads.append((f"{probes[0]} feature probes", 0, probes[1]))
        return loads


# ---------------------------------------------------------------------------------------------
# B. Per-hit cost

SITES = [
    # key, function, calls per run, label, expected uscope -v placement (moved site / no-move)
    ("emulated", "bench_emulated", 500_000, "emulated first insn (`push %rbp`)"),
    ("stepped", "bench_stepped", 20_000, "single-stepped, not movable (`sub $8,%rsp`)"),
    ("endbr", "bench_endbr", 50_000, "`endbr64; push %rbp` (uscope moves to +4)"),
]
CONFIGS = [
    ("none", "no probe"),
    ("bt_empty", "bpftrace `{}` (bare trap)"),
    ("bt_count", "bpftrace `{ @c = count(); }`"),
    ("bt_filter", "bpftrace, false predicate `/arg0 == 12345678/`"),
    ("us_count", "uscope count"),
    ("us_trace", "uscope trace, false predicate"),
    ("us_count_nomove", "uscope count --no-move"),
]
# What `uscope -v` must say about the site, per function and whether --no-move is given.
PLACEMENT = {
    ("bench_emulated", False): r"emulated \(push rbp\): first instruction emulated",
    ("bench_stepped", False): r"single-stepped \(sub rsp, 8\): kept at \+0x0",
    ("bench_endbr", False): r"emulated \(push rbp\): moved from \+0x0 \(endbr64, single-stepped\) to \+0x4",
    ("bench_endbr", True): r"single-stepped \(endbr64\)",
}


def per_hit_cmd(a, site: str, func: str, n: int, config: str, verbose: bool = False) -> list[str]:
    """`verbose`: uscope's -v, which shows where each probe sits (checked in the warm-up round) and
    turns the kernel's BPF stats on, which time every BPF run: never in a measured round."""
    target = f"{shlex.quote(str(a.target))} {site} {n}"
    v = ["-v"] if verbose else []
    if config == "none":
        return [str(a.target), site, str(n)]
    if config == "bt_empty":
        return [a.bpftrace, "-c", target, "-e", f"uprobe:{a.target}:{func} {{}}"]
    if config == "bt_count":
        return [a.bpftrace, "-c", target, "-e", f"uprobe:{a.target}:{func} {{ @c = count(); }}"]
    if config == "bt_filter":
        return [a.bpftrace, "-c", target, "-e",
                f'uprobe:{a.target}:{func} /arg0 == 12345678/ {{ printf("hit\\n"); }}']
    if config == "us_count":
        return [str(a.uscope), "count", *v, "--json", "-c", target, func]
    if config == "us_count_nomove":
        return [str(a.uscope), "count", *v, "--no-move", "--json", "-c", target, func]
    if config == "us_trace":
        return [str(a.uscope), "trace", *v, "-c", target, f"p::{func} (arg1 == 12345678)"]
    raise AssertionError(config)


def verify_per_hit(p: Proc, func: str, n: int, config: str, verbose: bool) -> None:
    out, err = p.text("out"), p.text("err")
    if config == "bt_count":
        m = re.search(r"^@c: (\d+)$", out, re.M)
        check(m is not None and int(m.group(1)) == n, f"bpftrace counted {m and m.group(1)} hits, not {n}", p)
    if config == "bt_filter":
        check(re.search(r"^hit$", out, re.M) is None, "bpftrace's predicate passed", p)
    if config.startswith("us_") and verbose:
        pattern = PLACEMENT[(func, config == "us_count_nomove")]
        check(re.search(rf"^site {func}\s.*{pattern}", err, re.M) is not None,
              f"uscope -v does not show the expected site ({pattern})", p)
    if config.startswith("us_count"):
        counts = {j["function"]: j["count"] for j in map(json.loads, re.findall(r"^\{.*\}$", out, re.M))}
        check(counts.get(func) == n, f"uscope counted {counts.get(func)} hits, not {n}", p)
    if config == "us_trace":
        m = re.search(r"(\d+) events printed, (\d+) lost.*?, (\d+) filtered out", err)
        check(m is not None and m.group(1) == "0" and int(m.group(3)) == n,
              f"uscope trace should filter out all {n} hits", p)


def bench_per_hit(a, runs: int) -> dict:
    res: dict = {}
    jobs = [(s, f, n, c) for s, f, n, _ in SITES for c, _ in CONFIGS
            if c != "us_count_nomove" or s == "endbr"]
    # Rounds over all configurations, so slow drift of the VM spreads over all of them alike.
    for rnd in range(runs + 1):
        log(f"  per-hit round {rnd}/{runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
        for site, func, n, config in jobs:
            p = run(per_hit_cmd(a, site, func, n, config, verbose=rnd == 0), timeout=120)
            verify_per_hit(p, func, n, config, verbose=rnd == 0)
            if rnd > 0:
                res.setdefault((site, config), []).append(ns_per_call(p))
    return res


# B'. Per-hit cost of a string read: sleepable against non-sleepable programs

# `uscope trace` with an always-false string predicate: the string read is the bytes at the probe's
# rsp (the return address, a short string on a mapped page), so it succeeds on both paths.
STR_CONFIGS = [
    ("none", "no probe"),
    ("us_trace", "uscope trace, false integer predicate (non-sleepable)"),
    ("us_str_plain", "uscope trace, false string predicate, `USCOPE_NO_SLEEPABLE=1` (non-sleepable)"),
    ("us_str_sleep", "uscope trace, false string predicate (sleepable)"),
]


def per_hit_str_cmd(a, site: str, func: str, n: int, config: str) -> list[str]:
    if config in ("none", "us_trace"):
        return per_hit_cmd(a, site, func, n, config)
    target = f"{shlex.quote(str(a.target))} {site} {n}"
    argv = [str(a.uscope), "trace", "-v", "-c", target, f'p::{func} (str(ctx->sp) == "never")']
    return (["env", "USCOPE_NO_SLEEPABLE=1"] if config == "us_str_plain" else []) + argv


def bench_per_hit_strings(a, runs: int) -> dict:
    res: dict = {}
    jobs = [(s, f, n, c) for s, f, n, _ in SITES if s != "endbr" for c, _ in STR_CONFIGS]
    for rnd in range(runs + 1):
        log(f"  string per-hit round {rnd}/{runs}{' (warm-up, discarded)' if rnd == 0 else ''}")
        for site, func, n, config in jobs:
            p = run(per_hit_str_cmd(a, site, func, n, config), timeout=120)
            if config.startswith("us_"):
                verify_per_hit(p, func, n, "us_trace")
            if config.startswith("us_str"):
                m = re.search(r"(\d+) with unreadable memory", p.text("err"))
                check(m is None, "the string predicate's read failed", p)
            if rnd > 0:
                res.setdefault((site, config), []).append(ns_per_call(p))
    return res


def report_per_hit_strings(a, ps: dict) -> list[str]:
    L = ["### B'. Per-hit cost of a string read: sleepable against non-sleepable program "
         "(ns per call, measured by the target)", "",
         "| site | configuration | ns/call | min–max | − no probe |", "|---|---|---:|---:|---:|"]
    for site, func, n, label in SITES:
        if (site, "none") not in ps:
            continue
        base = med(ps[(site, "none")])
        for i, (config, clabel) in enumerate(STR_CONFIGS):
            xs = ps[(site, config)]
            L.append(f"| {label if i == 0 else ''} | {clabel} | {med(xs):,.1f} | {spread(xs, ',.1f')} | "
                     f"{med(xs) - base:+,.1f} |")
    L.append("")
    for site, *_ in SITES:
        if (site, "none") not in ps:
            continue
        plain, sleep = med(ps[(site, "us_str_plain")]), med(ps[(site, "us_str_sleep")])
        L.append(f"- {site}: a sleepable run costs {sleep - plain:+,.1f} ns per hit over the non-sleepable one "
                 f"({(sleep - plain) / plain * 100:+.1f}%)")
    L.append("")
    L.append("```")
    for c in ["us_str_plain", "us_str_sleep"]:
        L.append(shown(a, per_hit_str_cmd(a, "emulated", "bench_emulated", SITES[0][2], c)))
    L.append("```")
    L.append("")
    return L


# ---------------------------------------------------------------------------------------------
# C. count over all of libc

EXACT = ["malloc", "free", "strtol", "rand", "labs", "getpid", "clock_gettime"]


def libc_aliases(a) -> tuple[dict[str, int], dict[int, set[str]]]:
    p = run([str(a.uscope), "list", "--json", LIBC], timeout=60)
    addr_of, names_at = {}, {}
    for line in p.text("out").splitlines():
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        if j.get("kind") != "function":
            continue
        addr_of.setdefault(j["name"], j["address"])
        names_at.setdefault(j["address"], set()).add(j["name"])
    return addr_of, names_at


def target_run(t: Proc, seconds: float, since: int) -> tuple[dict[str, int], float, int]:
    t.send(f"run {seconds}\n")
    got = t.wait_line("out", r"^done ([0-9.]+)$", timeout=seconds + 60, start=since)
    if got is None:
        raise BenchError(f"the libc target did not finish its run\n{t.describe()}")
    _, m, idx = got
    counts = {}
    for _, line in t.lines["out"][since:idx]:
        c = re.match(r"^count (\S+) (\d+)$", line)
        if c:
            counts[c.group(1)] = int(c.group(2))
    return counts, float(m.group(1)), idx + 1


def bench_libc(a, runs: int, run_seconds: float, with_bpftrace: bool) -> dict:
    addr_of, names_at = libc_aliases(a)
    t = Proc([str(a.target), "libc"], stdin_pipe=True)
    res: dict = {"uscope": [], "bpftrace": None}
    try:
        ready = t.wait_line("out", r"^ready (\d+)$", timeout=10)
        if ready is None:
            raise BenchError(f"the libc target did not start\n{t.describe()}")
        pos = ready[2] + 1
        counts, took, pos = target_run(t, 1.0, pos)
        res["untraced_iter_per_s"] = counts["malloc"] / took
        res["calls_per_iter"] = sum(counts.values()) / counts["malloc"]

        duration = run_seconds + 2
        # Where uscope puts each probe, from -v (a short run of its own: -v's 3674 lines would add
        # a few ms to the measured attach). One line per site:
        # "site NAME entry OBJECT @ 0xADDR CLASS (insn): why".
        v = run([str(a.uscope), "count", "-v", "-p", str(t.pid), "-d", "0.1", "c:*"], timeout=60)
        site_list = [(m.group(1), m.group(2), "moved from" in (m.group(3) or "")) for m in re.finditer(
            r"^site (\S+)\s+entry\s+\S+ @ 0x[0-9a-f]+\s+(emulated|single-stepped) \(.*?\)(?:: (.*))?$",
            v.text("err"), re.M)]
        sites = {name: (cls, moved) for name, cls, moved in site_list}
        for rnd in range(runs):
            log(f"  libc round {rnd + 1}/{runs}")
            cmd = [str(a.uscope), "count", "--json", "-p", str(t.pid), "-d", f"{duration:g}", "c:*"]
            u = Proc(cmd)
            att = u.wait_line("err", r"counting (\d+) sites(?:, (\d+) unprobeable skipped)? "
                                     r"\(attached in ([0-9.]+) ms through (\d+) uprobe_multi", timeout=60)
            if att is None:
                u.kill()
                u.wait(30)
                raise BenchError(f"uscope did not report its attach\n{u.describe()}")
            own, took, pos = target_run(t, run_seconds, pos)
            if not u.wait(duration + 60):
                u.kill()
                u.wait(30)
                raise BenchError(f"uscope count did not stop after -d {duration}\n{u.describe()}")
            check(u.rc == 0, "uscope count failed", u)
            if u.end < att[0] + took:
                raise BenchError(f"uscope stopped before the target's run ended\n{u.describe()}")
            rows = [json.loads(l) for l in re.findall(r"^\{.*\}$", u.text("out"), re.M)]
            if int(att[1].group(1)) != len(site_list):
                raise BenchError(f"uscope -v planned {len(site_list)} sites, this run {att[1].group(1)}\n"
                                 f"{u.describe()}")
            by_addr: dict[int, int] = {}
            for r in rows:
                addr = addr_of.get(r["function"])
                if addr is not None:
                    by_addr[addr] = by_addr.get(addr, 0) + r["count"]
            exact = {}
            for f in EXACT:
                seen = by_addr.get(addr_of[f], 0)
                shown = sorted(n for n in names_at[addr_of[f]] if n in {r["function"] for r in rows})
                site = sites.get(shown[0]) if shown else None
                how = "-" if site is None else site[0] + (", moved" if site[1] else "")
                exact[f] = (own[f], seen, shown[0] if shown else "-", how)
            m = att[1]
            res["cmd"] = [x if x != str(t.pid) else "PID" for x in cmd]
            res["uscope"].append({
                "sites": int(m.group(1)), "skipped": int(m.group(2) or 0),
                "attach_ms": float(m.group(3)), "links": int(m.group(4)),
                "ready_s": att[0], "wall_s": u.end, "rss_mib": u.maxrss_kib / 1024,
                "events": sum(r["count"] for r in rows), "run_s": took,
                "traced_iter_per_s": own["malloc"] / took, "exact": exact,
                "functions_seen": len(rows),
                "emulated": sum(1 for _, c, _ in site_list if c == "emulated"),
                "stepped": sum(1 for _, c, _ in site_list if c == "single-stepped"),
                "moved": sum(1 for _, _, mv in site_list if mv),
            })

        if with_bpftrace:
            log("  bpftrace over all of libc (slow: up to ~3 min including its teardown)")
            res["bpftrace"] = bpftrace_libc(a, t)
        t.send("quit\n")
        if not t.wait(10):
            raise BenchError(f"the libc target did not quit\n{t.describe()}")
    finally:
        if t.end is None:
            t.kill()
            t.wait(30)
    return res


def bpftrace_libc(a, t: Proc) -> dict:
    prog = f'uprobe:{LIBC}:* {{ @[func] = count(); }} BEGIN {{ printf("ready\\n"); }}'
    # bpftrace refuses more than 512 probes unless told otherwise.
    env = dict(os.environ, BPFTRACE_MAX_PROBES="100000")
    cmd = [a.bpftrace, "-p", str(t.pid), "-e", prog]
    b = Proc(cmd, env=env)
    out = {"cmd": cmd, "env": "BPFTRACE_MAX_PROBES=100000", "pid": t.pid}
    limit = a.bpftrace_limit
    deadline = time.monotonic() + limit
    result = None
    while time.monotonic() < deadline and result is None:
        ready = b.wait_line("out", r"^ready$", timeout=0.2)
        if ready:
            result = ("ready", ready[0], None)
            break
        err = b.wait_line("err", r"ERROR: Error attaching probe: (\S+)", timeout=0.01)
        if err:
            result = ("error", err[0], err[1].group(1))
            break
        if b.end is not None:
            result = ("exited", b.end, None)
    m = b.wait_line("err", r"Attaching (\d+) probes", timeout=0.01) or \
        b.wait_line("out", r"Attaching (\d+) probes", timeout=0.01)
    out["probes"] = int(m[1].group(1)) if m else None
    if result is None:
        out["outcome"] = f"not attached after {limit:.0f} s"
        out["attach_s"] = None
        b.kill(signal.SIGINT)
    else:
        out["outcome"], out["attach_s"], out["failed_probe"] = result
        if result[0] == "ready":
            b.kill(signal.SIGINT)  # attached: nothing more is measured here, let it detach
    t_stop = time.monotonic()
    if not b.wait(a.bpftrace_teardown):
        b.kill(signal.SIGKILL)
        if not b.wait(300):
            raise BenchError(f"bpftrace did not exit even after SIGKILL\n{b.describe()}")
        out["teardown"] = f"> {a.bpftrace_teardown:.0f} s, then SIGKILL"
    out["exit_s"] = b.end
    out["after_stop_s"] = time.monotonic() - t_stop
    out["rc"] = b.rc
    out["rss_mib"] = b.maxrss_kib / 1024
    out["detached"] = len(re.findall(r"failed to detach probe", b.text("err")))
    if result is not None and result[0] == "exited" and b.rc == 0:
        raise BenchError(f"bpftrace exited without attaching or failing\n{b.describe()}")
    return out


# ---------------------------------------------------------------------------------------------
# D. Event storm: one printing probe on a function called in a tight loop

STORM_FUNC = "bench_emulated"
PYTHON = "/usr/bin/python3.11"
# The slow pipe's reader: passes every line that is not an event through (bpftrace's "Lost N
# events", uscope's JSON summary), sleeping PAUSE s after every EVERY lines, and ends with a count.
SLOW_READER = r"""
import re, sys, time
event = re.compile(sys.argv[1].encode())
every, pause = int(sys.argv[2]), float(sys.argv[3])
n = events = 0
start = None
for line in sys.stdin.buffer:
    if start is None:
        start = time.monotonic()
    n += 1
    if event.match(line):
        events += 1
    else:
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
    if n % every == 0:
        time.sleep(pause)
took = time.monotonic() - start if start else 0
print(f"reader: events {events} lines {n} seconds {took:.3f}", flush=True)
"""
EVENT_LINE = {"uscope": r'^\{"kind":"event"', "bpftrace": r"^-?\d+\n$"}


def split_events(path: str, event: str) -> tuple[int, str]:
    """The number of event lines in the file, and its other lines. Read line by line: run.py must
    stay small, as Linux carries a parent's peak RSS across fork and exec into its children's
    ru_maxrss (a 100 MB read_text() here once showed every tool at 225 MiB)."""
    rx, n, other = re.compile(event.encode()), 0, []
    with open(path, "rb") as f:
        for line in f:
            if rx.match(line):
                n += 1
            else:
                other.append(line.decode(errors="replace"))
    return n, "".join(other)


def storm_tool(a, tool: str, pid: int) -> list[str]:
    if tool == "count":
        return [str(a.uscope), "count", "--json", "-p", str(pid), STORM_FUNC]
    if tool == "uscope":
        return [str(a.uscope), "trace", "-v", "--json", "-p", str(pid), f'p::{STORM_FUNC} "%d", arg1']
    if tool == "bpftrace":
        # BEGIN fires once the uprobe is attached: the signal to let the target run.
        return [a.bpftrace, "-p", str(pid), "-e",
                f'uprobe:{a.target}:{STORM_FUNC} {{ printf("%d\\n", arg0); }} BEGIN {{ printf("ready\\n"); }}']
    raise AssertionError(tool)


def wait_ready(tool: str, p: Proc, out_lines, timeout: float = 60) -> None:
    """Until the tool has attached: uscope says so on stderr, bpftrace's BEGIN prints "ready" into
    its output (read through out_lines(), a function returning what arrived so far)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tool == "uscope" and p.wait_line("err", r"sites attached through", timeout=0.05):
            return
        if tool == "count" and p.wait_line("err", r"counting \d+ sites", timeout=0.05):
            return
        if tool == "bpftrace":
            if re.search(r"^ready$", out_lines(), re.M):
                return
            time.sleep(0.05)
        if p.end is not None:
            break
    raise BenchError(f"{tool} did not attach\n{p.describe()}")


def storm_once(a, tool: str, sink: str, n: int) -> dict:
    """The target makes n calls once `tool` (none, count, uscope, bpftrace) has attached; the
    tool's output goes to a file or to the slow reader."""
    t = Proc([str(a.target), "emulated", str(n), "--wait"], stdin_pipe=True)
    res: dict = {}
    procs = [t]
    try:
        if tool == "none":
            go = time.monotonic()
            t.send("g")
        else:
            if sink == "file":
                f = tempfile.NamedTemporaryFile(prefix="uscope-storm-", dir=a.workdir, delete=False)
                res["path"] = f.name
                p = Proc(storm_tool(a, tool, t.pid), stdout=f.fileno(), sample_hwm=True)
                f.close()
                out_lines = lambda: Path(res["path"]).read_bytes()[:4096].decode(errors="replace")
            else:
                r, w = os.pipe()
                rd = Proc([PYTHON, "-c", SLOW_READER, EVENT_LINE[tool], str(a.slow_every), str(a.slow_pause)],
                          stdin=r)
                os.close(r)
                p = Proc(storm_tool(a, tool, t.pid), stdout=w, sample_hwm=True)
                os.close(w)
                procs.append(rd)
                out_lines = lambda: rd.text("out")
            procs.append(p)
            wait_ready(tool, p, out_lines)
            go = time.monotonic()
            t.send("g")
        if not t.wait(600):
            raise BenchError(f"the storm target did not finish\n{t.describe()}")
        check(t.rc == 0, "the storm target failed", t)
        res.update(ns=ns_per_call(t), cpu_ns=t.cpu_s / n * 1e9, target_wall_s=t.t0 + t.end - go)
        if tool == "none":
            return res
        if not p.wait(300):
            raise BenchError(f"{tool} did not exit after its target\n{p.describe()}")
        check(p.rc == 0, f"{tool} failed", p)
        res.update(tool_wall_s=p.t0 + p.end - go, rss_mib=p.hwm_kib / 1024, tool_cpu_s=p.cpu_s)
        if sink == "file":
            res["delivered"], text = split_events(res["path"], EVENT_LINE.get(tool, "^$"))
        if tool == "count":
            counts = {j["function"]: j["count"] for j in map(json.loads, re.findall(r"^\{.*\}$", text, re.M))}
            check(counts.get(STORM_FUNC) == n, f"uscope counted {counts.get(STORM_FUNC)} hits, not {n}", p)
            return res
        if sink != "file":
            if not rd.wait(300):
                raise BenchError(f"the slow reader did not finish\n{rd.describe()}")
            text = rd.text("out")
            m = re.search(r"^reader: events (\d+) lines (\d+) seconds ([0-9.]+)$", text, re.M)
            check(m is not None, "the slow reader printed no count", rd)
            res["delivered"] = int(m.group(1))
            res["reader_lines_per_s"] = int(m.group(2)) / max(float(m.group(3)), 1e-9)
        if tool == "uscope":
            summ = [json.loads(l) for l in re.findall(r'^\{"events".*"kind":"summary".*\}$', text, re.M)]
            check(len(summ) == 1, "uscope wrote no JSON summary to its output", p)
            s = summ[0]
            res.update(lost=s["lost"], output_dropped=s["output_dropped"], reported=s["events"])
            check(s["events"] == res["delivered"], f"uscope's summary says {s['events']} events, "
                  f"{res['delivered']} are in the output", p)
            check(s["events"] + s["lost"] + s["output_dropped"] == n,
                  f"uscope's events + lost + output_dropped != {n} calls: {s}", p)
        else:
            lost = [int(x) for x in re.findall(r"Lost (\d+) events", text + p.text("err"))]
            res.update(lost=sum(lost), output_dropped=0)
            check(res["delivered"] + res["lost"] <= n, f"bpftrace delivered + lost > {n}", p)
        return res
    finally:
        for q in procs:
            if q.end is None:
                q.kill()
                q.wait(30)
        if "path" in res:
            os.unlink(res["path"])


def storm_sigterm(a, tool: str, bound: float) -> dict:
    """The tool's stdout is a pipe nobody reads (after its first line, for bpftrace's "ready");
    SIGTERM 1 s into the storm; time until the tool exits, SIGKILL after `bound` s."""
    t = Proc([str(a.target), "emulated", "100000000", "--wait"], stdin_pipe=True)
    r, w = os.pipe()
    p = Proc(storm_tool(a, tool, t.pid), stdout=w, sample_hwm=True)
    os.close(w)
    seen = b""
    try:
        if tool == "bpftrace":
            while b"ready\n" not in seen:
                chunk = os.read(r, 64)
                if not chunk:
                    raise BenchError(f"bpftrace did not attach\n{p.describe()}")
                seen += chunk
        else:
            wait_ready(tool, p, lambda: "")
        t.send("g")
        time.sleep(1.0)  # into the storm; what is measured starts at the signal
        check(p.end is None, f"{tool} exited during the storm", p)
        sent = time.monotonic()
        os.kill(p.pid, signal.SIGTERM)
        res = {"bound": bound}
        if p.wait(bound):
            res.update(exit_s=p.t0 + p.end - sent, rc=p.rc, killed=False)
        else:
            p.kill(signal.SIGKILL)
            if not p.wait(120):
                raise BenchError(f"{tool} did not exit even after SIGKILL\n{p.describe()}")
            res.update(exit_s=None, rc=p.rc, killed=True, after_kill_s=p.t0 + p.end - sent - bound)
        # Untraced again, the target's remaining calls take well under a second.
        res["target_ok"] = t.wait(60) and t.rc == 0 and re.search(r"^ns_per_call=", t.text("out"), re.M) is not None
        res["rss_mib"] = p.hwm_kib / 1024
        res["summary"] = next((l for l in p.text("err").splitlines() if "events printed" in l), "")
        return res
    finally:
        os.close(r)
        for q in (p, t):
            if q.end is None:
                q.kill()
                q.wait(30)


def bench_storm(a) -> dict:
    n = a.storm_calls
    res: dict = {"n": n, "file": {}, "slow": {}, "sigterm": {}, "load_start": loadavg()}
    jobs = [("none", "file"), ("count", "file"), ("uscope", "file"), ("bpftrace", "file")]
    for rnd in range(a.storm_runs):
        log(f"  storm round {rnd + 1}/{a.storm_runs} (to a file)")
        for tool, sink in jobs:
            res["file"].setdefault(tool, []).append(storm_once(a, tool, sink, n))
    for rnd in range(a.slow_runs):
        log(f"  storm round {rnd + 1}/{a.slow_runs} (to a slow pipe)")
        for tool in ["uscope", "bpftrace"]:
            res["slow"].setdefault(tool, []).append(storm_once(a, tool, "slow", n))
    for rnd in range(a.sigterm_runs):
        for tool in ["uscope", "bpftrace"]:
            log(f"  SIGTERM during a storm: {tool} ({rnd + 1}/{a.sigterm_runs})")
            res["sigterm"].setdefault(tool, []).append(storm_sigterm(a, tool, a.sigterm_bound))
    res["load_end"] = loadavg()
    res["cmds"] = {k: storm_tool(a, k, 0) for k in ["count", "uscope", "bpftrace"]}
    return res


def storm_report(a, sm: dict) -> list[str]:
    n = sm["n"]
    F = sm["file"]
    L = ["### D. Event storm (one `\"%d\", arg1` probe on a function called in a tight loop)", ""]
    L.append(f"Target: `bench_target emulated {n:,}` (the probe on the emulated `push %rbp` of "
             f"`{STORM_FUNC}`), started with `--wait` and let run once the tool has attached (`-p PID`). "
             f"Medians of {a.storm_runs} rounds over all configurations (to a file) and {a.slow_runs} (slow pipe), "
             f"min–max in brackets, none discarded. Target cost: wall = the target's own clock around its "
             f"loop per call; CPU = the target's user+system time from wait4 per call (robust to load: the "
             f"uprobe's kernel work is charged to the target). Load average {sm['load_start']} at the start "
             f"of this part, {sm['load_end']} at its end.")
    L.append("")
    base_w, base_c = med([r["ns"] for r in F["none"]]), med([r["cpu_ns"] for r in F["none"]])
    cnt_w, cnt_c = med([r["ns"] for r in F["count"]]), med([r["cpu_ns"] for r in F["count"]])

    def col(rs, key, fmt):
        xs = [r[key] for r in rs]
        return f"{format(med(xs), fmt)} [{spread(xs, fmt)}]"

    L.append("| to a file | target wall ns/call | target CPU ns/call | wall over count, ns/event | CPU over count, ns/event "
             "| events delivered | lost (ring) | not written (output) | events/s delivered (go → tool exit) | tool peak RSS | tool CPU |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    L.insert(-2, "Peak RSS in this part is the tool's own VmHWM, sampled every 10 ms from /proc/PID/status.")
    L.insert(-2, "")
    labels = {"none": "no probe", "count": "uscope count", "uscope": "uscope trace --json",
              "bpftrace": "bpftrace 0.17 printf"}
    for tool in ["none", "count", "uscope", "bpftrace"]:
        rs = F[tool]
        w, c = med([r["ns"] for r in rs]), med([r["cpu_ns"] for r in rs])
        over = f"{w - cnt_w:+,.0f} | {c - cnt_c:+,.0f}" if tool in ("uscope", "bpftrace") else "— | —"
        if tool in ("uscope", "bpftrace"):
            ev = f"{col(rs, 'delivered', ',.0f')} | {col(rs, 'lost', ',.0f')} | {col(rs, 'output_dropped', ',.0f')} | " \
                 f"{med([r['delivered'] / r['tool_wall_s'] for r in rs]) / 1e3:,.0f} k/s"
        else:
            ev = "— | — | — | —"
        tail = f"{col(rs, 'rss_mib', '.1f')} MiB | {med([r['tool_cpu_s'] for r in rs]):.2f} s" if tool != "none" else "— | —"
        L.append(f"| {labels[tool]} | {col(rs, 'ns', ',.0f')} | {col(rs, 'cpu_ns', ',.0f')} | {over} | {ev} | {tail} |")
    L.append("")
    uw = med([r["ns"] for r in F["uscope"]]) - cnt_w
    uc = med([r["cpu_ns"] for r in F["uscope"]]) - cnt_c
    bw = med([r["ns"] for r in F["bpftrace"]]) - cnt_w
    bc = med([r["cpu_ns"] for r in F["bpftrace"]]) - cnt_c
    ulost = max(r["lost"] + r["output_dropped"] for r in F["uscope"])
    L.append(f"- uscope, per event over `count` at the same site (goal ≤ ~100 ns): wall {uw:+,.0f} ns, "
             f"CPU {uc:+,.0f} ns: {verdict(min(uw, uc) <= 100)} (by {'both' if max(uw, uc) <= 100 else 'the lower of the two'}); "
             f"bpftrace {bw:+,.0f} ns wall, {bc:+,.0f} ns CPU "
             f"(bpftrace / uscope over count: {bw / uw if uw > 0 else float('inf'):.1f}x wall, "
             f"{bc / uc if uc > 0 else float('inf'):.1f}x CPU)")
    L.append(f"- uscope loses nothing to a file (goal): {verdict(ulost == 0)} (at most {ulost:,} lost or not written "
             f"in a round; bpftrace at most {max(r['lost'] for r in F['bpftrace']):,})")
    L.append("")
    S = sm["slow"]
    L.append(f"To a slow pipe (a python3.11 reader sleeping {a.slow_pause * 1000:g} ms every {a.slow_every} lines):")
    L.append("")
    L.append("| slow pipe | target wall ns/call | target CPU ns/call | events delivered | lost (ring) | not written (output) | reader lines/s | tool peak RSS | tool exit after go |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tool in ["uscope", "bpftrace"]:
        rs = S[tool]
        L.append(f"| {labels[tool]} | {col(rs, 'ns', ',.0f')} | {col(rs, 'cpu_ns', ',.0f')} | {col(rs, 'delivered', ',.0f')} | "
                 f"{col(rs, 'lost', ',.0f')} | {col(rs, 'output_dropped', ',.0f')} | "
                 f"{med([r['reader_lines_per_s'] for r in rs]) / 1e3:,.0f} k | {col(rs, 'rss_mib', '.1f')} MiB | "
                 f"{col(rs, 'tool_wall_s', '.1f')} s |")
    L.append("")
    L.append(f"Every uscope round checks events + lost + not written = {n:,} calls and that the events in the output "
             f"equal the summary's count. uscope's peak RSS to the slow pipe "
             f"{med([r['rss_mib'] for r in S['uscope']]):.1f} MiB against {med([r['rss_mib'] for r in F['uscope']]):.1f} MiB "
             f"to a file: bounded (its output buffer is fixed; events that do not fit wait in the ring or are counted as lost).")
    L.append("")
    L.append(f"SIGTERM 1 s into a storm (`bench_target emulated 100000000`, the tool's stdout a pipe nobody reads), "
             f"{a.sigterm_runs} runs per tool, each shown:")
    L.append("")
    L.append("| tool | SIGTERM → exit, each run | exit status | peak RSS | target then ran to its end | uscope's summary on stderr (last run) |")
    L.append("|---|---:|---:|---:|---|---|")
    for tool in ["uscope", "bpftrace"]:
        rs = sm["sigterm"][tool]
        took = ", ".join(f"{r['exit_s'] * 1000:,.0f} ms" if not r["killed"] else
                         f"**> {r['bound']:g} s** (SIGKILL)" for r in rs)
        L.append(f"| {labels[tool]} | {took} | {', '.join(str(r['rc']) for r in rs)} | "
                 f"{max(r['rss_mib'] for r in rs):.1f} MiB | {'yes' if all(r['target_ok'] for r in rs) else '**no**'} | "
                 f"{rs[-1]['summary'].replace('|', '/') or '—'} |")
    L.append("")
    L.append("```")
    for k in ["count", "uscope", "bpftrace"]:
        L.append(shown(a, sm["cmds"][k]).replace(" 0 ", " PID ", 1))
    L.append(f"{PYTHON} -c SLOW_READER EVENT_REGEX {a.slow_every} {a.slow_pause:g}   # bench/run.py, the slow pipe")
    L.append("```")
    L.append("")
    return L


# ---------------------------------------------------------------------------------------------
# Report


def machine(a) -> dict:
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) / 1024 / 1024
    debian = Path("/etc/debian_version").read_text().strip() if Path("/etc/debian_version").exists() else "?"
    bt = subprocess.run([a.bpftrace, "--version"], capture_output=True, text=True).stdout.strip()
    us = subprocess.run([str(a.uscope), "--version"], capture_output=True, text=True).stdout.strip()
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        rev += " + uncommitted changes"
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "kernel": platform.release(), "cpus": os.cpu_count(), "cpu": cpu, "mem_gib": mem,
        "debian": debian, "bpftrace": bt, "uscope": us, "git": rev, "load": loadavg(),
    }


def own_rss_mib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def shown(a, argv: list[str]) -> str:
    """A command as a person would type it: build/uscope, not the snapshot run.py measured."""
    return shlex.join([a.uscope_shown if x == str(a.uscope) else x for x in argv])


def verdict(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def report(a, mach: dict, st: dict | None, ph: dict | None, lc: dict | None, sm: dict | None,
           elapsed: float, ps: dict | None = None) -> str:
    L: list[str] = []
    L.append(f"Run {mach['date']} on Linux {mach['kernel']}, {mach['cpus']} CPUs ({mach['cpu']}), "
             f"{mach['mem_gib']:.1f} GiB, Debian {mach['debian']}; {mach['uscope']} (git {mach['git']}), "
             f"{mach['bpftrace']}. run.py's own peak RSS {own_rss_mib():.1f} MiB (a floor for every peak RSS "
             f"below: Linux carries a parent's peak RSS into its children's ru_maxrss across fork and exec). "
             f"Load average (1/5/15 min) {mach['load']} at the start, {loadavg()} at the "
             f"end. Medians after one discarded warm-up run (min–max in brackets): {a.runs} runs (A), "
             f"{a.per_hit_runs} rounds over all configurations (B); {a.libc_runs} runs, none discarded (C). "
             f"The whole run took {elapsed:.0f} s.")
    L.append("")
    L.append("Command: `scripts/build.sh && python3 bench/run.py --markdown docs/BENCHMARKS.md`")
    L.append("")

    if st:
        u, b = st["uscope"], st["bpftrace"]
        uw, bw, ur, br = med(u["wall"]), med(b["wall"]), med(u["rss"]), med(b["rss"])
        L.append("### A. Start-up to first event (one probe, `-c` session)")
        L.append("")
        ue, be = med(u["event"]), med(b["event"])
        L.append("| tool | wall time, launch to exit | launch to event line | peak RSS | first run (discarded) |")
        L.append("|---|---:|---:|---:|---:|")
        for name, r, w, e, rss in [("uscope", u, uw, ue, ur), ("bpftrace", b, bw, be, br)]:
            L.append(f"| {name} | {w * 1000:.0f} ms [{spread([x * 1000 for x in r['wall']], '.0f')}] | "
                     f"{e * 1000:.0f} ms [{spread([x * 1000 for x in r['event']], '.0f')}] | "
                     f"{rss:.1f} MiB [{spread(r['rss'], '.1f')}] | "
                     f"{r['first_wall'] * 1000:.0f} ms, {r['first_rss']:.1f} MiB |")
        L.append(f"| **bpftrace / uscope** | **{bw / uw:.1f}x** (target ≥ 10x: {verdict(bw / uw >= 10)}) | "
                 f"{be / ue:.1f}x | **{br / ur:.1f}x** (target ≥ 5x, i.e. uscope ≤ 1/5: {verdict(br / ur >= 5)}) | |")
        L.append("")
        L.append("")
        L.append("BPF_PROG_LOAD per program (one more run of each under `strace -f -T -e trace=bpf`; "
                 "the verifier's time for the most part):")
        L.append("")
        for name, loads in st["loads"].items():
            parts = [f"`{n}` {i:,} insns {t * 1000:.1f} ms" if i else f"{n} {t * 1000:.1f} ms"
                     for n, i, t in loads]
            L.append(f"- {name}: " + ", ".join(parts) +
                     f"; {sum(t for *_, t in loads) * 1000:.1f} ms in all")
        L.append("")
        L.append("```")
        for name, argv in st["cmds"].items():
            L.append(shown(a, argv))
        L.append("```")
        L.append("")

    if ph:
        L.append("### B. Per-hit cost (ns per call, measured by the target around its loop)")
        L.append("")
        L.append("| site | calls/run | configuration | ns/call | min–max | × no probe | × bpftrace `{}` |")
        L.append("|---|---:|---|---:|---:|---:|---:|")
        for site, func, n, label in SITES:
            base = med(ph[(site, "none")])
            bare = med(ph[(site, "bt_empty")])
            first = True
            for config, clabel in CONFIGS:
                xs = ph.get((site, config))
                if not xs:
                    continue
                v = med(xs)
                L.append(f"| {label if first else ''} | {n if first else ''} | {clabel} | {v:,.1f} | "
                         f"{spread(xs, ',.1f')} | {v / base:,.0f} | {v / bare:.3f} |")
                first = False
        L.append("")
        L.append("uscope against bpftrace doing the same at the same site (target: at most +5%):")
        L.append("")
        for site, config, peer, what in [
                ("emulated", "us_count", "bt_count", "count, emulated `push %rbp`"),
                ("stepped", "us_count", "bt_count", "count, single-stepped `sub $8,%rsp`"),
                ("endbr", "us_count_nomove", "bt_count", "count, `endbr64` at +0 (`--no-move`)"),
                ("emulated", "us_trace", "bt_filter", "trace with a false predicate, emulated `push %rbp`"),
                ("stepped", "us_trace", "bt_filter", "trace with a false predicate, single-stepped `sub $8,%rsp`"),
                ("emulated", "us_count", "bt_empty", "count over the bare trap (bpftrace `{}`), emulated"),
                ("stepped", "us_count", "bt_empty", "count over the bare trap (bpftrace `{}`), single-stepped")]:
            us_, bt_ = med(ph[(site, config)]), med(ph[(site, peer)])
            pct = (us_ - bt_) / bt_ * 100
            us_min, bt_min = min(ph[(site, config)]), min(ph[(site, peer)])
            pct_min = (us_min - bt_min) / bt_min * 100
            L.append(f"- {what}: median {us_:,.1f} vs {bt_:,.1f} ns = {pct:+.1f}% ({us_ - bt_:+,.1f} ns): "
                     f"{verdict(pct <= 5)}; best run {us_min:,.1f} vs {bt_min:,.1f} ns = {pct_min:+.1f}%")
        e_moved, e_stay = med(ph[("endbr", "us_count")]), med(ph[("endbr", "us_count_nomove")])
        e_bt = med(ph[("endbr", "bt_empty")])
        L.append(f"- moving the `endbr64` function's probe to the emulated `push %rbp`: {e_stay:,.1f} → "
                 f"{e_moved:,.1f} ns per hit ({e_stay / e_moved:.1f}x cheaper; {e_bt / e_moved:.1f}x cheaper than "
                 f"bpftrace `{{}}` on that function)")
        tr = [(site, med(ph[(site, "us_trace")]) - med(ph[(site, "us_count")])) for site, *_ in SITES]
        L.append("- `uscope trace` with an always-false predicate minus `uscope count` (the recipe interpreter "
                 "and filter): " + ", ".join(f"{s} {d:+,.1f} ns" for s, d in tr))
        L.append("")
        L.append("```")
        for c in ["bt_empty", "bt_count", "bt_filter", "us_count", "us_trace", "us_count_nomove"]:
            L.append(shown(a, per_hit_cmd(a, "endbr", "bench_endbr", SITES[2][2], c)))
        L.append("```")
        L.append("")

    if ps:
        L += report_per_hit_strings(a, ps)
    if lc:
        us = lc["uscope"]
        L.append(f"### C. `count` over all of libc in a running process ({len(us)} runs)")
        L.append("")
        L.append(f"Target: `bench_target libc`, a loop of malloc, memcpy, strlen, strtol, free, rand, labs, "
                 f"getpid (1 in 8) and clock_gettime (1 in 16): {lc['calls_per_iter']:.2f} libc calls per "
                 f"iteration, {lc['untraced_iter_per_s'] / 1e6:.2f} M iterations/s untraced. It runs "
                 f"{a.libc_seconds:g} s once the tracer has attached; the tracer counts everything.")
        L.append("")
        L.append("| | uscope `count -p PID -d D 'c:*'` | bpftrace `uprobe:libc:* { @[func] = count(); }` |")
        L.append("|---|---:|---:|")
        bt = lc.get("bpftrace")
        if bt:
            if bt["outcome"] == "ready":
                bt_attach = f"{bt['attach_s']:.2f} s (BEGIN fired)"
            elif bt["outcome"] == "error":
                bt_attach = (f"**fails** after {bt['attach_s']:.1f} s: `Error attaching probe: "
                             f"{bt['failed_probe']}`, exit status {bt['rc']}")
            else:
                bt_attach = f"**> {a.bpftrace_limit:.0f} s** ({bt['outcome']})"
        L.append(f"| probes | {us[0]['sites']} sites ({us[0]['skipped']} unprobeable skipped), "
                 f"{us[0]['links']} uprobe_multi link(s); {us[0]['emulated']} emulated "
                 f"({us[0]['moved']} of them moved), {us[0]['stepped']} single-stepped | "
                 f"{bt['probes'] if bt else '—'} probes (every name, aliases included) |")
        L.append(f"| attach, self-reported | {med([r['attach_ms'] for r in us]):.1f} ms "
                 f"[{spread([r['attach_ms'] for r in us], '.1f')}] | — |")
        L.append(f"| launch → attached (wall) | {med([r['ready_s'] for r in us]) * 1000:.0f} ms "
                 f"[{spread([r['ready_s'] * 1000 for r in us], '.0f')}] | {bt_attach if bt else 'not run'} |")
        if bt:
            L.append(f"| launch → exit (wall) | {med([r['wall_s'] for r in us]):.1f} s (-d {a.libc_seconds + 2:g}) | "
                     f"{bt['exit_s']:.1f} s ({bt['detached']} probes detached one by one){' — ' + bt['teardown'] if bt.get('teardown') else ''} |")
            L.append(f"| peak RSS | {med([r['rss_mib'] for r in us]):.1f} MiB | {bt['rss_mib']:.1f} MiB |")
        else:
            L.append(f"| peak RSS | {med([r['rss_mib'] for r in us]):.1f} MiB | — |")
        L.append(f"| events counted per second | {med([r['events'] / r['run_s'] for r in us]) / 1e3:,.0f} k/s "
                 f"[{spread([r['events'] / r['run_s'] / 1e3 for r in us], ',.0f')}] | — |")
        slow = [lc["untraced_iter_per_s"] / r["traced_iter_per_s"] for r in us]
        L.append(f"| target slowdown while counted | {med(slow):,.0f}x ({med([r['traced_iter_per_s'] for r in us]) / 1e3:,.1f} k "
                 f"iterations/s) | — |")
        L.append(f"| functions with a non-zero count | {med([r['functions_seen'] for r in us]):.0f} | — |")
        L.append("")
        L.append("Counts against the target's own call counts (every run):")
        L.append("")
        L.append("| function | reported as | uscope site | target's calls (last run) | uscope count (last run) | equal in all runs |")
        L.append("|---|---|---|---:|---:|---|")
        all_ok = True
        for f in EXACT:
            ok = all(r["exact"][f][0] == r["exact"][f][1] for r in us)
            all_ok &= ok
            own, seen, as_name, how = us[-1]["exact"][f]
            L.append(f"| {f} | {as_name} | {how} | {own:,} | {seen:,} | {'yes' if ok else '**NO**'} |")
        L.append("")
        L.append(f"No loss: {verdict(all_ok)}. memcpy and strlen are IFUNCs (counted under the selected "
                 f"implementation, which libc also calls internally) and are not compared.")
        L.append("")
        L.append(f"uscope: `{shown(a, lc['cmd'])}`")
        if bt:
            L.append("")
            L.append(f"bpftrace: `{bt['env']} {shlex.join(bt['cmd']).replace(str(bt['pid']), 'PID')}`")
        L.append("")
    if sm:
        L.extend(storm_report(a, sm))
    return "\n".join(L)


def write_markdown(path: Path, body: str) -> None:
    block = f"{BEGIN_MARK}\n{body}\n{END_MARK}"
    if path.exists():
        text = path.read_text()
        if BEGIN_MARK in text and END_MARK in text:
            head, rest = text.split(BEGIN_MARK, 1)
            _, tail = rest.split(END_MARK, 1)
            path.write_text(head + block + tail)
            return
        path.write_text(text.rstrip("\n") + "\n\n## Latest results\n\n" + block + "\n")
        return
    path.write_text("# Benchmarks\n\n## Latest results\n\n" + block + "\n")


def snapshot_binary(src: Path, into: Path) -> Path:
    """Copy src once it is complete (executable, size unchanged for a second)."""
    for _ in range(60):
        try:
            before = src.stat()
            time.sleep(1)
            after = src.stat()
            if os.access(src, os.X_OK) and before.st_size == after.st_size and \
                    before.st_mtime_ns == after.st_mtime_ns:
                dst = into / src.name
                shutil.copy2(src, dst)
                if dst.stat().st_size == after.st_size and src.stat().st_mtime_ns == after.st_mtime_ns:
                    return dst
        except OSError:
            pass
    raise BenchError(f"{src} keeps changing (being rebuilt?); try again later")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=ROOT / "build" / "uscope")
    ap.add_argument("--target", type=Path, default=ROOT / "build" / "bench" / "bench_target")
    ap.add_argument("--bpftrace", default="/usr/bin/bpftrace")
    ap.add_argument("--runs", type=int, default=5, help="measured start-up runs per tool (default 5)")
    ap.add_argument("--per-hit-runs", type=int, default=7,
                    help="measured rounds over the per-hit configurations (default 7)")
    ap.add_argument("--libc-runs", type=int, default=3, help="uscope runs over all of libc (default 3)")
    ap.add_argument("--libc-seconds", type=float, default=3.0, help="target run while counted (default 3)")
    ap.add_argument("--bpftrace-limit", type=float, default=120.0,
                    help="give up waiting for bpftrace to attach to libc after this (default 120 s)")
    ap.add_argument("--bpftrace-teardown", type=float, default=240.0,
                    help="then wait this long for it to exit before SIGKILL (default 240 s)")
    ap.add_argument("--storm-calls", type=int, default=500_000, help="calls of the storm target (default 500000)")
    ap.add_argument("--storm-runs", type=int, default=3, help="storm rounds to a file (default 3)")
    ap.add_argument("--slow-runs", type=int, default=2, help="storm rounds to the slow pipe (default 2)")
    ap.add_argument("--slow-every", type=int, default=500, help="the slow reader sleeps after this many lines")
    ap.add_argument("--slow-pause", type=float, default=0.01, help="for this long (default 0.01 s)")
    ap.add_argument("--sigterm-runs", type=int, default=3, help="SIGTERM-during-a-storm runs per tool (default 3)")
    ap.add_argument("--sigterm-bound", type=float, default=20.0,
                    help="SIGKILL a tool that has not exited this long after SIGTERM (default 20 s)")
    ap.add_argument("--skip", action="append", default=[],
                    choices=["startup", "per-hit", "per-hit-strings", "libc", "bpftrace-libc", "storm"],
                    help="leave out a part (repeatable)")
    ap.add_argument("--markdown", type=Path, help="write the tables into this file (between markers)")
    a = ap.parse_args()

    if os.geteuid() != 0:
        print("run.py: needs root (uprobes, BPF)", file=sys.stderr)
        return 1
    for exe in [a.uscope, a.target, Path(a.bpftrace)]:
        if not os.access(exe, os.X_OK):
            print(f"run.py: {exe} missing; run scripts/build.sh first", file=sys.stderr)
            return 1
    a.target = a.target.resolve()
    # Others may rebuild build/uscope while this runs: measure one copy of it throughout.
    snapshot = Path(tempfile.mkdtemp(prefix="uscope-bench-"))
    a.workdir = snapshot  # the storm's output files
    a.uscope_shown = str(a.uscope.resolve())
    try:
        a.uscope = snapshot_binary(a.uscope.resolve(), snapshot)
    except BenchError as e:
        shutil.rmtree(snapshot, ignore_errors=True)
        print(f"run.py: FAILED: {e}", file=sys.stderr)
        return 1

    def on_signal(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    t0 = time.monotonic()
    st = ph = ps = lc = sm = None
    try:
        mach = machine(a)
        if "startup" not in a.skip:
            log("A. start-up to first event")
            st = bench_startup(a, a.runs)
        if "per-hit" not in a.skip:
            log("B. per-hit cost")
            ph = bench_per_hit(a, a.per_hit_runs)
        if "per-hit-strings" not in a.skip:
            log("B'. per-hit cost of a string read, sleepable or not")
            ps = bench_per_hit_strings(a, a.per_hit_runs)
        if "libc" not in a.skip:
            log("C. count over all of libc")
            lc = bench_libc(a, a.libc_runs, a.libc_seconds, "bpftrace-libc" not in a.skip)
        if "storm" not in a.skip:
            log("D. event storm")
            sm = bench_storm(a)
    except BenchError as e:
        print(f"run.py: FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("run.py: interrupted", file=sys.stderr)
        return 130
    finally:
        cleanup()
        shutil.rmtree(snapshot, ignore_errors=True)

    body = report(a, mach, st, ph, lc, sm, time.monotonic() - t0, ps)
    print(body)
    if a.markdown:
        write_markdown(a.markdown, body)
        log(f"wrote {a.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
