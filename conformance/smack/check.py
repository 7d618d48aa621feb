#!/usr/bin/env python3
"""Reads the Smack integration test framework's logs, one per specification,
prints what ran and passed, and fails unless every test that did not pass is
in the known-failures list with its reason. A listed test that passes fails
the check too, so the list can only shrink; but for one whose reason starts
"either:" (its outcome depends on the client's own timing).

    check.py KNOWN_FAILURES LOG_STEM...   (reads LOG_STEM.log)
"""
import re
import sys

PASSED = re.compile(r"INFO: (\S+) \([^)]*\) \u2714")
FAILED = re.compile(r"SEVERE: (\S+) \([^)]*\) failed: (.*)")
IMPOSSIBLE = re.compile(r"INFO: Could not run (\S+)(?: \([^)]*\))? because: (.*)")
FINISHED = re.compile(r"finished: (\d+)/(\d+) \[(\d+) failed\]")
NONE_SELECTED = "No integration tests selected"


def known(path):
    """Test (Class.method, or a class the framework could not run) -> reason."""
    out = {}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            out[name] = reason.strip()
    return out


def short(name):
    """org.x.muc.MultiUserChatIntegrationTest.mucTest -> MultiUserChatIntegrationTest.mucTest"""
    parts = name.split(".")
    if len(parts) >= 2 and parts[-2][:1].isupper():
        return ".".join(parts[-2:])
    return parts[-1]


def main():
    expected = known(sys.argv[1])
    problems, seen = [], set()
    print(f"{'specification':<14} {'run':>4} {'passed':>7} {'failed':>7}  classes not run")
    for stem in sys.argv[2:]:
        spec = stem.rsplit("/", 1)[-1]
        try:
            log = open(stem + ".log", encoding="utf-8", errors="replace").read()
        except OSError as e:
            problems.append(f"{spec}: no log ({e})")
            continue
        passed = [short(m) for m in PASSED.findall(log)]
        failed = [(short(n), why) for n, why in FAILED.findall(log)]
        impossible = [(short(n), why) for n, why in IMPOSSIBLE.findall(log)]
        finished = FINISHED.search(log)
        if finished is None:
            if NONE_SELECTED in log and f"{spec}:none" in expected:
                print(f"{spec:<14} {0:>4} {0:>7} {0:>7}  (this release has no test for it)")
                seen.add(f"{spec}:none")
                continue
            tail = "\n    ".join(log.strip().splitlines()[-5:])
            problems.append(f"{spec}: the run did not finish:\n    {tail}")
            continue
        print(f"{spec:<14} {finished.group(2):>4} {len(passed):>7} {len(failed):>7}  {', '.join(n for n, _ in impossible) or '-'}")
        if len(passed) != int(finished.group(1)) or len(failed) != int(finished.group(3)):
            problems.append(f"{spec}: the log says {finished.group(0)!r} but {len(passed)} passed and {len(failed)} failed lines were read")
        for name, why in failed + impossible:
            seen.add(name)
            if name not in expected:
                problems.append(f"{spec}: {name} failed, and is not a known failure: {why[:300]}")
        for name in passed:
            if name in expected and not expected[name].startswith("either:"):
                problems.append(f"{spec}: {name} passes now: take it off {sys.argv[1]}")
    for problem in problems:
        print("smack: FAILED: " + problem, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"smack: OK: every test ran and passed but the {len(seen)} known failures and untested specifications")


if __name__ == "__main__":
    main()
