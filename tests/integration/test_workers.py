"""The loader workers' what-if on real torch (CPU) loops with no `import
dlprof` (scripts/torch_workers.py; docs/ANALYSIS_LOADER.md, "Loader workers: what
more would give"): the `few_workers` finding's estimate and limit, checked
against what the loop measured itself and the CPUs it may use.

No test here races the clock: the preprocessing-bound loop's estimate,
less the workers' start-up (which grows with them), must save at least 30 %
of the wait its steady state measured (the model says about half, on any
number of CPUs), and the limit follows from the CPU count alone, whatever
the load."""

import dltest
from dltest.pytorch import TorchTestCase

SCRIPT = dltest.script("torch_workers.py")
MS = 1000000


class WorkersTest(TorchTestCase):

    def run_loop(self, mode, workers, *args):
        truth, _ = self.run_truth(SCRIPT, mode, workers, *args, timeout=240)
        self.decode()
        verdict = self.summary()["verdict"]
        found = [f for f in verdict["findings"] if f["rule"] == "few_workers"]
        return truth, verdict, found[0] if found else None

    def test_the_header_records_the_cpus(self):
        truth, _, _ = self.run_loop("cpu", 1, 2, 1, 1)
        cpus = {dltest.read_header_strings(f)["cpus"] for f in dltest.trace_files(self.traces)}
        self.assertEqual(cpus, {str(truth["cpus"])})

    def test_a_preprocessing_bound_loop_with_one_worker(self):
        # 32 batches of 4 samples of 8 ms of numpy work each, 4 ms of
        # compute a step: the loop waits for its one worker most of the time.
        truth, v, f = self.run_loop("cpu", 1, 32, 8, 4)
        self.assertEqual(v["bound"], "data")
        self.assertIsNotNone(f, v["findings"])
        self.assertEqual(f["workers"], 1)
        self.assertEqual([e["workers"] for e in f["estimate"]], [2, 4])
        wait = v["batch_wait"]["ns"]
        two, four = (e["batch_wait_ns"] for e in f["estimate"])
        # The workers' start-up (what the first batch waited for beyond a
        # step's wait) grows with them: 2 and 4 times today's. It comes out
        # of the first wait the loop measured.
        startup = f["model"]["startup_ns"]
        self.assertLessEqual(startup, truth["first_wait_ns"])
        self.assertLessEqual(four - 4 * startup, two - 2 * startup)
        # The wait beyond the first batch is what more workers act on: about
        # half of it goes with 2, on any number of CPUs.
        steady = wait - min(wait, truth["first_wait_ns"])
        self.assertLess(two - 2 * startup, wait - startup - 0.3 * steady, (f, truth))
        # More workers help where the fewer of them that wait least save a
        # tenth of the wait (the rule judges on the smallest estimate: 2
        # may save where 4 cost their start-up): on a busy machine the first
        # batch's wait, and so the start-up more workers would take, may be
        # seconds, and then they would not.
        if min(two, four) + wait // 10 <= wait:
            self.assertIn("with 2 workers the wait would fall to about", f["what"])
        elif four > wait:
            self.assertIn("with 4 workers it would grow to about", f["what"])
        else:
            self.assertIn("with 4 workers it would still be about", f["what"])
        # The CPUs: with 2 (or 1), 4 workers and the loop cannot all run;
        # with 8 or more they can.
        if truth["cpus"] <= 2:
            self.assertEqual(f.get("limit"), "cpu", f)
            self.assertIn("all busy", f["what"])
        elif truth["cpus"] >= 8:
            self.assertNotIn("limit", f)

    def test_a_compute_bound_loop_gets_no_estimate(self):
        # Quick samples, 40 ms of compute a step: the worker keeps up and the
        # loop hardly waits (past its first batch): no finding about workers.
        truth, v, f = self.run_loop("cpu", 1, 12, 0.2, 40)
        steady = truth["batch_wait_ns"] - truth["first_wait_ns"]
        if steady * 10 < truth["loop_ns"]:  # a loaded machine may slow the worker
            self.assertIsNone(f, v["findings"])


if __name__ == "__main__":
    dltest.main()
