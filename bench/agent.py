#!/usr/bin/python3
"""What `uscope agent` costs on a busy node. Needs root, build/uscope and the Go fixtures
(build/tests/fixtures/go). Standard library only; reuses run.py's process handling.

    python3 bench/agent.py                                # the table on stdout
    python3 bench/agent.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

The node: --servers gohttp_server_stripped processes, --clients of them under load by one
gohttp_client each (--requests sequential keep-alive GETs: long-lived processes, as a node's
services are), and idle programs (sleep) up to --processes in all. The agent's config selects
them all: the servers get HTTP RED (one trace program each), and the selected processes are
profiled at 19 Hz with a profile written per process every 10 s.

Measured while the clients run, once the agent has attached: its CPU time (utime+stime from
/proc/PID/stat) as a share of one core, its resident memory at the end and its peak (VmHWM), the
requests its /metrics counted against those the clients made, and every loss it counted; then
--execs times, the time from starting one more server to its first series on /metrics (the server
answers one request as soon as it listens; the agent reads the kernel's rows every 500 ms).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import subprocess
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/agent.py: begin generated -->"
END_MARK = "<!-- bench/agent.py: end generated -->"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kib(pid: int, key: str) -> int:
    m = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(m.group(1)) if m else 0


def get(url: str) -> str:
    # curl, not urllib: bench/http.py would shadow the standard library's http package.
    return subprocess.run(["curl", "-sf", "--max-time", "10", url], check=True,
                          capture_output=True, text=True).stdout


def scrape(port: int) -> str:
    return get(f"http://127.0.0.1:{port}/metrics")


def counted(text: str, pid: int | None = None) -> int:
    """Server requests on /metrics (of one process, or all)."""
    n = 0
    for line in text.splitlines():
        if line.startswith("http_server_request_duration_seconds_count{") and (
                pid is None or f'process_pid="{pid}"' in line):
            n += int(float(line.rsplit(" ", 1)[1]))
    return n


def start_server(a) -> tuple[R.Proc, str]:
    s = R.Proc([str(a.fixtures / "gohttp_server_stripped"), "0"])
    w = s.wait_line("out", r"listening on (\d+)", 30)
    R.check(w is not None, "a server did not start", s)
    return s, f"http://127.0.0.1:{w[1].group(1)}"


def bench(a) -> dict:
    servers = [start_server(a) for _ in range(a.servers)]
    idle = [R.Proc(["/bin/sleep", "3600"]) for _ in range(a.processes - a.servers - a.clients)]
    config = a.workdir / "agent.yaml"
    profiles = a.workdir / "profiles"
    profiles.mkdir()
    config.write_text(
        f"listen: 127.0.0.1:{a.port}\n"
        f"select:\n  - exe: {a.fixtures / 'gohttp_server_stripped'}\n  - exe: /usr/bin/sleep\n"
        f"  - exe: {a.fixtures / 'gohttp_client'}\n"
        f"profiles:\n  hz: 19\n  period: 10s\n  directory: {profiles}\n")
    agent = R.Proc([str(a.uscope), "agent", "-v", "--config", str(config)], sample_hwm=True)
    R.check(agent.wait_line("err", r"agent serving", 120) is not None, "the agent did not start",
            agent)

    before = counted(scrape(a.port))
    clients = [R.Proc([str(a.fixtures / "gohttp_client"), servers[k][1], str(a.requests), "/hello"])
               for k in range(a.clients)]
    cpu0, t0 = cpu_seconds(agent.pid), time.monotonic()

    def watched() -> int:  # other sleeps on the host count too
        m = re.search(r"^uscope_processes (\S+)$", scrape(a.port), re.M)
        return int(float(m[1])) if m else 0
    while watched() < a.processes:  # the clients are picked at their exec
        R.check(time.monotonic() - t0 < 30, f"the agent did not pick the {a.processes} processes",
                agent)
        time.sleep(0.1)
    picked = watched()
    for c in clients:
        R.check(c.wait(3600) and c.rc == 0, "a client failed", c)
        R.check(f"done ok={a.requests} failed=0" in c.text("out"), "requests failed", c)
    cpu1, t1 = cpu_seconds(agent.pid), time.monotonic()
    made = a.requests * a.clients
    rss = status_kib(agent.pid, "VmRSS")
    deadline = time.monotonic() + 10
    while counted(scrape(a.port)) - before < made and time.monotonic() < deadline:
        time.sleep(0.05)
    text = scrape(a.port)
    seen = counted(text) - before
    lost = {m[1]: int(float(m[2])) for m in
            re.finditer(r'^uscope_(?:events|profile_samples)_lost_total\{cause="([^"]+)"\} (\S+)$', text, re.M)
            for m in [m] if float(m[2]) > 0}

    firsts = []
    for _ in range(a.execs):
        t_start = time.monotonic()
        s, base = start_server(a)
        while True:
            get(base + "/hello")
            if counted(scrape(a.port), s.pid) > 0:
                break
            R.check(time.monotonic() - t_start < 30, "no metric for a new server in 30 s", agent)
            time.sleep(0.005)
        firsts.append(time.monotonic() - t_start)
        s.kill()
    files = len(list(profiles.iterdir()))
    agent.kill(15)
    R.check(agent.wait(60) and agent.rc == 0, "the agent did not stop cleanly", agent)
    for s, _ in servers:
        s.kill()
    for p in idle:
        p.kill()
    for _, line in agent.lines["err"]:
        if "profile period" in line:
            R.log(line.rstrip())
    return {"cpu_share": (cpu1 - cpu0) / (t1 - t0), "rss_kib": rss, "hwm_kib": agent.hwm_kib,
            "made": made, "seen": seen, "window": t1 - t0, "firsts": firsts, "lost": lost, "watched": picked,
            "profile_files": files}


def report(a, r: dict, seconds: float) -> str:
    lines = ["## O. `uscope agent` on a node of 200 processes", "",
             f"Command: `python3 bench/agent.py --markdown docs/BENCHMARKS.md` ({a.servers} Go "
             f"servers, {a.clients} of them under load by a gohttp_client each ({a.requests:,} "
             f"requests), {a.processes - a.servers - a.clients} idle programs, all selected; HTTP "
             f"RED on every server, profiles at 19 Hz written per process every 10 s; "
             f"{r['window']:.0f} s measured; load average {os.getloadavg()[0]:.1f}; "
             f"{seconds:.0f} s in all)", "",
             "| measure | value | goal |", "|---|---:|---:|",
             f"| processes the agent picked | {r['watched']} | — |",
             f"| agent CPU, share of one core | {r['cpu_share'] * 100:.2f}% | < 1% |",
             f"| agent resident memory at the end | {r['rss_kib'] / 1024:.1f} MiB | < 100 MiB |",
             f"| agent peak resident memory (VmHWM) | {r['hwm_kib'] / 1024:.1f} MiB | < 100 MiB |",
             f"| requests made / counted on /metrics | {r['made']:,} / {r['seen']:,} | equal |",
             f"| requests per second measured | {r['made'] / r['window']:,.0f} | — |",
             f"| exec of a new server to its first series (median of {len(r['firsts'])}) | "
             f"{R.med(r['firsts']) * 1000:.0f} ms ({R.spread([x * 1000 for x in r['firsts']], '.0f')}) | — |",
             f"| profile files written | {r['profile_files']} | — |",
             f"| losses the agent counted | "
             f"{', '.join(f'{k} {v}' for k, v in r['lost'].items()) or 'none'} | none |"]
    return "\n".join(lines)


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=root / "build" / "uscope")
    ap.add_argument("--fixtures", type=Path, default=root / "build" / "tests" / "fixtures" / "go")
    ap.add_argument("--servers", type=int, default=10)
    ap.add_argument("--processes", type=int, default=200)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--requests", type=int, default=100_000, help="requests per client")
    ap.add_argument("--execs", type=int, default=5)
    ap.add_argument("--port", type=int, default=19464)
    ap.add_argument("--markdown", type=Path, help="write the table into this file (between markers)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("agent.py: needs root (BPF)", file=sys.stderr)
        return 1
    return R.run_marked_bench("agent", a, bench, report, BEGIN_MARK, END_MARK)


if __name__ == "__main__":
    sys.exit(main())
