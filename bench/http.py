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
  latency   uscope latency -p SERVER net/http.serverHandler.ServeHTTP   (the same uprobes, no
            events: what the probes cost apart from uscope http's events)

added = median time per request of the configuration minus that of `none`. Each traced run is
checked: the summary counts every request of the run (and nothing lost).
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
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/http.py: begin generated -->"
END_MARK = "<!-- bench/http.py: end generated -->"
CONFIGS = ["none", "text", "json", "latency"]


def timed_load(a, base: str) -> float:
    """Seconds per request of one client run."""
    t0 = time.monotonic()
    p = R.run([str(a.fixtures / "gohttp_client"), base, str(a.requests), "/hello"], timeout=300)
    wall = time.monotonic() - t0
    R.check(f"done ok={a.requests} failed=0" in p.text("out"), "the client's requests failed", p)
    return wall / a.requests


def traced_run(a, base: str, server_pid: int, config: str, n: int) -> float:
    out = a.workdir / f"{config}-{n}.{'jsonl' if config in ('json', 'latency') else 'txt'}"
    cmd = [str(a.uscope), "http", "-p", str(server_pid), "-o", str(out)]
    if config == "json":
        cmd.insert(2, "--json")
    if config == "latency":
        cmd = [str(a.uscope), "latency", "--json", "-p", str(server_pid), "-o", str(out),
               "net/http.serverHandler.ServeHTTP"]
    u = R.Proc(cmd)
    R.check(u.wait_line("err", r"watching net/http|timing 1 functions", 60) is not None,
            "uscope did not attach", u)
    per_request = timed_load(a, base)
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
        lost = sum(summary["losses"].values())
    else:
        m = re.search(r"; (\d+) requests on", text)
        counted = int(m.group(1)) if m else -1
        lost = 0 if "nothing lost" in text else -1
    R.check(counted == a.requests and lost == 0,
            f"uscope {config} counted {counted} of {a.requests} requests (losses: {lost})", u)
    return per_request


def bench(a) -> dict:
    port = a.port
    server = R.Proc([str(a.fixtures / "gohttp_server"), str(port)])
    R.check(server.wait_line("out", r"listening on", 30) is not None, "the server did not start", server)
    base = f"http://127.0.0.1:{port}"
    times: dict[str, list[float]] = {c: [] for c in CONFIGS}
    for rnd in range(a.runs + 1):
        for c in CONFIGS:
            t = timed_load(a, base) if c == "none" else traced_run(a, base, server.pid, c, rnd)
            if rnd:  # round 0 warms up caches and the server
                times[c].append(t)
            R.log(f"  round {rnd} {c}: {t * 1e6:.1f} us per request")
    server.kill()
    return times


def report(a, times: dict, seconds: float) -> str:
    base = R.med(times["none"])
    lines = ["## H. `uscope http`: added latency per request", "",
             f"Command: `python3 bench/http.py --markdown docs/BENCHMARKS.md` ({a.runs} rounds of "
             f"{a.requests} sequential keep-alive GETs of gohttp_server's /hello by gohttp_client, "
             f"configurations interleaved; {seconds:.0f} s)", "",
             "| configuration | requests/s | µs per request (median) | spread | added µs per request |",
             "|---|---:|---:|---|---:|"]
    for c in CONFIGS:
        m = R.med(times[c])
        added = "—" if c == "none" else f"{(m - base) * 1e6:+.1f}"
        label = {"none": "untraced", "text": "`uscope http -p` (text lines to a file)",
                 "json": "`uscope http --json -p` (to a file)",
                 "latency": "`uscope latency -p` on ServeHTTP (same uprobes, no events)"}[c]
        lines.append(f"| {label} | {1 / m:,.0f} | {m * 1e6:.1f} | "
                     f"{R.spread([x * 1e6 for x in times[c]], '.1f')} | {added} |")
    lines += ["", "Each traced run's summary counted every request and lost none. The server's "
              "probe is a Go return probe: a uprobe at serverHandler.ServeHTTP's entry and one on "
              "each of its RET instructions, entry and return matched by goroutine. The entry sits on "
              "the jcc after Go's stack check (emulated); the RET is single-stepped: the `latency` "
              "row, the same uprobes without events, shows what they cost apart from uscope "
              "http's events."]
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
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("http.py: needs root (BPF)", file=sys.stderr)
        return 1
    for exe in [a.uscope, a.fixtures / "gohttp_server", a.fixtures / "gohttp_client"]:
        if not os.access(exe, os.X_OK):
            print(f"http.py: {exe} missing; build first", file=sys.stderr)
            return 1
    return R.run_marked_bench("http", a, bench, report, BEGIN_MARK, END_MARK)

if __name__ == "__main__":
    sys.exit(main())
