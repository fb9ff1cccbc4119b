#!/usr/bin/python3
"""Checks of the harness's arithmetic (dlio_truth.py, compare.py) on DLIO
output files written here with known figures, and on a verdict that already
has issue 48's fields (`worker_startup_ns`, `verdict.checkpoint`), so that
the harness is ready before dlprof is:

    /usr/bin/python3 bench/dlio/test_harness.py
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import compare, format_table  # noqa: E402
from dlio_truth import run_truth  # noqa: E402


def _block(loads, computes, barrier):
    """DLIO's record of one block whose steps waited `loads`, computed
    `computes` and spent `barrier` a step in the barrier."""
    proc = [l + c for l, c in zip(loads, computes)]
    total = sum(proc) + barrier * len(loads)
    return {"load": loads, "compute": computes, "proc": proc, "au": 100.0 * sum(computes) / total}, total


def write_run(out):
    """One rank, 2 epochs; epoch 1 has a checkpoint after its 2nd step (2 blocks)."""
    b11, t11 = _block([0.30, 0.01], [0.10, 0.10], 0.0)
    b12, t12 = _block([0.02, 0.02], [0.10, 0.10], 0.0)
    b21, t21 = _block([0.05, 0.01, 0.01, 0.01], [0.10] * 4, 0.0)
    output = {"host_memory_GB": 1.0}
    for e, blocks in (("1", {"block1": b11, "block2": b12}), ("2", {"block1": b21})):
        output[e] = {k: {b: blocks[b][k] for b in blocks} for k in ("load", "compute", "proc", "au")}
    stats = {
        "1": {"start": "2026-01-01T00:00:00.000000", "end": "2026-01-01T00:00:01.500000",
              "save_ckpt1": {"start": "2026-01-01T00:00:00.700000", "end": "2026-01-01T00:00:00.950000",
                             "duration": 0.25}},
        "2": {"start": "2026-01-01T00:00:01.500000", "end": "2026-01-01T00:00:02.000000"},
    }
    with open(os.path.join(out, "0_output.json"), "w") as f:
        json.dump(output, f)
    with open(os.path.join(out, "0_per_epoch_stats.json"), "w") as f:
        json.dump(stats, f)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"metric": {"train_au_mean_percentage": 50.0, "checkpoint_size_GB": 1 / 1024}}, f)
    return t11 + t12 + t21


class Harness(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.train = write_run(self.tmp.name)
        self.truth = run_truth(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_truth(self):
        job, r0 = self.truth["job"], self.truth["ranks"][0]
        self.assertEqual(job["steps"], 8)
        self.assertAlmostEqual(job["wait_s"], 0.43)
        self.assertAlmostEqual(job["compute_s"], 0.8)
        self.assertAlmostEqual(job["train_s"], self.train)  # recovered from compute / AU
        self.assertAlmostEqual(job["other_s"], 0.0)
        self.assertAlmostEqual(job["loop_s"], 2.0)
        self.assertAlmostEqual(job["checkpoint_s"], 0.25)
        self.assertEqual(job["checkpoint_writes"], 1)
        self.assertEqual(job["checkpoint_bytes"], 1024 ** 2)
        self.assertEqual([e["first_wait_s"] for e in r0["epochs"]], [0.30, 0.05])
        self.assertAlmostEqual(job["wait_share_of_loop_pct"], 21.5)

    def test_compare_with_issue_48_fields(self):
        # Each epoch: iter(loader), 4 batches, the closing call.
        steps = [{"batch_wait_ns": int(x * 1e9), "request": r} for x, r in
                 ((0.09, "iter"), (0.2, "batch"), (0.01, "batch"), (0.02, "batch"),
                  (0.02, "batch"), (0.001, "end"), (0.01, "iter"), (0.03, "batch"),
                  (0.01, "batch"), (0.01, "batch"), (0.01, "batch"), (0.001, "end"))]
        summary = {
            "verdict": {
                "bound": "data",
                "loop": {"ns": int(1.9e9), "basis": "dataloader"},
                "batch_wait": {"ns": int(0.412e9), "steps": 8, "per_mille": 216, "reading_ns": 1,
                               "preprocessing_ns": 2, "handover_ns": 3, "worker_startup_ns": int(0.3e9),
                               "cause": "worker_startup"},
                "checkpoint": {"ns": int(0.24e9), "writes": 1, "bytes": 1024 ** 2 + 700,
                               "blocking_ns": int(0.24e9), "background_ns": 0, "per_mille": 126},
            },
            "ranks": {"0": {"batch_wait_ns": int(0.412e9), "loop_ns": int(1.9e9), "steps": steps,
                            "worker_startup_ns": int(0.3e9)}},
        }
        res = compare(self.truth, summary, "dlprof verdict: test")
        rows = {r["figure"]: r for r in res["rows"]}
        self.assertAlmostEqual(rows["batch wait (s)"]["ratio"], 0.412 / 0.43)
        self.assertEqual(rows["batch waits (steps)"]["dlprof"], 8)
        self.assertEqual(rows["checkpoints (rank 0's saves)"]["dlprof"], 1)
        self.assertAlmostEqual(rows["checkpoint blocking (s)"]["ratio"], 0.24 / 0.25)
        self.assertAlmostEqual(rows["worker start-up <= first waits (s)"]["dlio"], 0.35)
        rank = res["ranks"][0]
        # An epoch's first wait, as DLIO's first step has it: iter(loader) and
        # the first batch.
        self.assertEqual([round(x, 6) for x in rank["first_waits_s"][1]], [0.29, 0.04])
        self.assertEqual(rank["steps"], [8, 8])
        self.assertEqual([round(x, 6) for x in rank["closing_calls_s"]], [0.001, 0.001])
        self.assertIn("worker start-up", format_table("t", res))

    def test_compare_without_a_loop(self):
        summary = {"verdict": {"bound": "unknown", "loop": {"ns": int(5e9), "basis": "run"},
                               "batch_wait": None, "batch_wait_missing": "no DataLoader iteration seen"},
                   "ranks": {"0": {"batch_wait_ns": 0, "loop_ns": 0, "steps": []}}}
        res = compare(self.truth, summary, "dlprof verdict: no training loop seen")
        rows = {r["figure"]: r for r in res["rows"]}
        self.assertIsNone(rows["batch wait (s)"]["dlprof"])
        self.assertIn("(this dlprof has no verdict.checkpoint)", format_table("t", res))


if __name__ == "__main__":
    unittest.main()
