#!/usr/bin/env python3
"""Lists the tests a ctest run skipped, with the reason each gave, from ctest's JUnit file.

    scripts/ctest-skips.py build/logs/ctest.xml

Prints "N skipped" and one line per skip. ctest counts a skipped test as passed; CI must not: a
test that skips because the machine lacks root, python3.11, libjvm, libssl or libc6-dbg checks
nothing, and CI always has those. So every skip fails (exit 1) unless its reason matches one of
ALLOWED, the skips that say something true of a correctly set-up CI machine.
"""
import re
import sys
import xml.etree.ElementTree as ET

# A skip that a correct CI machine can still take (its reason, a regex), and why.
ALLOWED = [
    # process_test: checks that an unprivileged user is refused PID 1's maps; in a container
    # whose PID 1 is that user's own process there is nothing to refuse.
    r"PID 1 is readable without privileges here",
]


def skip_reason(case):
    """The text after GoogleTest's "Skipped" line: what the test gave GTEST_SKIP()."""
    out = case.findtext("system-out") or ""
    m = re.search(r": Skipped\n(.*?)\n\[  SKIPPED \]", out, re.S)
    if m:
        return " ".join(m.group(1).split()) or "(no reason given)"
    return "(no reason given)"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = ET.parse(sys.argv[1]).getroot()
    skipped = []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None or case.get("status") in ("notrun", "skipped"):
            skipped.append((case.get("name"), skip_reason(case)))
    print(f"{len(skipped)} skipped")
    bad = 0
    for name, reason in skipped:
        allowed = any(re.search(a, reason) for a in ALLOWED)
        bad += not allowed
        print(f"  skipped {'(allowed) ' if allowed else ''}{name}: {reason}")
    if bad:
        print(f"{bad} test(s) skipped for something CI always has: a skip here is a failure")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
