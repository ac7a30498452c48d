#!/usr/bin/python3
"""What `uscope tls`'s probes cost per TLS call, against bpftrace doing the same by hand. Needs
root, build/uscope, bpftrace, openssl and /usr/bin/python3.11. Standard library only; reuses
run.py's process handling.

    python3 bench/tls.py                                # the table on stdout
    python3 bench/tls.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

The target is python3.11's ssl module over memory BIOs (ssl.SSLObject): a client and a server in
one process, after their handshake, in a loop of N rounds of one 64-byte SSL_write_ex and one
SSL_read_ex (OpenSSL 3 from Debian's libssl3). No sockets, no peer: what is measured is the
calls and their probes. The target times its own loop (time.perf_counter around it, after a gate
line on stdin that is given once the tool has attached). Configurations, interleaved over --runs
rounds after one discarded warm-up round:

  none      the loop alone
  uscope    uscope tls --json -p PID -o FILE   (a return probe per call, payload in the event)
  bpftrace  the same by hand: an entry probe saving the buffer and count pointers per thread, a
            uretprobe printing buf(buf, *count) when the call returned 1

added per call = (median µs per round of the configuration - that of `none`) / 2 calls. Each
traced run is checked: uscope's summary counts every call of the run and loses none; bpftrace's
output holds a line per call.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/tls.py: begin generated -->"
END_MARK = "<!-- bench/tls.py: end generated -->"
CONFIGS = ["none", "uscope", "bpftrace"]
LIBSSL = "/lib/x86_64-linux-gnu/libssl.so.3"
PYTHON = "/usr/bin/python3.11"

TARGET = r'''
import ssl, sys, time
n, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
sctx.load_cert_chain(cert, key)
cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
cctx.load_verify_locations(cert)
c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
c = cctx.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
s = sctx.wrap_bio(s_in, s_out, server_side=True)
done = [False, False]
while not all(done):
    for i, side in enumerate((c, s)):
        if done[i]:
            continue
        try:
            side.do_handshake()
            done[i] = True
        except ssl.SSLWantReadError:
            pass
    s_in.write(c_out.read())
    c_in.write(s_out.read())
msg = b"GET /bench HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench/tls.py 0123456789\r\n\r\n"[:64]
print("ready", flush=True)
sys.stdin.readline()
t0 = time.perf_counter()
for _ in range(n):
    c.write(msg)
    s_in.write(c_out.read())
    s.read(64)
print(f"us_per_round {(time.perf_counter() - t0) / n * 1e6:.3f}", flush=True)
'''

BPFTRACE = r'''
uprobe:LIB:SSL_write_ex /pid == PID/ { @buf[tid] = arg1; @cnt[tid] = arg3; }
uprobe:LIB:SSL_read_ex /pid == PID/ { @buf[tid] = arg1; @cnt[tid] = arg3; }
uretprobe:LIB:SSL_write_ex, uretprobe:LIB:SSL_read_ex /pid == PID && @buf[tid]/ {
  if (retval == 1) { printf("%d %r\n", tid, buf(uptr(@buf[tid]), *(uint64 *)uptr(@cnt[tid]))); }
  delete(@buf[tid]); delete(@cnt[tid]);
}
BEGIN { printf("ready\n"); }
'''


def one_run(a, config: str, n: int) -> float:
    """Microseconds per round of one target run under `config`."""
    t = R.Proc([PYTHON, "-c", TARGET, str(a.rounds), str(a.cert), str(a.key)], stdin_pipe=True)
    R.check(t.wait_line("out", r"^ready", 60) is not None, "the target did not start", t)
    out = a.workdir / f"{config}-{n}.out"
    tool = None
    if config == "uscope":
        tool = R.Proc([str(a.uscope), "tls", "--json", "-p", str(t.pid), "-o", str(out)])
        R.check(tool.wait_line("err", r"watching TLS", 60) is not None, "uscope did not attach", tool)
    elif config == "bpftrace":
        prog = BPFTRACE.replace("LIB", LIBSSL).replace("PID", str(t.pid))
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        tool = R.Proc([a.bpftrace, "-B", "line", "-e", prog], stdout=fd)
        os.close(fd)
        # BEGIN fires once the probes are attached ("Attaching 5 probes..." comes first).
        ready = lambda: re.search(r"^ready$", out.read_text(), re.M) is not None  # noqa: E731
        deadline = time.monotonic() + 60
        while not ready() and time.monotonic() < deadline:
            R.check(tool.end is None, "bpftrace exited", tool)
            time.sleep(0.05)
        R.check(ready(), "bpftrace did not attach", tool)
    t.send("go\n")
    m = t.wait_line("out", r"us_per_round ([0-9.]+)", 600)
    R.check(m is not None, "the target did not finish", t)
    R.check(t.wait(60), "the target did not exit", t)
    if tool:
        tool.kill(signal.SIGINT)
        R.check(tool.wait(60), f"{config} did not stop", tool)
        text = out.read_text()
        calls = 2 * a.rounds
        if config == "uscope":
            summary = json.loads(text.strip().splitlines()[-1])
            seen = summary["reads"] + summary["writes"]
            lost = sum(summary["losses"].values())
            # The handshake's calls come before the attach; every call of the loop is an event.
            R.check(seen == calls and lost == 0, f"uscope saw {seen} of {calls} calls, lost {lost}",
                    tool)
        else:
            seen = sum(1 for l in text.splitlines() if re.match(r"\d+ GET /bench", l))
            R.check(seen == calls, f"bpftrace printed {seen} of {calls} calls", tool)
    return float(m[1][1])


def bench(a) -> dict:
    a.cert, a.key = a.workdir / "cert.pem", a.workdir / "key.pem"
    subprocess.run(["/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(a.key), "-out",
                    str(a.cert)], check=True, capture_output=True)
    times: dict[str, list[float]] = {c: [] for c in CONFIGS}
    for rnd in range(a.runs + 1):
        for c in CONFIGS:
            us = one_run(a, c, rnd)
            if rnd:  # round 0 warms up caches
                times[c].append(us)
            R.log(f"  round {rnd} {c}: {us:.2f} us per round (2 calls)")
    return times


def report(a, times: dict, seconds: float) -> str:
    base = R.med(times["none"])
    lines = ["## K. `uscope tls`: cost per TLS call", "",
             f"Command: `python3 bench/tls.py --markdown docs/BENCHMARKS.md` "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {a.runs} rounds of a "
             f"python3.11 loop of {a.rounds} × (SSL_write_ex + SSL_read_ex of 64 bytes) over memory "
             f"BIOs, timed by the target; configurations interleaved; {seconds:.0f} s)", "",
             "| configuration | µs per write+read (median) | spread | added µs per call | × of uscope's |",
             "|---|---:|---|---:|---:|"]
    added = {c: (R.med(times[c]) - base) / 2 for c in CONFIGS}
    for c in CONFIGS:
        m = R.med(times[c])
        label = {"none": "untraced",
                 "uscope": "`uscope tls --json -p PID -o FILE`",
                 "bpftrace": "bpftrace by hand (entry saves buf and count, uretprobe prints `%r` of `buf()`)"}[c]
        add = "—" if c == "none" else f"{added[c]:+.2f}"
        ratio = "—" if c == "none" or added["uscope"] <= 0 else f"{added[c] / added['uscope']:.2f}"
        lines.append(f"| {label} | {m:.2f} | {R.spread(times[c], '.2f')} | {add} | {ratio} |")
    lines += ["", "Each uscope run's summary counted every call of the loop (2 per round) and lost "
              "none; each bpftrace run (`-B line`, to a file) printed a line per call. A call costs "
              "uscope three traps: the uretprobe's uprobe on the function's first instruction "
              "(`sub rsp, 8` in SSL_write_ex and SSL_read_ex: single-stepped, the bulk of the cost "
              "on this VM, see section E), the entry probe that saves the SSL pointer, buffer, count "
              "pointer and the BIO's fd (moved to the emulated `call` that follows), and the return "
              "through the uretprobe trampoline, where the recipe reads the bytes the call moved "
              "into a ring-buffer event. bpftrace's entry probe and uretprobe share the first "
              "instruction (one single-stepped trap), keep the pointers in hash maps keyed by "
              "thread and print through a perf buffer."]
    return "\n".join(lines)


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=root / "build" / "uscope")
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace") or "/usr/bin/bpftrace")
    ap.add_argument("--rounds", type=int, default=50_000, help="write+read rounds per run (default 50000)")
    ap.add_argument("--runs", type=int, default=5, help="measured rounds (default 5)")
    ap.add_argument("--markdown", type=Path, help="write the table into this file (between markers)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("tls.py: needs root (BPF)", file=sys.stderr)
        return 1
    for exe in [a.uscope, a.bpftrace, PYTHON, "/usr/bin/openssl"]:
        if not os.access(exe, os.X_OK):
            print(f"tls.py: {exe} missing", file=sys.stderr)
            return 1
    return R.run_marked_bench("tls", a, bench, report, BEGIN_MARK, END_MARK)

if __name__ == "__main__":
    sys.exit(main())
