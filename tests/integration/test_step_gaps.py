"""Loops without a DataLoader whose fetch is mostly not I/O
(scripts/step_gaps.py), against the program's own clocks:

- a decoder's work between a file's reads (0.2 ms after each 16 KiB read,
  joined): the whole stretch was the wait's "reading 100 %", and the advice
  faster storage (a review's ImageFolder loop: 320.6 ms "reading" where its
  data calls took 10.4 ms). The wait's reading is now its time in data
  calls, within the program's clock around each of them (no more than it,
  no less than it less 20 us a call: perf_counter's and Python's own), and
  the rest preprocessing, the larger part and the cause;
- a fetch whose reads lie more than the join apart (8 ms of CPU work after
  each): "not held back by data (batch wait 2.6 %)" where the program's
  clock had its fetch at 85 % of the loop. Its wait is now not measured
  (batch_wait null, batch_wait_missing saying why and naming
  dlprof.region), the bound unknown;
- a threading.Thread prefetcher feeding a queue.Queue: "not held back by
  data (batch wait 0.0 %)", the loop blocked in get() 75 % of it by its
  clock. Likewise not measured, the reason naming the other thread;
- a map of a data file whose pages are in memory, read through by the
  fetch (a np.memmap's get_batch): "not held back by data (batch wait
  0.0 %)" where its clock had the fetch at 33 % of a nanoGPT-style loop.
  Likewise not measured while a map is live through the loop, and the
  region the reason names measures it.

Each of the three runs under DLPROF_KEEP too: the whole run's verdict from
the counters said "not held back by data (batch wait 0.0 % of the loop)"
beside the kept events' "not known" (docs/ANALYSIS_RUNS.md, "Bounded
traces"); it now says why the wait is not measured, as they do."""

import json
import unittest

import dltest

SCRIPT = dltest.script("step_gaps.py")
CALL_SLACK_NS = 20000  # perf_counter's two reads and Python's call around a data call


def descheduled(truth):
    """Whether the loop's thread, which never blocks in its fetch (its files
    are in the page cache), was off a CPU a quarter of it or more: a machine
    so oversubscribed that gaps past the 1 ms join split the fetch's reads,
    and those gaps, with reads at their edges, are no part of the measured
    wait (load 10 on 2 cores: 6 runs of 6 below the lower bounds)."""
    return truth["fetch_ns"] - truth["fetch_cpu_ns"] > truth["fetch_ns"] // 4


