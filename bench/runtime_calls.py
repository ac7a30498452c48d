#!/usr/bin/python3
"""What the per-call runtime tools (`uscope calls`, `calls -L`, `flow`) cost a managed runtime
(issue 24, "Cost first"), in the seed's USDT-overhead form, in one run. Needs root, build/uscope,
Debian's python3.11, ruby, php-cli, openjdk-17 and bpftrace (scripts/install-deps.sh).

    python3 bench/runtime_calls.py                                # the table on stdout
    python3 bench/runtime_calls.py --markdown docs/BENCHMARKS.md  # also into that file

Each runtime's workload calls a small method --calls times (gated as bench/runtime_tools.py's
are, and printing its own CPU time and its own count of the calls), in these configurations,
interleaved in each round:

  none      no probe, and nothing the runtime needs for its probes to fire
  needs     what the runtime needs for them (java -XX:+ExtendedDTraceProbes; php
            USE_ZEND_DTRACE=1; ruby a TracePoint on :call and :return; python: nothing), no probe
  empty     that, and bpftrace with the least action (`@hits = count()`, see runtime_tools.py)
            on the call probes (entry and return; python's return only): what the traps cost
  calls     that, and `uscope calls` (counts by name in the kernel)
  calls -L  that, and `uscope calls -L` (each return paired with its entry and timed)
  flow      that, and `uscope flow` with the method's name (every call crosses the ring buffer)

The table: medians of --runs rounds after one discarded, the workload's CPU time, its ratio to
`needs` and to `none`, and per call the time each adds over `needs`; and the method's calls the
program counted against uscope calls' count (last round). Every exit status is checked.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as R  # noqa: E402  (bench/run.py)
from runtime_tools import gated_run  # noqa: E402

BEGIN_MARK = "<!-- bench/runtime_calls.py: begin generated -->"
END_MARK = "<!-- bench/runtime_calls.py: end generated -->"
ROOT = Path(__file__).resolve().parent.parent

PY = """\
import os, sys, time
calls = 0
def work(i):
    global calls
    calls += 1
    return i + 1
n = int(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
t = time.process_time_ns()
for i in range(n):
    work(i)
print("done", time.process_time_ns() - t, calls, flush=True)
sys.stdin.readline()
os._exit(0)
"""

RB = """\
class Widget
  @@calls = 0
  def self.calls = @@calls
  def work(i)
    @@calls += 1
    i + 1
  end
end
STDOUT.sync = true
n = ARGV[0].to_i
tp = ARGV[1] == "tp" ? TracePoint.new(:call, :return) {} : nil
w = Widget.new
puts "ready"
STDIN.gets
tp&.enable
t = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond)
i = 0
while i < n
  w.work(i)
  i += 1
end
cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID, :nanosecond) - t
tp&.disable
puts "done #{cpu} #{Widget.calls}"
STDIN.gets
exit!(0)
"""

PHP = """\
<?php
class Widget {
  public static $calls = 0;
  public function work($i) { ++self::$calls; return $i + 1; }
}
$n = intval($argv[1]);
$w = new Widget();
echo "ready\\n";
fgets(STDIN);
$r0 = getrusage();
for ($i = 0; $i < $n; ++$i) $w->work($i);
$r1 = getrusage();
$us = ($r1["ru_utime.tv_sec"] - $r0["ru_utime.tv_sec"] + $r1["ru_stime.tv_sec"] - $r0["ru_stime.tv_sec"]) * 1000000
    + $r1["ru_utime.tv_usec"] - $r0["ru_utime.tv_usec"] + $r1["ru_stime.tv_usec"] - $r0["ru_stime.tv_usec"];
