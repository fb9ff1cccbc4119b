"""examples/analyze.py on a real job: examples/mini_loader.py (two epochs,
forked workers reading 64 files) and two ranks of a loop wrapped in
dlprof.annotate_loader, traced as one run. The script must run and print
its three answers; its functions must give what the jsonl of the same
traces says: the file with the most read time and its reader, 256 reads of
16 KiB per epoch, and each rank's load_batch durations step by step."""

import collections
import importlib.util
import os
import subprocess
import textwrap

import dlprof  # the build's (build/python: on PYTHONPATH under ctest)
import dltest

PACKAGE = dltest.PYTHON_DIR
EXAMPLES = os.environ.get("DLPROF_EXAMPLES", os.path.join(dltest.ROOT, "examples"))

RANK_LOOP = textwrap.dedent("""
    import sys
    import dlprof

    def batches(paths):
        for p in paths:
            with open(p, "rb", buffering=0) as f:
                yield f.read(8192)

    for batch in dlprof.annotate_loader(batches(sys.argv[1:]), epoch=0):
        sum(batch)
""")


class ExampleTest(dltest.TraceTestCase):

    def test_analyze_mini_loader(self):
        env = {"DLPROF_RUN_ID": "example", "PYTHONPATH": PACKAGE}
        dataset = os.path.join(self.data, "mini")
        self.run_traced([dltest.SYSTEM_PYTHON, os.path.join(EXAMPLES, "mini_loader.py"),
                         dataset], env, timeout=120)
        files = sorted(os.path.join(dataset, f) for f in os.listdir(dataset))[:6]
        for rank in ("0", "1"):
            self.run_traced([dltest.SYSTEM_PYTHON, "-c", RANK_LOOP] + files,
                            dict(env, RANK=rank), timeout=60)
        events = self.decode().events

        p = subprocess.run([dltest.SYSTEM_PYTHON, os.path.join(EXAMPLES, "analyze.py"),
                            self.traces], capture_output=True, text=True, timeout=120,
                           env=dict(dltest.base_env(), PYTHONPATH=PACKAGE))
        self.assertEqual(p.returncode, 0, p.stderr)
        for heading in ("== 1.", "== 2.", "== 3."):
            self.assertIn(heading, p.stdout)
        self.assertIn("epoch 0", p.stdout)

        spec = importlib.util.spec_from_file_location("analyze",
                                                      os.path.join(EXAMPLES, "analyze.py"))
        analyze = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(analyze)
        ev = dlprof.read_events(self.traces)
        procs = dlprof.read_processes(self.traces)
        regions = dlprof.read_regions(self.traces)

        # 1. The file with the most read time, and who read it: every read
        # that moved data (POSIX and STDIO: the script's own source is read
        # with fread), once (not the read(2) nested in an fread).
        read_kinds = set(ev.loc[ev["op"] == "read", "kind"].astype(str))
        self.assertIn("read", read_kinds)
        read_time = collections.Counter()
        for e in events:
            if e["name"] in read_kinds and e.get("bytes", 0) > 0 and e.get("path") \
                    and not e.get("nested"):
                read_time[(e["path"], e["pid"])] += e["dur"]
        top = analyze.slowest_files(ev, procs, top=3)
        self.assertTrue(top["read_ms"].is_monotonic_decreasing, top)
        (path, pid), ns = read_time.most_common(1)[0]
        self.assertEqual((top["path"].iloc[0], int(top["pid"].iloc[0])), (path, pid))
        self.assertAlmostEqual(float(top["read_ms"].iloc[0]), ns / 1e6, places=6)
        # Who read it, as the traces say: a loader worker (its parent traced)
        # or, on a busy machine, one of the rank loops reading the same files.
        reader = procs[procs["pid"] == pid].iloc[0]
        ppids = {e["pid"]: e["ppid"] for e in events}
        self.assertEqual(int(top["ppid"].iloc[0]), ppids[pid])
        self.assertEqual(int(reader["ppid"]), ppids[pid])

        # 2. Reads per epoch: 64 files of 64 KiB in 16 KiB reads, each epoch.
        sizes = analyze.read_sizes_per_region(ev, regions)
        for epoch in ("epoch 0", "epoch 1"):
            self.assertEqual(int(sizes.loc[epoch, "count"]), 256)
            self.assertEqual(float(sizes.loc[epoch, "mean"]), 16384.0)
        self.assertEqual(int(sizes.loc["epoch epoch=0", "count"]), 2 * len(files))

        # 3. Batch wait, step by step, per rank: the load_batch regions.
        waits = analyze.batch_wait(regions)
        want = collections.defaultdict(list)
        for e in sorted(events, key=lambda e: e["ts"]):
            if e["cat"] == "app" and e["name"] == "load_batch":
                want[e["rank"]].append(e["dur"] / 1e6)
        self.assertEqual(sorted(waits.columns), [0, 1])
        for rank, durations in want.items():
            self.assertGreaterEqual(len(durations), len(files))
            self.assertEqual([round(x, 6) for x in waits[rank].dropna()],
                             [round(x, 6) for x in durations])


if __name__ == "__main__":
    import unittest
    unittest.main()
