#!/usr/bin/python3
"""What `uscope gc` and `uscope stat` cost a managed runtime (issue 24, "Speed"), in the seed's
USDT-overhead form, in one run. Needs root, build/uscope (scripts/build.sh), Debian's python3.11,
ruby, openjdk-17 and bpftrace (scripts/install-deps.sh). Standard library only.

    python3 bench/runtime_tools.py                                # the table on stdout
    python3 bench/runtime_tools.py --markdown docs/BENCHMARKS.md  # also into that file (own markers)

For each runtime, a workload that collects often (python3.11: 4,000,000 small lists kept 10,000
at a time, a young collection every 700 of them; ruby: 3,000,000 small arrays and a minor GC each few
thousand; java -Xmx64m: 4 GiB of 64 KiB arrays, a young collection each few MiB) is started
gated (it prints "ready", waits for a line, runs, and prints its own CPU time and the collections
its runtime counted), then run in four configurations, interleaved in each round:

  none      no probe
  empty     bpftrace with the least action (`@hits = count()`: bpftrace 0.17 leaves a probe
            with an empty action unattached) on the runtime's GC begin and end USDT probes (the
            seed's "probes enabled, empty handler" row: what the traps cost)
  gc        `uscope gc -p PID -o /dev/null` (uscope's handler: an event per begin and end)
  stat      `uscope stat -p PID -o /dev/null` (the GC probes and every other cheap one)

The table has the medians of --runs rounds after one discarded: the workload's CPU time, the
ratio to `none`, and the collections the runtime counted against those uscope gc reported (from
its JSON summary) in the last round. Every exit status is checked.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)

BEGIN_MARK = "<!-- bench/runtime_tools.py: begin generated -->"
END_MARK = "<!-- bench/runtime_tools.py: end generated -->"
ROOT = Path(__file__).resolve().parent.parent

PY = """\
import gc, os, sys, time
print("ready", flush=True)
sys.stdin.readline()
before = sum(s["collections"] for s in gc.get_stats())
t = time.process_time_ns()
for chunk in range(400):
    keep = [[i] for i in range(10_000)]  # kept: a young collection each 700 of them
