#!/usr/bin/env python3
"""check.py against logs written here in the framework's own line formats:
what runs again, and how a later run's outcome counts.

    python3 conformance/smack/test_check.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check.py")
KNOWN = """# known failures
Room.flaky either: passes or fails by the client's timing
Room.broken the server does not do this yet
"""


def log(passed=(), failed=()):
    lines = [f"INFO: {name} (Normal) \u2714" for name in passed]
    lines += [f"SEVERE: {name} (Normal) failed: java.lang.AssertionError: {name} saw 2" for name in failed]
    total = len(passed) + len(failed)
    lines.append(f"INFO: SmackIntegrationTestFramework[x] finished: {len(passed)}/{total} [{len(failed)} failed]")
    return "\n".join(lines) + "\n"


class Check(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.known = os.path.join(self.dir.name, "known.txt")
        with open(self.known, "w", encoding="utf-8") as f:
            f.write(KNOWN)
        self.stem = os.path.join(self.dir.name, "XEP-0045")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, suffix, text):
        with open(self.stem + suffix, "w", encoding="utf-8") as f:
            f.write(text)

    def run_check(self, *args):
        return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True)

    def again(self):
        out = self.run_check("--again", self.known, self.stem)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.strip()

    def test_only_unlisted_failures_run_again(self):
        self.write(".log", log(passed=["Room.a"], failed=["Room.b", "Room.c", "Room.flaky", "Room.broken"]))
        self.assertEqual(self.again(), "Room.b,Room.c")

    def test_a_test_that_passes_later_passes_and_its_first_failure_is_printed(self):
        self.write(".log", log(passed=["Room.a"], failed=["Room.b", "Room.broken"]))
        self.write(".again1.log", log(failed=["Room.b"]))
        self.write(".again2.log", log(passed=["Room.b"]))
        self.assertEqual(self.again(), "")
        out = self.run_check(self.known, self.stem)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("XEP-0045          3       2       1", out.stdout)
        self.assertIn("Room.b failed on its first run and passed on run 3; the first failure: java.lang.AssertionError: Room.b saw 2", out.stdout)

    def test_a_test_that_fails_every_run_fails_the_check(self):
        self.write(".log", log(passed=["Room.a"], failed=["Room.b"]))
        for n in (1, 2, 3):
            self.write(f".again{n}.log", log(failed=["Room.b"]))
        self.assertEqual(self.again(), "Room.b")
        out = self.run_check(self.known, self.stem)
        self.assertEqual(out.returncode, 1)
        self.assertIn("Room.b failed in all 4 of its runs, and is not a known failure", out.stderr)

    def test_runs_count_in_the_order_they_ran(self):
        # again10 ran after again9 and again2: its pass is the last word.
        self.write(".log", log(failed=["Room.b"]))
        for n in (1, 2, 9):
            self.write(f".again{n}.log", log(failed=["Room.b"]))
        self.write(".again10.log", log(passed=["Room.b"]))
        out = self.run_check(self.known, self.stem)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("passed on run 5", out.stdout)

    def test_a_later_run_that_did_not_finish_fails_the_check(self):
        self.write(".log", log(failed=["Room.b"]))
        self.write(".again1.log", "INFO: started\n")
        out = self.run_check(self.known, self.stem)
        self.assertEqual(out.returncode, 1)
        self.assertIn("the run did not finish", out.stderr)

    def test_a_listed_failure_that_passes_fails_the_check(self):
        self.write(".log", log(passed=["Room.broken", "Room.flaky"]))
        out = self.run_check(self.known, self.stem)
        self.assertEqual(out.returncode, 1)
        self.assertIn("Room.broken passes now", out.stderr)
        self.assertNotIn("Room.flaky", out.stderr)


if __name__ == "__main__":
    unittest.main()
