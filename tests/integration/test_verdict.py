"""The verdict of unmodified PyTorch training loops, against what each loop
measured itself (scripts/torch_verdict.py: time in next(), the loop's wall
time, batches and optimizer steps), whatever started it: the bottleneck
named, the batch wait and the loop's window within a few per cent, the
steps exact, and one main process with its loader workers."""

import json
import os
import unittest

import dltest
from dltest.pytorch import TorchTestCase

SCRIPT = dltest.script("torch_verdict.py")
MS = 1000000


class VerdictTest(TorchTestCase):

    def verdict(self, mode, wrapper=(), python_args=(), workers=2):
        truth, _ = self.run_truth(SCRIPT, mode, workers, wrapper=wrapper,
                                  python_args=python_args)
        self.decode()
        return truth, self.summary()["verdict"]

    def assert_measured(self, truth, v, workers=2, launchers=0):
        loop, wait = v["loop"], v["batch_wait"]
        self.assertEqual(loop["basis"], "dataloader")
        self.assertEqual(loop["steps"], truth["steps"])
        self.assertTrue(loop["optimizer_steps"])
        # A step per batch received (iter() and the call that found the epoch
        # over are waits of their own, but no batches).
        self.assertEqual(wait["steps"], truth["batches"])
        # The script's clock reads sit just outside the bootstrap's region
        # (a few microseconds of its own work per call, more when the
        # machine descheduled it between the two: up to half a millisecond
        # a call was seen with a compute-bound loop and its two workers on
        # two busy cores, so a millisecond a call is allowed besides 5 %).
        self.assertLess(abs(wait["ns"] - truth["batch_wait_ns"]),
                        5 * MS + truth["batch_wait_ns"] // 20 + MS * wait["steps"], (wait, truth))
        self.assertLess(abs(loop["ns"] - truth["loop_ns"]), 5 * MS + truth["loop_ns"] // 20,
                        (loop, truth))
        self.assertGreater(loop["startup_ns"], 0)  # importing torch, at least
        roles = {r["role"]: r["processes"] for r in v["roles"]}
        self.assertEqual(roles["main"], 1, v["roles"])
        self.assertEqual(roles["loader workers"], workers, v["roles"])
        self.assertEqual(roles["launcher"], launchers, v["roles"])

    def test_a_loop_waiting_on_slow_reads(self):
        truth, v = self.verdict("disk")
        self.assert_measured(truth, v)
        self.assertEqual(v["bound"], "data")
        self.assertEqual(v["findings"][0]["rule"], "batch_wait")

    def test_a_loop_waiting_on_its_workers_cpu_under_timeout(self):
        truth, v = self.verdict("cpu", wrapper=["timeout", "160"])
        self.assert_measured(truth, v, launchers=1)
        self.assertEqual(v["bound"], "data")

    def test_a_compute_bound_loop_under_bash(self):
        truth, v = self.verdict("compute", wrapper=["bash", "-c", '"$0" "$@"; true'])
        self.assert_measured(truth, v, launchers=1)
        # Its workers keep up, but on a loaded machine they may not (the
        # loop then really waits): the verdict follows the loop's own share,
        # away from the 10 % threshold.
        share = truth["batch_wait_ns"] * 1000 // truth["loop_ns"]
        if share < 80:
            self.assertEqual(v["bound"], "neither", (share, v["batch_wait"]))
            self.assertNotIn("batch_wait", [f["rule"] for f in v["findings"]])
        elif share > 120:
            self.assertEqual(v["bound"], "data", (share, v["batch_wait"]))

    @unittest.skipUnless(dltest.LAUNCHER, "the dlprof launcher is not built")
    def test_under_dlprof_run(self):
        out = os.path.join(self.tmp, "truth.json")
        p = dltest.run([dltest.LAUNCHER, "run", "--dir", self.traces, "--no-summary", "--",
                        dltest.SYSTEM_PYTHON, SCRIPT, "cpu", self.data, out],
                       dict(dltest.base_env(), PYTHONPATH=dltest.BOOTSTRAP), timeout=170)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            truth = json.load(f)
        v = self.summary()["verdict"]
        roles = {r["role"]: r["processes"] for r in v["roles"]}
        self.assertEqual((roles["main"], roles["loader workers"]), (1, 2), v["roles"])
        self.assertEqual(v["loop"]["steps"], truth["steps"])
        self.assertEqual(v["bound"], "data")

    def test_isolated_python_says_why_batch_wait_is_missing(self):
        truth, v = self.verdict("cpu", python_args=["-I"], workers=0)
        self.assertIsNone(v["batch_wait"])
        self.assertIn("-I, -E or -S", v["batch_wait_missing"])
        self.assertEqual(truth["steps"], 8)


if __name__ == "__main__":
    unittest.main(verbosity=2)
