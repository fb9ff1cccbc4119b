"""A bounded trace's whole-run batch wait split by cause (issue 53; docs/
ANALYSIS_RUNS.md, "Bounded traces"), on unmodified PyTorch loops: from the
counters (lib/core/batch_sampler.h, lib/analysis/whole_run_causes.h),
against the full events' split of the same run (DLPROF_KEEP=1h drops
nothing, so one run has both) and against what the loop measured itself.

  - scripts/torch_split.py's loops (10 batches: every one sampled): the
    hand-over and start-up the full events', reading and preprocessing
    within 5 % of the wait of theirs (a fetch's reads are kept in eighths),
    and the wait the full events' exactly, inside the loop's own brackets;
  - scripts/torch_jobs.py's persistent workers: start-up in every pass;
  - scripts/torch_memmap.py's workers reading through maps: their page
    faults are reading (less the full events' hand-over held by faults);
  - nanoGPT's get_batch loops (torch_jobs.py, torch_memmap.py), and one
    that reads a file a sample: each step's wait the reading since the
    step before, split into reading and preprocessing as the full events';
  - scripts/torch_keep.py's 400 small batches: some sampled, the parts
    within 1 % of the wait of the full events' and four standard errors
    of the sample (the summary's `*_error_ns`, never 0 where some waits
    were not sampled, 0 where every one was), the waits counted exactly; and with six of them late (a wait's
    preprocessing the hashed sample would miss) the same, on this host and
    on another node's clock; with DLPROF_KEEP=1s, when most events are gone,
    every wait still counted and split.
"""

import os
import shutil
import subprocess
import unittest

import dltest
from dltest.brackets import BracketsMixin
from dltest.pytorch import TorchTestCase, bootstrap_env

SPLIT = dltest.script("torch_split.py")
KEEP = dltest.script("torch_keep.py")
JOBS = dltest.script("torch_jobs.py")
MEMMAP = dltest.script("torch_memmap.py")
PARTS = ("reading", "preprocessing", "handover", "worker_startup")
# The I/O calls' recorded times may lie this far outside the script's clock
# reads around them (tests/integration/test_wait_split.py).
IO_CLOCK_NS = 4000


