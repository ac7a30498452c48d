#!/usr/bin/python3
"""How many of `uscope profile`'s samples have a complete user stack (one that reaches the thread's
entry point: _start, main, start_thread, clone3) on two pieces of distro software, as Debian ships
them (no frame pointers): the baseline the .eh_frame unwinding issue is to raise. Needs root and
build/uscope; python3.11, redis-server and redis-benchmark from apt. Standard library only; reuses
run.py's process handling.

    python3 bench/complete_stacks.py                 # one line per target on stdout
    python3 bench/complete_stacks.py --seconds 10

  python3.11   /usr/bin/python3.11 running a CPU-bound script (recursive fib in a loop),
               `uscope profile -p PID -d S --format folded -o FILE`
  redis        /usr/bin/redis-server on a free port under `redis-benchmark -q -l` (set/get, 50
               clients), `uscope profile -p PID -d S --format folded -o FILE`

Each prints uscope's own summary line (samples, processes, losses, complete-stack share) as it is.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

PY_SCRIPT = """
import sys
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
print("ready", flush=True)
while True:
    fib(24)
"""


TARGETS = {  # how each target runs, as shown under the table
    "python3.11": "/usr/bin/python3.11 -c FIB_LOOP (bench/complete_stacks.py)",
    "redis-server": "redis-server --port PORT --save '' under redis-benchmark -q -l -t set,get -c 50",
}


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


def profile(a, pid: int, name: str) -> dict:
    out = a.workdir / f"{name}.folded"
    cmd = [str(a.uscope), "profile", "-p", str(pid), "-d", f"{a.seconds:g}", "--format", "folded",
           "-o", str(out)]
    p = R.run(cmd, timeout=a.seconds + 120)
    lines = [line.strip() for line in p.text("err").splitlines() if re.search(r"\d samples", line)]
    R.check(bool(lines), "uscope printed no summary line", p)
    summary = lines[-1]
    m = re.search(r"([\d.]+)% (?:of samples )?(?:with )?(?:a )?complete", summary) or \
        re.search(r"complete[^\d]*([\d.]+)%", summary)
    R.check(m is not None, "uscope's summary has no complete-stack share", p)
    stacks = out.read_text(errors="replace")
    return {"cmd": cmd, "summary": summary, "share": float(m.group(1)),
            "stacks": len(stacks.splitlines())}


def python_target(a) -> dict:
    t = R.Proc([a.python, "-c", PY_SCRIPT])
    try:
        R.check(t.wait_line("out", r"^ready$", 30) is not None, "python3.11 did not start", t)
        return profile(a, t.pid, "python3.11")
    finally:
        t.kill()
        t.wait(30)


def redis_target(a) -> dict:
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
        return profile(a, server.pid, "redis-server")
    finally:
        if load is not None:
            load.kill()
            load.wait(30)
        server.kill()
        server.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=R.ROOT / "build" / "uscope")
    ap.add_argument("--python", default="/usr/bin/python3.11")
    ap.add_argument("--redis-server", default="/usr/bin/redis-server")
    ap.add_argument("--redis-benchmark", default="/usr/bin/redis-benchmark")
    ap.add_argument("--redis-cli", default="/usr/bin/redis-cli")
    ap.add_argument("--seconds", type=float, default=5.0, help="profile duration (default 5)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("complete_stacks.py: needs root (perf events, BPF)", file=sys.stderr)
        return 1
    for exe in [a.uscope, Path(a.python), Path(a.redis_server), Path(a.redis_benchmark), Path(a.redis_cli)]:
        if not os.access(exe, os.X_OK):
            print(f"complete_stacks.py: {exe} missing (scripts/build.sh, scripts/install-deps.sh)",
                  file=sys.stderr)
            return 1
    a.workdir = Path(tempfile.mkdtemp(prefix="uscope-complete-"))
    shown = str(a.uscope.resolve())
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    results = {}
    try:
        a.uscope = R.snapshot_binary(a.uscope.resolve(), a.workdir)
        mach = R.machine(argparse.Namespace(bpftrace="/bin/true", uscope=a.uscope))
        for name, fn in (("python3.11", python_target), ("redis-server", redis_target)):
            R.log(f"{name}")
            results[name] = fn(a)
    except R.BenchError as e:
        print(f"complete_stacks.py: FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("complete_stacks.py: interrupted", file=sys.stderr)
        return 130
    finally:
        R.cleanup()
        shutil.rmtree(a.workdir, ignore_errors=True)
    print(f"Run {mach['date']}, {mach['uscope']} (git {mach['git']}), load average {mach['load']}.")
    print()
    print("| target | complete user stacks | distinct stacks | uscope's summary |")
    print("|---|---:|---:|---|")
    for name, r in results.items():
        print(f"| {name} | {r['share']:g}% | {r['stacks']:,} | `{r['summary']}` |")
    print()
    print("```")
    for name, r in results.items():
        cmd = [shown if x == str(a.uscope) else x for x in r["cmd"]]
        cmd = ["PID" if i > 0 and cmd[i - 1] == "-p" else x for i, x in enumerate(cmd)]
        cmd = [f"{name}.folded" if x.startswith(str(a.workdir)) else x for x in cmd]
        print(f"{' '.join(cmd)}   # {TARGETS[name]}")
    print("```")
    return 0


if __name__ == "__main__":
    sys.exit(main())
