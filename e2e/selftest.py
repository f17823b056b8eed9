#!/usr/bin/env python3
"""The self-test of the e2e's own logic, which e2e/run.sh runs before the e2e: that its waits end
at their bounds or as soon as a process of the cluster has exited, that a run ends at its first
failing step and names it, and that no kubectl request can wait forever. Needs no root and no
cluster; ends with `e2e selftest: N passed, N failed`."""

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cluster as cl
from e2e import E2E, Skip


class Waits(unittest.TestCase):
    def test_a_wait_returns_what_its_check_found(self):
        answers = iter([None, [], "found"])
        self.assertEqual(cl.wait_for("a thing", lambda: next(answers), 60, interval=0), "found")

    def test_a_wait_past_its_bound_names_its_step_and_the_last_answer(self):
        with self.assertRaises(AssertionError) as raised:
            cl.wait_for("claim data Bound", lambda: None, -1, interval=0)
        self.assertIn("waiting for claim data Bound", str(raised.exception))

    def test_a_process_that_exited_ends_the_wait_at_once(self):
        checks = []

        def dead():
            raise AssertionError("processes exited: kubelet (exit 2)")
        with self.assertRaises(AssertionError) as raised:
            cl.wait_for("pod app Running", lambda: checks.append(1), 3600, alive=dead)
        self.assertIn("kubelet (exit 2)", str(raised.exception))
        self.assertEqual(len(checks), 1, "the wait went on after the process was found gone")

    def test_every_kubectl_request_has_a_timeout(self):
        seen = []
        real_run = subprocess.run
        subprocess.run = lambda argv, **kw: seen.append(argv) or subprocess.CompletedProcess(argv, 0, "", "")
        try:
            with tempfile.TemporaryDirectory() as work:
                cl.Cluster(Path(work)).kubectl("get", "pods")
        finally:
            subprocess.run = real_run
        self.assertIn(f"--request-timeout={cl.KUBECTL}s", seen[0])


class Runs(unittest.TestCase):
    def test_a_run_ends_at_its_first_failing_step_and_names_it(self):
        ran = []

        def passes():
            ran.append("passes")

        def fails():
            ran.append("fails")
            raise AssertionError("timed out after 60s waiting for claim data Bound")

        def later():
            ran.append("later")
        t = E2E(None)
        t.run([("first", passes), ("second", fails), ("third", later)])
        self.assertEqual(ran, ["passes", "fails"])
        self.assertEqual([(r[0], r[1]) for r in t.results], [("first", "PASS"), ("second", "FAIL"), ("third", "FAIL")])
        self.assertEqual(t.results[2][3], "not run: 'second' failed")

    def test_a_skipped_step_does_not_end_the_run(self):
        def skipped():
            raise Skip("not on this machine")
        ran = []
        t = E2E(None)
        t.run([("first", skipped), ("second", lambda: ran.append("second"))])
        self.assertEqual(ran, ["second"])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=0).result
    failed = len(result.failures) + len(result.errors)
    print(f"e2e selftest: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
