#!/usr/bin/python3
"""What a big binary costs uscope before its first event: `list` of every function, and attaching
one probe, on Debian's prometheus (a stripped Go binary, ~63,000 functions in .gopclntab), against
bpftrace in the same run. Needs root, build/uscope, bpftrace and /usr/bin/prometheus
(apt-get install prometheus). Standard library only; reuses run.py's process handling.

    python3 bench/big_binary.py                                # the table on stdout
    python3 bench/big_binary.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

  list    `uscope list BIN` (names, addresses and each function's entry probe site) against
          `bpftrace -l 'uprobe:BIN:*'` (names): wall time to exit, peak RSS (VmHWM, sampled), and
          the number of functions each printed.
  attach  `uscope trace -v 'p:BIN:main'` (every process that maps BIN) until it says its site is
          attached, against `bpftrace -e 'uprobe:BIN:main {}'` until it prints "Attaching 1
          probe": wall time to that line, peak RSS up to then. Both are then stopped by SIGINT.
          uscope also on a Go function, which bpftrace cannot see (it reads .dynsym only).

--runs rounds, tools interleaved, after one discarded warm-up round; medians with min–max, and
the least CPU time (user + sys: of the whole run for list, up to the attached line for attach),
which a machine shared with other work moves far less than the wall time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/big_binary.py: begin generated -->"
END_MARK = "<!-- bench/big_binary.py: end generated -->"
BIN = "/usr/bin/prometheus"
FUNC = "net/http.(*conn).serve"


def list_cmds(a) -> dict[str, list[str]]:
    return {"uscope": [str(a.uscope), "list", BIN], "bpftrace": [a.bpftrace, "-l", f"uprobe:{BIN}:*"]}


ATTACH = ["uscope go", "uscope", "bpftrace"]


def attach_cmds(a) -> dict[str, tuple[list[str], str]]:
    # bpftrace reads .dynsym only: of a stripped Go binary it sees the cgo C functions (`main`),
    # none of Go's own. Both tools attach to `main`; uscope also to a Go function.
    return {
        "uscope go": ([str(a.uscope), "trace", "-v", f"p:{BIN}:{FUNC}"], r"uscope: 1 sites attached"),
        "uscope": ([str(a.uscope), "trace", "-v", f"p:{BIN}:main"], r"uscope: 1 sites attached"),
        "bpftrace": ([a.bpftrace, "-e", f"uprobe:{BIN}:main {{}}"], r"^Attaching 1 probe"),
    }


def functions_listed(tool: str, out: str) -> int:
    if tool == "bpftrace":
        return sum(1 for line in out.splitlines() if line.startswith("uprobe:"))
    return sum(1 for line in out.splitlines() if re.match(r"^\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s", line))


def once_list(cmd: list[str], tool: str) -> dict:
    p = R.Proc(cmd, sample_hwm=True)
    if not p.wait(300):
        p.kill()
        raise R.BenchError(f"{tool} list did not finish in 300 s\n{p.describe()}")
    R.check(p.rc == 0, f"{tool} list failed", p)
    n = functions_listed(tool, p.text("out"))
    R.check(n > (60_000 if tool == "uscope" else 0), f"{tool} listed {n} functions", p)
    return {"wall": p.end, "cpu": p.cpu_s, "rss": max(p.hwm_kib, 1) / 1024, "n": n}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def once_attach(cmd: list[str], pattern: str, tool: str) -> dict:
    p = R.Proc(cmd, sample_hwm=True)
    stream = "out" if tool == "bpftrace" else "err"  # bpftrace says it on stdout
    got = p.wait_line(stream, pattern, timeout=300)
    R.check(got is not None, f"{tool} did not attach", p)
    cpu = cpu_seconds(p.pid)
    rss = max(p.hwm_kib, 1) / 1024
    p.kill(signal.SIGINT)
    if not p.wait(120 if tool.startswith("uscope") else 20):
        if tool.startswith("uscope"):
            p.kill()
            raise R.BenchError(f"{tool} did not end on SIGINT\n{p.describe()}")
        p.kill()  # bpftrace 0.17 ignores SIGINT while it still attaches; its links die with it
        p.wait(60)
    return {"wall": got[0], "cpu": cpu, "rss": rss}


def bench(a) -> dict:
    res: dict = {"list": {"uscope": [], "bpftrace": []}, "attach": {t: [] for t in ATTACH}}
    for i in range(a.runs + 1):
        for tool, cmd in list_cmds(a).items():
            r = once_list(cmd, tool)
            R.log(f"round {i} list {tool}: {r['wall']:.2f} s, CPU {r['cpu']:.2f} s, {r['rss']:.1f} MiB, "
                  f"{r['n']} functions")
            if i:
                res["list"][tool].append(r)
        for tool, (cmd, pattern) in attach_cmds(a).items():
            r = once_attach(cmd, pattern, tool)
            R.log(f"round {i} attach {tool}: {r['wall']:.3f} s, CPU {r['cpu']:.3f} s, {r['rss']:.1f} MiB")
            if i:
                res["attach"][tool].append(r)
    return res


def report(a, res: dict, seconds: float) -> str:
    import datetime

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "## L. A big binary: `list` and a one-probe attach on prometheus (stripped Go, ~63,000 functions)",
        "",
        f"Command: `python3 bench/big_binary.py --markdown docs/BENCHMARKS.md` ({when}, {a.runs} rounds "
        f"after a discarded one, tools interleaved; {seconds:.0f} s). Goals (issue 20): list ≤ 1 s, "
        "one-probe attach ≤ 200 ms and ≤ 60 MiB. CPU s is user + sys (list: to exit; attach: to the "
        f"attached line), the least of the rounds; load average at the start: {a.load}.",
        "",
        "| work | tool | CPU s (min) | wall s (median) | spread | peak RSS MiB (median) | spread | functions | × of uscope's wall |",
        "|---|---|---:|---:|---|---:|---|---:|---:|",
    ]
    names = {
        ("list", "uscope"): f"`uscope list {BIN}`",
        ("list", "bpftrace"): f"`bpftrace -l 'uprobe:{BIN}:*'`",
        ("attach", "uscope go"): f"`uscope trace -v 'p:{BIN}:{FUNC}'` to \"1 sites attached\"",
        ("attach", "uscope"): f"`uscope trace -v 'p:{BIN}:main'` to \"1 sites attached\"",
        ("attach", "bpftrace"): f"`bpftrace -e 'uprobe:{BIN}:main {{}}'` to \"Attaching 1 probe\"",
    }
    for work in ("list", "attach"):
        base = R.med([r["wall"] for r in res[work]["uscope"]])
        for tool in (ATTACH if work == "attach" else ["uscope", "bpftrace"]):
            rs = res[work][tool]
            walls, rss, cpu = [r["wall"] for r in rs], [r["rss"] for r in rs], [r["cpu"] for r in rs]
            n = str(rs[0]["n"]) if "n" in rs[0] else "—"
            lines.append(
                f"| {work} | {names[(work, tool)]} | {min(cpu):.2f} | {R.med(walls):.3f} | {R.spread(walls, '.3f')} | "
                f"{R.med(rss):.1f} | {R.spread(rss, '.1f')} | {n} | {R.med(walls) / base:.2f} |"
            )
    lines += [
        "",
        "bpftrace reads .dynsym only: of this stripped Go binary it lists the cgo C functions, none of "
        "Go's own (uscope reads .gopclntab), so the list rows do not do the same work; uscope's also "
        "prints each function's address, file offset, size and the entry probe site trace would use "
        "(the first instructions' lengths and branches decoded with Zydis and those the planner weighs "
        "with capstone, the whole function's only when a byte of it could branch into them, "
        "plan/instruction_sweep.h, plan/branch_candidates.h). The attach rows compare the same function (`main`, cgo's C "
        "entry); uscope's attach includes reading .gopclntab for its symbol table. bpftrace prints "
        "\"Attaching 1 probe\" before it attaches, so its row is a lower bound.",
    ]
    return "\n".join(lines)


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--uscope", type=Path, default=root / "build" / "uscope")
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace") or "/usr/bin/bpftrace")
    ap.add_argument("--runs", type=int, default=3, help="measured rounds (default 3)")
    ap.add_argument("--markdown", type=Path, help="write the table into this file (between markers)")
    a = ap.parse_args()
    a.load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    if os.geteuid() != 0:
        print("big_binary.py: needs root (BPF)", file=sys.stderr)
        return 1
    for exe in [a.uscope, a.bpftrace, BIN]:
        if not os.access(exe, os.X_OK):
            print(f"big_binary.py: {exe} missing (prometheus: apt-get install prometheus)", file=sys.stderr)
            return 1
    return R.run_marked_bench("big_binary", a, bench, report, BEGIN_MARK, END_MARK)


if __name__ == "__main__":
    sys.exit(main())
