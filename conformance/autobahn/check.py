#!/usr/bin/env python3
"""Reads the Autobahn fuzzingclient's index.json files (one per client the
cases were split between) and fails unless all of the suite's cases ran, every
one is OK or INFORMATIONAL and every closing handshake is clean, apart from
the known gaps below. A known gap that now passes also fails the check, so the
list only ever shrinks.

    check.py build/autobahn/report/part1/index.json build/autobahn/report/part2/index.json
"""

import collections
import json
import sys

GOOD = {"OK", "INFORMATIONAL"}

# Case-id prefixes not yet passing, each with the behaviour the suite reports
# for it today and why. Issue 9 removes them.
KNOWN_GAPS = {}

# Every case of autobahntestsuite 0.8.2's fuzzingclient: a split that leaves
# some out fails the check.
ALL_CASES = 517


def gap(case):
    return next((KNOWN_GAPS[p] for p in KNOWN_GAPS if case == p or (p.endswith(".") and case.startswith(p))), None)


def case_key(case):
    return [int(part) for part in case.split(".")]


def main(paths):
    results = {}
    for path in paths:
        with open(path) as f:
            results.update(next(iter(json.load(f).values())))
    counts = collections.Counter(r["behavior"] for r in results.values())
    problems, gaps_seen = [], collections.Counter()
    for case in sorted(results, key=case_key):
        r = results[case]
        known = gap(case)
        if known:
            expected, why = known
            if r["behavior"] in GOOD and r["behaviorClose"] in GOOD:
                problems.append(f"{case}: passes now ({r['behavior']}); take it off KNOWN_GAPS in {__file__}")
            elif r["behavior"] != expected:
                problems.append(f"{case}: {r['behavior']}, expected the known gap's {expected} ({why})")
            gaps_seen[why] += 1
            continue
        if r["behavior"] not in GOOD:
            problems.append(f"{case}: {r['behavior']}")
        if r["behaviorClose"] not in GOOD:
            problems.append(f"{case}: closing handshake {r['behaviorClose']}")
    total = len(results)
    if total != ALL_CASES:
        problems.append(f"{total} cases ran, not the suite's {ALL_CASES}: the split in run.sh leaves some out")
    summary = ", ".join(f"{n} {b}" for b, n in counts.most_common())
    print(f"autobahn: {total} cases: {summary}")
    for why, n in gaps_seen.items():
        print(f"autobahn: known gap, {n} cases: {why}")
    if problems:
        print(f"autobahn: FAILED: {len(problems)} problems:", *problems[:50], sep="\n  ", file=sys.stderr)
        return 1
    print("autobahn: every other case OK or INFORMATIONAL, every closing handshake clean")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