class KeepCausesTest(BracketsMixin, TorchTestCase):

    def whole_and_full(self, script, mode, *args, keep="1h"):
        truth, _ = self.run_truth(script, mode, *args, env={"DLPROF_KEEP": keep})
        s = self.summary()
        self.assertIn("whole_run", s)
        return truth, s["whole_run"], s["verdict"]["batch_wait"]

    def assert_parts_add_up(self, whole):
        c = whole["causes"]
        self.assertEqual(sum(c[p + "_ns"] for p in PARTS) + c["unsplit_ns"],
                         whole["batch_wait_ns"], whole)

    def assert_close(self, whole, full, share, prorated=None):
        """Each part within `share` of the wait of the full events' part,
        and four of its standard errors where some waits were not sampled;
        reading and preprocessing within `prorated` (a fetch's reads are
        kept in eighths of it, and the eighth a wait begins in is prorated
        by time: one eighth's reads a wait at most), their sum within
        `share`."""
        c = whole["causes"]
        self.assertEqual(whole["batch_wait_ns"], full["ns"], (whole, full))
        self.assertEqual(c["unsplit_ns"], 0, c)
        for p in PARTS:
            allowed = prorated if prorated and p in ("reading", "preprocessing") else share
            error = c[p + "_error_ns"]
            self.assertLessEqual(abs(c[p + "_ns"] - full[p + "_ns"]),
                                 full["ns"] * allowed + 4 * error, (p, c, full))
        made = sum(c[p + "_ns"] - full[p + "_ns"] for p in ("reading", "preprocessing"))
        self.assertLessEqual(abs(made), full["ns"] * share + 4 * c["handover_error_ns"]
                             + 4 * c["worker_startup_error_ns"], (c, full))
        # The largest, named as the verdict names it, where no near tie.
        first, second = sorted((full[p + "_ns"] for p in PARTS), reverse=True)[:2]
        errors = sum(c[p + "_error_ns"] for p in PARTS)
        if first - second > 2 * full["ns"] * max(share, prorated or 0) + 8 * errors:
            self.assertEqual(c["cause"], full["cause"], (c, full))

    def test_every_batch_sampled_splits_as_the_full_events(self):
        for mode, workers in (("read", 2), ("cpu", 1), ("read", 0)):
            with self.subTest(mode=mode, workers=workers):
                truth, whole, full = self.whole_and_full(SPLIT, mode, workers)
                c = whole["causes"]
                self.assert_parts_add_up(whole)
                # Every batch sampled: hand-over and start-up as the full
                # events'; reading beside preprocessing as the eighths allow
                # (a loaded machine's run: 1.03 % of the wait).
                self.assert_close(whole, full, 0.001, prorated=0.05)
                for p in PARTS:
                    self.assertEqual(c[p + "_error_ns"], 0, c)
                # Each wait counted once: a worker's batch, or one of the
                # loop's own (iter(), the call that ends the pass, or every
                # batch without workers); the call that found the pass over
                # no batch (it was: one batch too many).
                self.assertEqual(whole["batches"], truth["batches"], whole)
                if workers:
                    self.assertEqual(c["flow_waits"], truth["batches"], c)
                    self.assertEqual(c["sampled_waits"], truth["batches"], c)
                    self.assertEqual(c["own_waits"], 2, c)
                else:
                    self.assertEqual(c["flow_waits"], 0, c)
                    self.assertEqual(c["own_waits"], truth["batches"] + 2, c)
                # Against the loop's own clocks: the wait inside its brackets,
                # the reading no longer than the worker's I/O calls.
                self.assertTrue(truth["wait_inner_ns"] <= whole["batch_wait_ns"]
                                <= truth["wait_outer_ns"], (whole, truth))
                self.assertLessEqual(c["reading_ns"],
                                     truth["reading_ns"] + truth["io_calls"] * IO_CLOCK_NS,
                                     (c, truth))

    def test_page_faults_on_mapped_data_are_reading(self):
        """scripts/torch_memmap.py's DataLoader of 2 workers gathering from
        maps of evicted pages: the workers' page faults reach the flusher
        after the fetches they fall in (a pass drains the rings, then the
        faults), and count as the fetches' reading. The full events count
        more of it: a worker's faults while its batch waited to be sent
        (holding the interpreter lock the sender needs) turn that hand-over
        into reading (lib/analysis/meters/wait_causes.h), a rule the
        counters do not hold: theirs is the full split with that part
        (handover_faults_ns) left in the hand-over."""
        truth, whole, full = self.whole_and_full(MEMMAP, "loader")
        c = whole["causes"]
        self.assert_parts_add_up(whole)
        self.assertEqual(whole["batch_wait_ns"], full["ns"])
        self.assertEqual(c["flow_waits"], truth["steps"], c)
        held = full["handover_faults_ns"]
        self.assertGreater(c["reading_ns"], 0, c)
        self.assertLessEqual(abs(c["reading_ns"] - (full["reading_ns"] - held)), 0.05 * full["ns"],
                             (c, full))
        self.assertLessEqual(abs(c["handover_ns"] - (full["handover_ns"] + held)), 0.05 * full["ns"],
                             (c, full))
        self.assertLessEqual(abs(c["worker_startup_ns"] - full["worker_startup_ns"]),
                             0.001 * full["ns"], (c, full))
        # Against the loop's own clocks: no more than the samples' gathers
        # within the waits.
        self.assertLessEqual(c["reading_ns"], truth["gathers_in_waits_ns"] + IO_CLOCK_NS *
                             truth["samples"], (c, truth))

    def test_a_loop_without_a_dataloader_waits_for_its_reading(self):
        """Loops without a DataLoader (docs/ANALYSIS.md): nanoGPT's
        get_batch over O_DIRECT reads (scripts/torch_jobs.py) and over maps
        of evicted pages (scripts/torch_memmap.py). Each step's wait is the
        stepping thread's reading since the step before (its calls, or its
        page faults), the first step's window as the full events take it:
        the wait within 2 % of the full events' (the issue's target; equal,
        or 0.1-0.2 % apart, with every core and the disk busy) and the loop theirs, both inside the loop's own
        brackets, split as theirs. (The counters had no wait for such a
        loop; then all of it reading.)"""
        truth, whole, full = self.whole_and_full(JOBS, "get_batch")
        self.assert_step_waits(whole, full, truth["steps"])
        self.assert_bracketed(whole["batch_wait_ns"], truth, "wait")
        self.assert_bracketed(whole["loop_ns"], truth, "loop")
        # A file a sample, opened, read and closed: more calls a step than
        # the counters hold spans of a thread (the wait was a tenth of the
        # full events').
        truth, whole, full = self.whole_and_full(JOBS, "get_files")
        self.assert_step_waits(whole, full, truth["steps"])
        self.assert_bracketed(whole["batch_wait_ns"], truth, "wait")
        truth, whole, full = self.whole_and_full(MEMMAP, "get_batch")
        self.assert_step_waits(whole, full, truth["steps"])
        # No more than the loop's own get_batch() calls (a fault's time may
        # begin up to 54 us before the clock read before it: test_map_reads).
        self.assertLessEqual(whole["batch_wait_ns"], truth["wait_ns"] + 54000 * truth["steps"],
                             (whole, truth))

    def assert_step_waits(self, whole, full, steps):
        c = whole["causes"]
        self.assertEqual(whole["steps"], steps)
        self.assertGreater(whole["batch_wait_ns"], 0, whole)
        # The 2 %, and the first window's own difference: where it
        # begins between two calls less than 1 ms apart, the counters count
        # its reading from its start, the full events from the first call
        # after it (batch_sampler_test, AFirstWindowStartingInARunOfCalls-
        # IsCountedFromItsStart): up to that gap. (A call or a fault in
        # progress there both count from the start: a set-up's fsync, a
        # fault stalled 20 ms, were up to 12.4 ms of 436.) 17 of 20 runs of
        # torch_memmap.py with every core and the disk busy: equal; the
        # others 0.26-0.49 ms apart.
        first_window = 1000000
        self.assertLessEqual(abs(whole["batch_wait_ns"] - full["ns"]),
                             0.02 * full["ns"] + first_window, (whole, full, first_window))
        self.assertLessEqual(abs(whole["loop_ns"] - full["loop_ns"]), 0.001 * full["loop_ns"],
                             (whole, full))
        # Split as the full events split it: the calls' and faults' time
        # reading, the program's between joined calls preprocessing (step
        # split records; all of it was reading), and so the maps made and
        # torn down, the full events' "mapping" part (the step records
        # counted them reading: 2.4 ms of a 64.5 ms wait put the two 2.40
        # ms apart in a clean-clone CI run, 5.8 ms of 73.4 ms here), within
        # the wait's margin.
        self.assertLessEqual(abs(c["preprocessing_ns"] - full["preprocessing_ns"]),
                             0.02 * full["ns"] + first_window, (c, full))
        self.assertEqual(c["cause"], full["cause"], (c, full))
        self.assert_parts_add_up(whole)
        verdict = whole["verdict"]["batch_wait"]
        self.assertEqual((verdict["ns"], verdict["cause"]), (whole["batch_wait_ns"], full["cause"]))
        # Waits counted in steps, as the full events' verdict says them.
        for f in whole["verdict"]["findings"]:
            if f["rule"] == "batch_wait":
                self.assertIn(" over %d steps)" % steps, f["what"])
        self.assertRegex(self.summary(text=True),
                         r"Whole run, [^\n]*\n(  .*\n)*  batch wait .* over %d steps\); loop " % steps)

    def test_persistent_workers_start_each_pass(self):
        """scripts/torch_jobs.py's 3 passes over 2 persistent workers whose
        worker_init_fn takes 200 ms: each pass's first fetches are start-up
        (the pass in the batch flow's id), as in the full events, and within
        the loop's own brackets of it."""
        truth, whole, full = self.whole_and_full(JOBS, "startup", "persistent")
        c = whole["causes"]
        self.assert_parts_add_up(whole)
        # Every batch sampled and no reads to prorate: as the full events
        # (a persistent worker's later passes taken for preprocessing were
        # 1 % of the wait).
        self.assert_close(whole, full, 0.001)
        self.assertTrue(truth["worker_startup_inner_ns"] - IO_CLOCK_NS <= c["worker_startup_ns"]
                        <= truth["worker_startup_outer_ns"] + IO_CLOCK_NS, (c, truth))

    def test_many_batches_are_sampled_and_their_split_holds(self):
        truth, whole, full = self.whole_and_full(KEEP, "many")
        c = whole["causes"]
        self.assert_parts_add_up(whole)
        self.assertEqual(c["flow_waits"], truth["batches"], c)
        self.assertEqual(c["own_waits"], 4, c)  # two passes: iter() and the end
        self.assertLess(c["sampled_waits"], truth["batches"], c)
        self.assertGreaterEqual(c["sampled_waits"], 32, c)  # the passes' first 16 at least
        # The 2 %, beside the sample's own error. (The first 16
        # batches of a pass are the ones the loop waits on while workers
        # prepare them; once the prefetch is ahead, every wait is hand-over.
        # Their preprocessing taken for the sample's share of the rest made
        # 5.2 % of the wait on a loaded CI machine: they are split apart.)
        # A worker descheduled between fetches makes a few later waits
        # late, with preprocessing no hashed sample saw: 2.09 % of the wait
        # in a clean-clone CI run, 2.9-8.4 % under load, where the standard
        # errors were 0 and the test allowed 3 %. Their errors now cover
        # such waits (docs/RELIABILITY_TESTS.md, "Waits late for want of a
        # CPU"): up to 5.1 % off within 0.9 of them at load 8-10 on 2 CPUs.
        # 1 % is left for what the errors do not model (a fetch's reads
        # in eighths, the clocks).
        self.assert_close(whole, full, 0.01)
        for p in PARTS:  # some waits not sampled: never "exact"
            self.assertGreater(c[p + "_error_ns"], 0, c)
        self.assertLessEqual(whole["batch_wait_ns"], truth["batch_wait_ns"], (whole, truth))
        # Reading: no more than the workers' opens, preads and closes, by
        # their own clocks around the three (an open descheduled under load
        # is reading: 82-195 ms of it in the runs that failed when the
        # counters took it for preprocessing), and the sample's error (the
        # unsampled waits' reading is the sampled ones' share).
        self.assertLessEqual(c["reading_ns"], truth["read_ns"] + truth["batches"] * 2 *
                             IO_CLOCK_NS + 4 * c["reading_error_ns"], (c, truth))

    def test_late_batches_are_split_as_the_full_events(self):
        """torch_keep.py's "late" mode: three batches a pass made 30 ms
        late among 200 handed over ready. A hashed sample of one in 16
        would miss most of them and take their preprocessing (a tenth of
        the wait) for hand-over; each process keeps its interval's longest
        waits and latest fetches whatever their hash, so they are split
        exactly."""
        truth, whole, full = self.whole_and_full(KEEP, "late")
        c = whole["causes"]
        self.assert_parts_add_up(whole)
        self.assertEqual(c["flow_waits"], truth["batches"], c)
        self.assertLess(c["sampled_waits"], truth["batches"], c)
        # The late batches' preprocessing is in the full events' split: 6 x
        # 30 ms less the slack of the batches the workers are ahead (about
        # 10 ms; without late batches, 13-26 ms in all, mostly the passes'
        # first: bounded well apart).
        self.assertGreater(full["preprocessing_ns"], 6 * 10e6, full)
        self.assert_close(whole, full, 0.01)
        # Inside the loop's own clock of its iter() and next() calls.
        self.assertLessEqual(whole["batch_wait_ns"], truth["batch_wait_ns"], (whole, truth))

    def test_a_loop_on_a_node_booted_a_day_earlier(self):
        """The "late" loop as rank 1 in a time namespace whose monotonic
        clock is a day ahead (another node), rank 0 a process on this host
        (the job's time base): the counters' waits and fetches -- the
        longest waits among them, which were once left on their own clock
        and split as all hand-over -- move onto the job's time base
        together, and split as the full events (which move alike)."""
        if shutil.which("unshare") is None:
            self.skipTest("no unshare")
        day = 86400
        ns = ["unshare", "--uts", "--time", "--monotonic", str(day), "--fork", "sh", "-c"]
        probe = subprocess.run(ns + ["true"], capture_output=True, timeout=30)
        if probe.returncode != 0:
            self.skipTest("no time namespaces here: %s" % probe.stderr.decode()[-200:])
        env = {"DLPROF_KEEP": "1h", "DLPROF_RUN_ID": "job-keep-late"}
        # (The lowest rank's host is the job's time base: the loop's moves.)
        self.run_traced(["cat", "/etc/hostname"], dict(env, RANK="0"))
        out = os.path.join(self.tmp, "truth.json")
        loop = "hostname nodeB && LD_PRELOAD=%s exec %s %s late %s %s" % (
            dltest.LIB, dltest.SYSTEM_PYTHON, KEEP, self.data, out)
        self.run_traced(ns + [loop], bootstrap_env(dict(env, RANK="1")), preload=False,
                        timeout=170)
        s = self.summary()
        self.assertEqual(len(s["clocks"]["domains"]), 2, s["clocks"])
        whole, full = s["whole_run"], s["verdict"]["batch_wait"]
        self.assertGreater(full["preprocessing_ns"], 6 * 10e6, full)
        self.assert_close(whole, full, 0.01)

    def test_with_most_events_gone_every_wait_is_still_split(self):
        truth, whole, full = self.whole_and_full(KEEP, "many", keep="1s")
        c = whole["causes"]
        self.assert_parts_add_up(whole)
        self.assertEqual(c["flow_waits"], truth["batches"], c)
        self.assertEqual(c["unsplit_ns"], 0, c)
        self.assertLessEqual(whole["batch_wait_ns"], truth["batch_wait_ns"], (whole, truth))
        # The kept window's events hold fewer waits than the whole run.
        self.assertLessEqual(full["ns"], whole["batch_wait_ns"])
        text = self.summary(text=True)
        prose = {"handover": "hand-over", "worker_startup": "worker start-up"}
        self.assertIn("    causes     mostly %s: reading " % prose.get(c["cause"], c["cause"]),
                      text)
        self.assertIn("%d waits for workers' batches" % truth["batches"], text)


if __name__ == "__main__":
    unittest.main()
