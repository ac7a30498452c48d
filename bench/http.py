#!/usr/bin/python3
"""What `uscope http` adds to each request of a Go net/http server under load. Needs root,
build/uscope and the Go fixtures (build/tests/fixtures/go). Standard library only; reuses run.py's
process handling.

    python3 bench/http.py                                # the table on stdout
    python3 bench/http.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

The load is gohttp_client (tests/fixtures/go): one connection kept alive, N sequential GETs of
/hello, as fast as the server answers (some thousands of requests per second on this VM). Its wall
time over N is the time per request as the client sees it. Configurations, interleaved over
--runs rounds after one discarded warm-up round, against one gohttp_server:

  none      the server alone
  text      uscope http -p SERVER -o FILE         (a line per request, the summary at the end)
  json      uscope http --json -p SERVER -o FILE
  latency   uscope latency -p SERVER net/http.serverHandler.ServeHTTP   (a uprobe at the entry
            and on each RET, no events: what ending a request at ServeHTTP's RETs, as uscope
            http did before it ended at finishRequest's entry, costs in probes alone)
  before    with --before PATH: `PATH http -p SERVER -o FILE`, another uscope build (one that
            still ends requests at ServeHTTP's RETs), in the same interleaved rounds

added = median time per request of the configuration minus that of `none`. The server's CPU time
per request (its threads' schedstat) is taken the same way: a uprobe's trap and BPF program run on
the server's thread, and its CPU time is what a loaded machine disturbs least. The BPF column is
the kernel's own timing of uscope's programs during the load (kernel.bpf_stats_enabled=1, restored
after): the part of the added CPU that is uscope's code, free of the request's noise (the traps
themselves are not in it). Each traced run is checked: the summary counts every request of the run
(and nothing lost).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import complete_stacks as C  # noqa: E402  (bench/complete_stacks.py: BPF run statistics)
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/http.py: begin generated -->"
END_MARK = "<!-- bench/http.py: end generated -->"
CONFIGS = ["none", "text", "json", "latency", "before"]


def configs(a) -> list[str]:
    return [c for c in CONFIGS if c != "before" or a.before]


def cpu_ns(pid: int) -> int:
    """CPU time of every thread of `pid` (the scheduler's, in ns: /proc/PID/task/*/schedstat)."""
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{t}/schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended: its time is not counted on either side
    return total


def timed_load(a, base: str, server_pid: int) -> tuple[float, float]:
    """Seconds per request of one client run, and the server's CPU seconds per request (where a
    uprobe's trap and BPF program run: on a loaded machine the steadier measure of their cost)."""
    c0 = cpu_ns(server_pid)
    t0 = time.monotonic()
    p = R.run([str(a.fixtures / "gohttp_client"), base, str(a.requests), "/hello"], timeout=300)
    wall = time.monotonic() - t0
    cpu = (cpu_ns(server_pid) - c0) / 1e9
    R.check(f"done ok={a.requests} failed=0" in p.text("out"), "the client's requests failed", p)
    return wall / a.requests, cpu / a.requests


def bpf_time(uscope_pid: int) -> tuple[int, int]:
    """(run_time_ns, run_cnt) summed over the BPF programs uscope holds (the kernel's own timing,
    with kernel.bpf_stats_enabled=1): the part of a request's added CPU spent in uscope's
    programs, without the noise of the whole request's time."""
    return C.prog_stats(uscope_pid) or (0, 0)


def traced_run(a, base: str, server_pid: int, config: str, n: int) -> tuple[float, float, float,
                                                                               float]:
    out = a.workdir / f"{config}-{n}.{'jsonl' if config in ('json', 'latency') else 'txt'}"
    uscope = a.before if config == "before" else a.uscope
    cmd = [str(uscope), "http", "-p", str(server_pid), "-o", str(out)]
    if config == "json":
        cmd.insert(2, "--json")
    if config == "latency":
        cmd = [str(a.uscope), "latency", "--json", "-p", str(server_pid), "-o", str(out),
               "net/http.serverHandler.ServeHTTP"]
    u = R.Proc(cmd)
    R.check(u.wait_line("err", r"watching net/http|timing 1 functions", 60) is not None,
            "uscope did not attach", u)
    ns0, runs0 = bpf_time(u.pid)
    per_request = timed_load(a, base, server_pid)
    ns1, runs1 = bpf_time(u.pid)
    u.kill(signal.SIGINT)
    R.check(u.wait(60) and u.rc == 0, "uscope did not stop cleanly", u)
    text = out.read_text()
    if config == "latency":
        rows = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
        rows = [r for r in rows if r.get("kind") == "latency"]
        counted = rows[-1]["calls"] if rows else -1
        lost = rows[-1]["returns_without_entry"] if rows else -1
    elif config == "json":
        summary = json.loads(text.strip().splitlines()[-1])
        counted = summary["requests"]
        lost = {k: v for k, v in summary["losses"].items() if v} or 0
    else:
        m = re.search(r"; (\d+) requests on", text)
        counted = int(m.group(1)) if m else -1
        # What the summary said instead, kept in the refusal (one such run was not reproduced).
        lost = 0 if "nothing lost" in text else " / ".join(text.strip().splitlines()[-3:])
    R.check(counted == a.requests and lost == 0,
            f"uscope {config} counted {counted} of {a.requests} requests (losses: {lost})", u)
    return (*per_request, (ns1 - ns0) / 1e9 / a.requests, (runs1 - runs0) / a.requests)


def bench(a) -> dict:
    port = a.port
    server = R.Proc([str(a.fixtures / "gohttp_server"), str(port)])
    R.check(server.wait_line("out", r"listening on", 30) is not None, "the server did not start", server)
    base = f"http://127.0.0.1:{port}"
    times: dict[str, list[float]] = {c: [] for c in configs(a)}
    cpu: dict[str, list[float]] = {c: [] for c in configs(a)}
    bpf: dict[str, list[float]] = {c: [] for c in configs(a)}
    bpf_runs: dict[str, list[float]] = {c: [] for c in configs(a)}
    with C.bpf_stats_enabled():
        for rnd in range(a.runs + 1):
            for c in configs(a):
                t, u, b, r = ((*timed_load(a, base, server.pid), 0.0, 0.0) if c == "none"
                              else traced_run(a, base, server.pid, c, rnd))
                if rnd:  # round 0 warms up caches and the server
                    times[c].append(t)
                    cpu[c].append(u)
                    bpf[c].append(b)
                    bpf_runs[c].append(r)
                R.log(f"  round {rnd} {c}: {t * 1e6:.1f} us per request, server CPU "
                      f"{u * 1e6:.1f} us, BPF {b * 1e6:.2f} us in {r:.2f} runs")
    server.kill()
    return {"wall": times, "cpu": cpu, "bpf": bpf, "bpf_runs": bpf_runs}


def report(a, measured: dict, seconds: float) -> str:
    times, cpu, bpf, bpf_runs = (measured["wall"], measured["cpu"], measured["bpf"],
                                 measured["bpf_runs"])
    lines = ["## H. `uscope http`: added latency per request", "",
             f"Command: `{'TMPDIR=' + os.environ['TMPDIR'] + ' ' if 'TMPDIR' in os.environ else ''}"
             f"python3 bench/http.py --markdown docs/BENCHMARKS.md --requests {a.requests} "
             f"--runs {a.runs}{f' --before {a.before}' if a.before else ''}` ({a.runs} rounds of "
             f"{a.requests} sequential keep-alive GETs of gohttp_server's /hello by gohttp_client, "
             f"configurations interleaved; {seconds:.0f} s)", "",
             "| configuration | requests/s | µs per request (median) | spread | added µs per request "
             "| server CPU µs per request | added server CPU µs per request "
             "| uscope's BPF µs per request (spread) | BPF runs per request |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for c in configs(a):
        m = R.med(times[c])
        def added(xs: dict) -> str:
            return "—" if c == "none" else f"{(R.med(xs[c]) - R.med(xs['none'])) * 1e6:+.1f}"
        label = {"none": "untraced", "text": "`uscope http -p` (text lines to a file)",
                 "json": "`uscope http --json -p` (to a file)",
                 "latency": "`uscope latency -p` on ServeHTTP (entry + RET uprobes, no events)",
                 "before": f"`{a.before.name if a.before else ''} http -p` (--before: another "
                           "build)"}[c]
        lines.append(f"| {label} | {1 / m:,.0f} | {m * 1e6:.1f} | "
                     f"{R.spread([x * 1e6 for x in times[c]], '.1f')} | {added(times)} | "
                     f"{R.med(cpu[c]) * 1e6:.1f} | {added(cpu)} | "
                     + ("— | — |" if c == "none" else
                        f"{R.med(bpf[c]) * 1e6:.2f} ({R.spread([x * 1e6 for x in bpf[c]], '.2f')})"
                        f" | {R.med(bpf_runs[c]):.2f} |"))
    lines += ["", "Each traced run's summary counted every request and lost none. `uscope http` "
              "probes a served request at entries only, matched by goroutine: "
              "serverHandler.ServeHTTP's and (*response).finishRequest's (HTTP/1; "
              "(*http2responseWriter).handlerDone's for HTTP/2), each on the jcc after Go's stack "
              "check (emulated). A request that never ends is dropped at a hijack, at its HTTP/1 "
              "connection's deferred end or at the next HTTP/2 stream on its goroutine (not at "
              "runtime.goexit1: net/http starts a background-read goroutine per HTTP/1 request, "
              "which made that one more trap a request). The `latency` row puts "
              "uprobes on ServeHTTP's entry and its RET instructions (single-stepped), where "
              "`uscope http` ended a request before: what that ending costs in probes alone."]
    return "\n".join(lines)


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=root / "build" / "uscope")
    ap.add_argument("--fixtures", type=Path, default=root / "build" / "tests" / "fixtures" / "go")
    ap.add_argument("--requests", type=int, default=20_000, help="requests per run (default 20000)")
    ap.add_argument("--runs", type=int, default=5, help="measured rounds (default 5)")
    ap.add_argument("--port", type=int, default=18931)
    ap.add_argument("--markdown", type=Path, help="write the table into this file (between markers)")
    ap.add_argument("--before", type=Path, help="another uscope build to run as `before`")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("http.py: needs root (BPF)", file=sys.stderr)
        return 1
    for exe in [a.uscope, a.fixtures / "gohttp_server", a.fixtures / "gohttp_client"] + (
            [a.before] if a.before else []):
        if not os.access(exe, os.X_OK):
            print(f"http.py: {exe} missing; build first", file=sys.stderr)
            return 1
    return R.run_marked_bench("http", a, bench, report, BEGIN_MARK, END_MARK)

if __name__ == "__main__":
    sys.exit(main())
