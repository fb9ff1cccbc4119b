"""The built-in example (examples/mini_loader.py, what scripts/quickstart.sh
traces): a pool of forked workers reads 64 files of 64 KiB in each of two
epochs, each epoch an annotation region of the main process. The program's
output must not change, and the summary (streamed, regions included) must
give each epoch exactly its workers' reads."""

import json
import os
import subprocess
import unittest

import dltest

EXAMPLE = os.path.join(dltest.HERE, "..", "..", "examples", "mini_loader.py")
FILES, SIZE = 64, 64 * 1024


class ExampleTest(dltest.TraceTestCase):

    def test_epochs_hold_their_workers_reads(self):
        data = os.path.join(self.data, "set")
        cmd = [dltest.SYSTEM_PYTHON, EXAMPLE, data]
        traced, _ = self.assert_same_as_untraced(cmd, timeout=170)
        self.assertIn("epoch 1: read %d bytes" % (FILES * SIZE), traced.stdout)
        trace = self.decode()
        epochs = sorted((e for e in trace.events
                         if e.get("cat") == "app" and e.get("kind") == "region"),
                        key=lambda e: e["ts"])
        self.assertEqual([e["name"] for e in epochs], ["epoch 0", "epoch 1"])
        main_pid = epochs[0]["pid"]
        reads = [e for e in trace.under(data) if e["name"] in dltest.READ_NAMES]
        self.assertEqual(sum(e["bytes"] for e in reads), 2 * FILES * SIZE)
        self.assertNotIn(main_pid, {e["pid"] for e in reads})  # the workers read
        for e in reads:
            self.assertEqual(trace.ppid_of(e["pid"]), main_pid)

        p = subprocess.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {r["name"]: r for r in json.loads(p.stdout)["regions"]}
        for r in epochs:
            # The reads that started while the main process was in the epoch:
            # its workers' (pool.map returns when they are done).
            inside = [e for e in reads if r["ts"] <= e["ts"] < r["ts"] + r["dur"]]
            self.assertEqual(sum(e["bytes"] for e in inside), FILES * SIZE)
            row = rows[r["name"]]
            self.assertEqual(row["instances"], 1)
            self.assertEqual((row["read_ops"], row["read_bytes"]),
                             (len(inside), FILES * SIZE))
            # The exporter names the same region on each of those reads.
            self.assertEqual({e.get("region") for e in inside}, {r["name"]})

        # The verdict: no batch-wait annotation nor GPU here; the data set's
        # 64 files read twice over (two epochs), in reads under 64 KiB
        # (Python's file reads); the main process and its pool's workers.
        verdict = json.loads(p.stdout)["verdict"]
        self.assertIsNone(verdict["batch_wait"])
        self.assertIsNone(verdict["data_stall"])
        rules = {f["rule"] for f in verdict["findings"]}
        self.assertLessEqual({"small_reads", "reread"}, rules)
        # The rules that look at time alone may also fire on a busy machine
        # (one slow open makes a few files "take most of the time").
        self.assertLessEqual(rules - {"small_reads", "reread"}, {"few_files", "metadata"})
        reread = [f for f in verdict["findings"] if f["rule"] == "reread"][0]
        self.assertIn("read 2.0 times over (8.0 MiB read for 4.0 MiB of data)", reread["what"])
        roles = {r["role"]: r["processes"] for r in verdict["roles"]}
        self.assertEqual(roles["main"], 1, json.loads(p.stdout)["processes_stats"].keys())
        # Every process the pool forked, whether or not it got files to read
        # (on a busy machine one worker may take them all).
        workers = {h["pid"] for h in trace.headers if h["ppid"] == main_pid}
        self.assertGreaterEqual(len(workers), len({e["pid"] for e in reads}))
        self.assertEqual(roles["loader workers"], len(workers))
        # ... and as text, first and on one screen.
        text = subprocess.run([dltest.DUMP, "--summary", self.traces], capture_output=True,
                              text=True, timeout=120, check=True).stdout.splitlines()
        self.assertTrue(text[0].startswith("dlprof verdict: "), text[0])
        self.assertLessEqual(len(text), 50)
        self.assertIn("Data files by I/O time (64 data files; docs/ANALYSIS.md, \"File classes\")",
                      text)
        self.assertIn("    ... and 59 more (--top N, --details)", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
