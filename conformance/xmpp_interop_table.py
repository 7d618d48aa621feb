#!/usr/bin/env python3
"""The XMPP-Interop-Testing suite's results by specification: each test in
the suite's log (passed, failed, or not possible because the server lacks
what it needs) under the document its class names in its
@SpecificationReference, read from the suite's jar with javap.

    xmpp_interop_table.py SUITE_JAR SUITE_LOG
"""
import re
import subprocess
import sys
import zipfile
from collections import defaultdict

PASSED = re.compile(r"INFO: (\w+)\.(\w+) \([^)]*\) Success")
FAILED = re.compile(r"SEVERE: (\w+)\.(\w+) \([^)]*\) Failed")
IMPOSSIBLE = re.compile(r"INFO: Could not run (\S+?)(?: \([^)]*\))? because: (.*)")
DOCUMENT = re.compile(r'document="([^"]+)"')


def documents(jar, simple_names):
    """Simple class name -> the document its @SpecificationReference names."""
    paths = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            simple = name.rsplit("/", 1)[-1].removesuffix(".class")
            if name.endswith(".class") and simple in simple_names:
                paths[simple] = name.removesuffix(".class").replace("/", ".")
    out = {}
    if not paths:
        return out
    text = subprocess.run(["javap", "-v", "-cp", jar, *paths.values()], capture_output=True, text=True).stdout
    by_full = {full: simple for simple, full in paths.items()}
    current = None
    for line in text.splitlines():
        if line.startswith("Classfile "):
            path = line.split("!/", 1)[-1].removesuffix(".class").replace("/", ".")
            current = by_full.get(path)
        elif current and current not in out and (m := DOCUMENT.search(line)):
            out[current] = m.group(1)
    return out


def main(jar, log_path):
    log = open(log_path, encoding="utf-8", errors="replace").read()
    passed = set(PASSED.findall(log))
    failed = set(FAILED.findall(log))
    impossible = {}
    for name, why in IMPOSSIBLE.findall(log):
        impossible[name] = why.strip()
    classes = {c for c, _ in passed | failed} | {n.split(".")[0] for n in impossible}
    spec_of = documents(jar, classes)
    rows = defaultdict(lambda: [0, 0, 0])
    for c, _ in passed:
        rows[spec_of.get(c, "(none)")][0] += 1
    for c, _ in failed:
        rows[spec_of.get(c, "(none)")][1] += 1
    for name in impossible:
        rows[spec_of.get(name.split(".")[0], "(none)")][2] += 1
    print(f"{'specification':<16} {'passed':>7} {'failed':>7} {'not possible':>13}")
    for spec in sorted(rows):
        p, f, i = rows[spec]
        print(f"{spec:<16} {p:>7} {f:>7} {i:>13}")
    total = [sum(r[k] for r in rows.values()) for k in range(3)]
    print(f"{'all':<16} {total[0]:>7} {total[1]:>7} {total[2]:>13}")
    if failed:
        print("\nfailed:")
        for c, m in sorted(failed):
            print(f"  {spec_of.get(c, '(none)')}: {c}.{m}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
