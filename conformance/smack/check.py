#!/usr/bin/env python3
"""Reads the Smack integration test framework's logs, one per specification,
prints what ran and passed, and fails unless every test that did not pass is
in the known-failures list with its reason. A listed test that passes fails
the check too, so the list can only shrink; but for one whose reason starts
"either:" (its outcome depends on the client's own timing).

A specification's first run is LOG_STEM.log; a test that failed there and
is not listed may have been run again on its own (LOG_STEM.again1.log,
LOG_STEM.again2.log ...): its last run decides, and each such test is printed
with the failure of its first run.

    check.py KNOWN_FAILURES LOG_STEM...           the check
    check.py --again KNOWN_FAILURES LOG_STEM      the tests to run again, comma-separated
"""
import glob
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


class Run:
    """One run of the framework, as its log tells it."""

    def __init__(self, path):
        log = open(path, encoding="utf-8", errors="replace").read()
        self.path = path
        self.passed = [short(m) for m in PASSED.findall(log)]
        self.failed = [(short(n), why) for n, why in FAILED.findall(log)]
        self.impossible = [(short(n), why) for n, why in IMPOSSIBLE.findall(log)]
        self.finished = FINISHED.search(log)
        self.none_selected = NONE_SELECTED in log
        self.tail = "\n    ".join(log.strip().splitlines()[-5:])

    def miscounted(self):
        """What is wrong with the log's own count of its tests, if anything."""
        f = self.finished
        if len(self.passed) != int(f.group(1)) or len(self.failed) != int(f.group(3)):
            return f"the log says {f.group(0)!r} but {len(self.passed)} passed and {len(self.failed)} failed lines were read"
        return None


def again_runs(stem):
    """The runs of single tests after the first, in the order they ran."""
    numbered = re.compile(re.escape(stem) + r"\.again(\d+)\.log")
    runs = [(int(m.group(1)), p) for p in glob.glob(glob.escape(stem) + ".again*.log") if (m := numbered.fullmatch(p))]
    return [Run(p) for _, p in sorted(runs)]


def outcomes(expected, first, later):
    """Each test that did not pass in the first run -> (why it first failed,
    the number of its runs, whether its last run passed), and the problems
    the logs show."""
    problems = []
    unexpected = {name: why for name, why in first.failed if name not in expected}
    runs = {name: [False] for name in unexpected}
    for run in later:
        if run.finished is None:
            problems.append(f"{run.path}: the run did not finish:\n    {run.tail}")
            continue
        if wrong := run.miscounted():
            problems.append(f"{run.path}: {wrong}")
        for name in run.passed:
            if name in runs:
                runs[name].append(True)
        for name, _ in run.failed:
            if name in runs:
                runs[name].append(False)
    return {name: (unexpected[name], len(r), r[-1]) for name, r in runs.items()}, problems


def check(known_path, stems):
    expected = known(known_path)
    problems, seen = [], set()
    print(f"{'specification':<14} {'run':>4} {'passed':>7} {'failed':>7}  classes not run")
    for stem in stems:
        spec = stem.rsplit("/", 1)[-1]
        try:
            first = Run(stem + ".log")
        except OSError as e:
            problems.append(f"{spec}: no log ({e})")
            continue
        if first.finished is None:
            if first.none_selected and f"{spec}:none" in expected:
                print(f"{spec:<14} {0:>4} {0:>7} {0:>7}  (this release has no test for it)")
                seen.add(f"{spec}:none")
                continue
            problems.append(f"{spec}: the run did not finish:\n    {first.tail}")
            continue
        if wrong := first.miscounted():
            problems.append(f"{spec}: {wrong}")
        retried, later_problems = outcomes(expected, first, again_runs(stem))
        problems += later_problems
        passed_later = [name for name, (_, _, passed) in retried.items() if passed]
        failed = len(first.failed) - len(passed_later)
        print(f"{spec:<14} {first.finished.group(2):>4} {len(first.passed) + len(passed_later):>7} {failed:>7}  {', '.join(n for n, _ in first.impossible) or '-'}")
        for name, (why, count, passed) in sorted(retried.items()):
            if passed:
                print(f"  {name} failed on its first run and passed on run {count}; the first failure: {why[:300]}")
            else:
                runs = f" in all {count} of its runs" if count > 1 else ""
                problems.append(f"{spec}: {name} failed{runs}, and is not a known failure: {why[:300]}")
        for name, why in first.failed + first.impossible:
            if name in expected:
                seen.add(name)
            elif name not in retried:
                problems.append(f"{spec}: {name} failed, and is not a known failure: {why[:300]}")
        for name in first.passed:
            if name in expected and not expected[name].startswith("either:"):
                problems.append(f"{spec}: {name} passes now: take it off {known_path}")
    for problem in problems:
        print("smack: FAILED: " + problem, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"smack: OK: every test ran and passed but the {len(seen)} known failures and untested specifications")


def again(known_path, stem):
    """Prints the tests of `stem`'s first run that failed, are not known
    failures, and have not passed since."""
    expected = known(known_path)
    try:
        first = Run(stem + ".log")
    except OSError:
        return
    if first.finished is None:
        return
    retried, _ = outcomes(expected, first, again_runs(stem))
    print(",".join(name for name, (_, _, passed) in sorted(retried.items()) if not passed))


def main():
    if sys.argv[1] == "--again":
        again(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[1], sys.argv[2:])


if __name__ == "__main__":
    main()