class StepGapsTest(dltest.TraceTestCase):

    def run_mode(self, mode, env=None):
        out = self.tmp + "/truth.json"
        p = self.run_traced([dltest.SYSTEM_PYTHON, SCRIPT, mode, self.data, out],
                            env=dict(env or {}, PYTHONPATH=dltest.PYTHON_DIR), timeout=60)
        self.assertEqual(p.stdout.strip().splitlines()[-1], "done")
        self.decode()
        with open(out) as f:
            return json.load(f), self.summary()["verdict"]

    def assert_unmeasured(self, v, why):
        """The kept events' verdict and the whole run's: no batch wait, the
        bound unknown, `why` in the reason, no "not held back" anywhere."""
        whole = self.summary()["whole_run"]["verdict"]
        for what, verdict in (("kept events", v), ("whole run", whole)):
            self.assertEqual(verdict["bound"], "unknown", (what, verdict))
            self.assertIsNone(verdict["batch_wait"], (what, verdict))
            self.assertIn(why, verdict["batch_wait_missing"], (what, verdict))
            self.assertIn("dlprof.region", verdict["batch_wait_missing"], (what, verdict))
        self.assertNotIn("not held back by data", self.summary(text=True))

    def test_work_between_joined_reads_is_not_reading(self):
        truth, v = self.run_mode("decode")
        self.assertEqual(v["loop"]["basis"], "steps", v)
        self.assertNotIn("faster storage", self.summary(text=True))
        w = v["batch_wait"]
        if w is None:
            # A machine so busy that the decoding between most reads took 1
            # ms or more (descheduled): those reads lie spread out, and the
            # wait is not measured (the next test's case).
            self.assertIn("spread out", v["batch_wait_missing"])
            return
        # Reading: the data calls' time, as the program's clock around each.
        self.assertLessEqual(w["reading_ns"], truth["calls_ns"], (w, truth))
        if not descheduled(truth):
            self.assertGreaterEqual(w["reading_ns"],
                                    truth["calls_ns"] - CALL_SLACK_NS * truth["calls"],
                                    (w, truth))
        # The wait no more than the fetch's clock; the decoding its larger part.
        self.assertLessEqual(w["ns"], truth["fetch_ns"], (w, truth))
        self.assertEqual(w["cause"], "preprocessing", w)
        self.assertEqual(w["reading_ns"] + w["preprocessing_ns"], w["ns"], w)

    def test_a_bounded_traces_whole_run_splits_the_wait_as_its_events(self):
        """64 KiB reads with 0.3 ms of decoding after each, under DLPROF_KEEP:
        the whole run's counters (docs/ANALYSIS_RUNS.md, "Bounded traces")
        counted all of the wait reading (reading 100 %, the kept events'
        verdict preprocessing). Now each verdict's reading is the calls'
        time by the program's clock around each, the rest preprocessing, and
        the two verdicts agree."""
        truth, v = self.run_mode("chunks", env={"DLPROF_KEEP": "1h"})
        whole = self.summary()["whole_run"]
        c, w = whole["causes"], v["batch_wait"]
        self.assertEqual(v["loop"]["basis"], "steps", v)
        self.assertEqual(whole["steps"], truth["steps"], whole)
        if w is None:  # descheduled past the join between most reads (as above)
            self.assertIn("spread out", v["batch_wait_missing"])
            return
        slack = CALL_SLACK_NS * truth["calls"]
        for what, reading, wait in (("whole run", c["reading_ns"], whole["batch_wait_ns"]),
                                    ("kept events", w["reading_ns"], w["ns"])):
            # Reading: the data calls' time (the first window's may begin
            # inside a call: a call more); the wait no more than the fetches.
            self.assertLessEqual(reading, truth["calls_ns"] + slack, (what, c, w, truth))
            self.assertLessEqual(wait, truth["fetch_ns"], (what, whole, w, truth))
            if descheduled(truth):
                continue
            self.assertGreaterEqual(reading, truth["calls_ns"] - slack, (what, c, w, truth))
            # The decoding between the reads: most of the rest of the fetch.
            # (Not all: a busy loop descheduled past the 1 ms join leaves its
            # gap out of the wait, in both verdicts alike: 123.4 ms of a
            # 151.6 ms fetch in a clean-clone CI run.)
            self.assertGreaterEqual(wait - reading,
                                    0.5 * (truth["fetch_ns"] - truth["calls_ns"]) - slack,
                                    (what, whole, w, truth))
        self.assertEqual(c["cause"], "preprocessing", c)
        self.assertEqual(whole["verdict"]["batch_wait"]["cause"], "preprocessing", whole)
        self.assertEqual(c["reading_ns"] + c["preprocessing_ns"], whole["batch_wait_ns"], c)
        # The two verdicts within a few % of the wait of each other. (Under
        # load the preprocessing parted by 4.4 ms of a 107 ms wait, 2 % + 1 ms
        # allowed, in a clean-clone run beside two other jobs; the reading
        # within 0.05 ms. Where the split's two sides part on a loaded
        # machine is not pinned down: both stayed within the truth above;
        # a flake hunt at load 6-8 on 2 cores saw 11.0 ms of a 117 ms wait.)
        self.assertLessEqual(abs(c["reading_ns"] - w["reading_ns"]), 0.02 * w["ns"] + slack,
                             (c, w))
        if not descheduled(truth):
            self.assertLessEqual(abs(c["preprocessing_ns"] - w["preprocessing_ns"]),
                                 0.05 * w["ns"] + 1000000, (c, w))

    def test_reads_spread_out_leave_the_wait_unmeasured(self):
        truth, v = self.run_mode("spread", env={"DLPROF_KEEP": "1h"})
        self.assertEqual(v["loop"]["basis"], "steps", v)
        # The fetch by the program's clock: most of the loop.
        self.assertGreater(truth["fetch_ns"], 0.5 * v["loop"]["ns"], (truth, v["loop"]))
        self.assert_unmeasured(v, "spread out")

    def test_a_prefetcher_threads_reading_leaves_the_wait_unmeasured(self):
        truth, v = self.run_mode("prefetch", env={"DLPROF_KEEP": "1h"})
        self.assertEqual(v["loop"]["basis"], "steps", v)
        self.assertGreater(truth["wait_ns"], 0.5 * truth["loop_ns"], truth)
        self.assert_unmeasured(v, "another thread")
        self.assertIn("dlprof.annotate_loader", v["batch_wait_missing"])
        # The region to add is the one --batch-region names, in both.
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json", "--batch-region",
                        "next_batch", self.traces], dltest.base_env())
        s = json.loads(p.stdout)
        for verdict in (s["verdict"], s["whole_run"]["verdict"]):
            self.assertIn('dlprof.region("next_batch")', verdict["batch_wait_missing"])
            self.assertNotIn("load_batch", verdict["batch_wait_missing"])

    def test_reading_through_a_live_map_leaves_the_wait_unmeasured(self):
        truth, v = self.run_mode("map", env={"DLPROF_KEEP": "1h"})
        self.assertEqual(v["loop"]["basis"], "steps", v)
        self.assertGreater(truth["fetch_ns"], 0.3 * truth["loop_ns"], truth)
        self.assert_unmeasured(v, "memory map")
        # (The region the next test's fetch is in.)
        self.assertIn('dlprof.region("load_batch")', v["batch_wait_missing"])

    def test_the_region_the_reason_names_measures_the_fetch(self):
        truth, v = self.run_mode("map_batch")
        self.assertEqual(v["bound"], "data", v)
        w = v["batch_wait"]
        # Between the clock around the fetch and the clock inside the region
        # (its enter and exit: at load 3 on 2 cores the process was off the
        # CPU there, 75 ms of 289 ms over 8 steps, while the region matched
        # the clock inside it within 7 ms).
        self.assertLessEqual(w["ns"], truth["fetch_ns"], (w, truth))
        self.assertGreater(w["ns"], 0.9 * truth["inside_ns"] - 8 * 1000000, (w, truth))

    def test_the_same_slices_out_of_memory_are_no_unseen_wait(self):
        # The map closed before the loop (its bytes copied out first): no
        # read through a map is hidden, and the measured wait stands.
        # The whole run's counters likewise: a map closed before the first
        # step is the start-up's.
        truth, v = self.run_mode("map_copy", env={"DLPROF_KEEP": "1h"})
        whole = self.summary()["whole_run"]["verdict"]
        for what, verdict in (("kept events", v), ("whole run", whole)):
            self.assertIsNotNone(verdict["batch_wait"], (what, verdict))
            self.assertEqual(verdict["bound"], "neither", (what, verdict))
        self.assertEqual(v["loop"]["basis"], "steps", v)


if __name__ == "__main__":
    unittest.main()