echo "done " . ($us * 1000) . " " . Widget::$calls . "\\n";
fgets(STDIN);
exit(0);
"""

JAVA = """\
import java.io.*;
import java.lang.management.*;
public final class CallBench {
  static final class Widget {
    static long calls = 0;
    long work(long i) { ++calls; return i + 1; }
  }
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    ThreadMXBean tm = ManagementFactory.getThreadMXBean();
    int n = Integer.parseInt(a[0]);
    Widget w = new Widget();
    System.out.println("ready");
    in.readLine();
    long t = tm.getCurrentThreadCpuTime(), sum = 0;
    for (int i = 0; i < n; ++i) sum += w.work(i);
    long cpu = tm.getCurrentThreadCpuTime() - t;
    System.out.println("done " + cpu + " " + Widget.calls + " " + (sum > 0 ? "" : "-"));
    in.readLine();
    Runtime.getRuntime().halt(0);
  }
}
"""

MODES = ["none", "needs", "empty", "calls", "calls -L", "flow"]


def runtimes(work: Path, n: int) -> list[dict]:
    (work / "call_bench.py").write_text(PY)
    (work / "call_bench.rb").write_text(RB)
    (work / "call_bench.php").write_text(PHP)
    (work / "CallBench.java").write_text(JAVA)
    R.run(["javac", "-d", str(work), str(work / "CallBench.java")])
    libruby = str(next(Path("/usr/lib/x86_64-linux-gnu").glob("libruby-3.1.so.3.1*")))
    libjvm = "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
    php = str(Path("/usr/bin/php").resolve())
    env = dict(os.environ)
    return [
        # Python 3.11's calls are counted at their return, not timed, not flowed (docs/calls.md).
        {"name": "python3.11", "glob": "*:work", "modes": ["none", "needs", "empty", "calls"],
         "cmd": lambda needs: ["/usr/bin/python3.11", str(work / "call_bench.py"), str(n)],
         "env": lambda needs: env,
         "probes": [("/usr/bin/python3.11", "python:function__return")]},
        {"name": "ruby 3.1", "glob": "Widget#work",
         "cmd": lambda needs: ["/usr/bin/ruby", str(work / "call_bench.rb"), str(n)]
         + (["tp"] if needs else []),
         "env": lambda needs: env,
         "probes": [(libruby, f"ruby:{p}") for p in
                    ("method__entry", "method__return", "cmethod__entry", "cmethod__return")]},
        {"name": "php 8.2", "glob": "Widget::work",
         "cmd": lambda needs: [php, str(work / "call_bench.php"), str(n)],
         "env": lambda needs: {**env, "USE_ZEND_DTRACE": "1"} if needs else env,
         "probes": [(php, "php:function__entry"), (php, "php:function__return")]},
        {"name": "java 17", "glob": "*Widget.work",
         "cmd": lambda needs: ["/usr/bin/java", "-Xmx64m"]
         + (["-XX:+ExtendedDTraceProbes"] if needs else []) + ["-cp", str(work), "CallBench", str(n)],
         "env": lambda needs: env,
         "probes": [(libjvm, "hotspot:method__entry"), (libjvm, "hotspot:method__return")]},
    ]


def one(rt: dict, mode: str, uscope: str, work: Path) -> tuple[int, int, int | None]:
    """The workload's CPU ns and call count, and uscope calls' count of the method."""
    needs = mode != "none"
    tool = {"none": None, "needs": None, "empty": "empty", "calls": [uscope, "calls"],
            "calls -L": [uscope, "calls", "-L"], "flow": [uscope, "flow", rt["glob"]]}[mode]
    words, lines = gated_run(rt["cmd"](needs), rt["probes"], tool, work, rt["env"](needs))
    seen = None
    if mode.startswith("calls"):
        import fnmatch
        seen = sum(j["count"] for j in lines
                   if j.get("kind") == "calls" and fnmatch.fnmatchcase(j["name"], rt["glob"]))
    return int(words[0]), int(words[1]), seen


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--uscope", default=str(ROOT / "build/uscope"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--calls", type=int, default=300_000)
    p.add_argument("--markdown", type=Path)
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="uscope-calls-bench-"))
    load0 = os.getloadavg()[0]
    rows = []
    for rt in runtimes(work, a.calls):
        cpu = {m: [] for m in MODES}
        counted = seen = None
        modes = rt.get("modes", MODES)
        for r in range(a.runs + 1):
            for m in modes:
                ns, c, s = one(rt, m, a.uscope, work)
                if r:
                    cpu[m].append(ns)
                if m == "calls":
                    counted, seen = c, s
        rows.append((rt["name"], {m: statistics.median(v) for m, v in cpu.items() if v}, counted,
                     seen))
        print(f"{rt['name']}: done", file=sys.stderr)
    load1 = os.getloadavg()[0]
    L = [f"### Medians of {a.runs} rounds after one discarded, {a.calls:,} calls each; the "
         f"workload's own CPU time (load average {load0:.2f} at the start, {load1:.2f} at the end)",
         "", "Per cell: CPU time, its ratio to `needs` (and to `none`), and the time added per call "
         "over `needs`.", "",
         "| runtime | calls (program's / uscope calls') | " + " | ".join(MODES) + " |",
         "|---|---|" + "---|" * len(MODES)]
    for name, med, counted, seen in rows:
        cells = []
        for m in MODES:
            if m not in med:
                cells.append("—")
                continue
            cell = f"{med[m] / 1e6:.0f} ms"
            if m != "none":
                cell += f" ({med[m] / med['needs']:.2f}x; {med[m] / med['none']:.2f}x)"
            if m not in ("none", "needs"):
                cell += f", +{(med[m] - med['needs']) / a.calls / 1e3:.2f} µs/call"
            cells.append(cell)
        L.append(f"| {name} | {counted:,} / {seen:,} | " + " | ".join(cells) + " |")
    L.append("")
    L.append("Command: `scripts/build.sh && python3 bench/runtime_calls.py --markdown docs/BENCHMARKS.md`")
    body = "\n".join(L)
    print(body)
    if a.markdown:
        R.write_marked_block(a.markdown, body, BEGIN_MARK, END_MARK)
    return 0


if __name__ == "__main__":
    sys.exit(main())