cpu = time.process_time_ns() - t
print("done", cpu, sum(s["collections"] for s in gc.get_stats()) - before, flush=True)
sys.stdin.readline()
os._exit(0)  # without the collections of an orderly exit
"""

RB = """\
STDOUT.sync = true
puts "ready"
STDIN.gets
before = GC.count
t = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond)
3_000_000.times { |i| x = [i, i] }
cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond) - t
puts "done #{cpu} #{GC.count - before}"
STDIN.gets
exit!(0)
"""

JAVA = """\
import java.io.*;
import java.lang.management.*;
public final class GcBench {
  static long collections() {
    long n = 0;
    for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans())
      n += Math.max(0, b.getCollectionCount());
    return n;
  }
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    ThreadMXBean tm = ManagementFactory.getThreadMXBean();
    collections();
    System.out.println("ready");
    in.readLine();
    long before = collections(), t = tm.getCurrentThreadCpuTime();
    long sink = 0;
    for (int i = 0; i < 65536; ++i) { byte[] b = new byte[65536]; sink += b.length; }
    long cpu = tm.getCurrentThreadCpuTime() - t;
    System.out.println("done " + cpu + " " + (collections() - before) + " " + (sink > 0 ? "" : "-"));
    in.readLine();
    Runtime.getRuntime().halt(0);
  }
}
"""


def runtimes(work: Path) -> list[dict]:
    (work / "gc_bench.py").write_text(PY)
    (work / "gc_bench.rb").write_text(RB)
    (work / "GcBench.java").write_text(JAVA)
    subprocess.run(["javac", "-d", str(work), str(work / "GcBench.java")], check=True)
    libruby = next(Path("/usr/lib/x86_64-linux-gnu").glob("libruby-3.1.so.3.1*"))
    libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
    return [
        {"name": "python3.11", "cmd": ["/usr/bin/python3.11", str(work / "gc_bench.py")],
         "probes": [("/usr/bin/python3.11", "python:gc__start"), ("/usr/bin/python3.11", "python:gc__done")]},
        {"name": "ruby 3.1", "cmd": ["/usr/bin/ruby", str(work / "gc_bench.rb")],
         "probes": [(str(libruby), f"ruby:{p}") for p in
                    ("gc__mark__begin", "gc__mark__end", "gc__sweep__begin", "gc__sweep__end")]},
        {"name": "java 17", "cmd": ["/usr/bin/java", "-Xmx64m", "-cp", str(work), "GcBench"],
         "probes": [(libjvm, "hotspot:gc__begin"), (libjvm, "hotspot:gc__end")]},
    ]


def gated_run(cmd: list[str], probes: list[tuple[str, str]], tool: list[str] | str | None,
              work: Path, env: dict | None = None) -> tuple[list[str], list[dict]]:
    """Runs a gated workload (it prints "ready", waits for a line, works, prints "done ...", waits
    for its stdin to close) under `tool`: None (no probe), "empty" (bpftrace with an empty action
    on `probes`, (path, provider:name) pairs), or uscope's argv, run with `-p PID --format json -o
    FILE`. The words after "done" and uscope's JSON lines."""
    target = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert target.stdout.readline().strip() == "ready", cmd
    proc = None
    out = work / "tool.json"
    if tool == "empty":
        # The least action that keeps the probe: bpftrace 0.17 attaches nothing for an empty one
        # (`{ }` on the JVM's method__entry/return cost its calls nothing; `count()` ~2 µs each).
        script = " ".join(f"usdt:{path}:{p} /pid == {target.pid}/ {{ @hits = count(); }}"
                          for path, p in probes)
        proc = subprocess.Popen(["bpftrace", "-p", str(target.pid), "-e", script],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        while True:  # past its warnings (RLIMIT_MEMLOCK), to "Attaching N probes..."
            line = proc.stdout.readline()
            assert line, "bpftrace ended before attaching"
            if line.startswith("Attaching"):
                break
    elif tool:
        args = tool + ["-p", str(target.pid), "--format", "json", "-o", str(out)]
        proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        while True:
            line = proc.stderr.readline()
            assert line, f"{args}: ended before attaching"
            if "Ctrl-C to stop" in line:
                break
    target.stdin.write("go\n")
    target.stdin.flush()
    words = target.stdout.readline().split()
    assert words and words[0] == "done", words
    target.stdin.close()
    target.wait()
    lines = []
    if proc:
        if tool == "empty":
            proc.terminate()
        proc.wait(timeout=60)
        if tool != "empty":
            assert proc.returncode == 0, proc.stderr.read()
            lines = [json.loads(line) for line in out.read_text().splitlines()]
    return words[1:], lines


def one(rt: dict, mode: str, uscope: str, work: Path) -> tuple[int, int, dict | None]:
    """The workload's CPU ns and its runtime's collection count under `mode`; gc's summary."""
    tool = {"none": None, "empty": "empty"}.get(mode, [uscope, mode])
    words, lines = gated_run(rt["cmd"], rt["probes"], tool, work)
    summary = next((j["summary"] for j in lines if "summary" in j), None)
    return int(words[0]), int(words[1]), summary


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--uscope", default=str(ROOT / "build/uscope"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--markdown", type=Path)
    a = p.parse_args()
    modes = ["none", "empty", "gc", "stat"]
    work = Path(tempfile.mkdtemp(prefix="uscope-runtime-bench-"))
    load0 = os.getloadavg()[0]
    rows = []
    for rt in runtimes(work):
        cpu = {m: [] for m in modes}
        last = {}
        for r in range(a.runs + 1):
            for m in modes:
                ns, counted, summary = one(rt, m, a.uscope, work)
                if r:
                    cpu[m].append(ns)
                last[m] = (counted, summary)
        rows.append((rt["name"], {m: statistics.median(v) for m, v in cpu.items()}, last))
        print(f"{rt['name']}: done", file=sys.stderr)
    load1 = os.getloadavg()[0]
    L = [f"### Medians of {a.runs} rounds after one discarded; the workload's own CPU time "
         f"(load average {load0:.2f} at the start, {load1:.2f} at the end)", "",
         "| runtime | collections (runtime's count / uscope gc's) | none | empty handler (bpftrace) | uscope gc | uscope stat |",
         "|---|---|---|---|---|---|"]
    for name, med, last in rows:
        base = med["none"]
        counted, summary = last["gc"]
        # Ruby's collections are its mark phases (its sweeps are lazy, several per collection).
        kinds = summary["by_kind"] if summary else {}
        seen = kinds["mark"]["count"] if "mark" in kinds else (summary or {}).get("collections", "?")
        cells = [f"{med[m] / 1e6:.0f} ms ({med[m] / base:.3f}x)" for m in modes]
        L.append(f"| {name} | {counted} / {seen} | " + " | ".join(cells) + " |")
    L.append("")
    L.append("Command: `scripts/build.sh && python3 bench/runtime_tools.py --markdown docs/BENCHMARKS.md`")
    body = "\n".join(L)
    print(body)
    if a.markdown:
        R.write_marked_block(a.markdown, body, BEGIN_MARK, END_MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
