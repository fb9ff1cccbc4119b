"""Ranks that step together (docs/ANALYSIS.md, "ranks that step together"):
three mpi4py ranks under mpirun (scripts/lockstep_ranks.py), each fetching
its batches through dlprof.annotate_loader, with an allreduce per step
(synchronous data-parallel training) or without (ranks at their own pace).

In lockstep, one rank's wait or save stops every rank: the verdict's shares
are the critical path's, checked against the ranks' own clocks (each step's
longest next() over the ranks, summed; the longest saving; a rank's mean
loop). Summed over the ranks they read as a third of themselves, and the
verdict said "not held back by data" of a job that lost a quarter of its
loop to one rank's loader. Without the allreduce the ranks keep their sums.
Skipped where the system Python has no mpi4py, and under any MPI family but
Open MPI (Debian builds python3-mpi4py against it)."""

import glob
import json
import os

import dltest
import dltest.mpi as mpitest

STEPS = 16


class LockstepTest(mpitest.Mpi4pyTestCase):

    def run_ranks(self, mode, slow_ms, steps=STEPS, env=None):
        """The job's verdict and the ranks' own clocks: each step's longest
        wait over the ranks summed, the slowest rank's waits, the longest
        saving, the mean loop. (self.whole_run: the summary's.)"""
        env = dict(env or {}, PYTHONPATH=os.environ.get("PYTHONPATH", ""))
        full, p = self.launch([dltest.SYSTEM_PYTHON, dltest.script("lockstep_ranks.py"),
                               self.data, self.logs, mode, str(steps), str(slow_ms)],
                              nranks=3, timeout=120, env=env)
        self.assertEqual(p.returncode, 0, (full, p.stdout[-2000:], p.stderr[-2000:]))
        ranks = []
        for path in sorted(glob.glob(os.path.join(self.logs, "rank*.json"))):
            with open(path) as f:
                ranks.append(json.load(f))
        self.assertEqual(len(ranks), 3)
        steps = max(len(r["waits"]) for r in ranks)
        truth = {
            "wait_ns": sum(max(r["waits"][i] for r in ranks if i < len(r["waits"]))
                           for i in range(steps)),
            "summed_wait_ns": sum(sum(r["waits"]) for r in ranks),
            "slowest_rank_wait_ns": max(sum(r["waits"]) for r in ranks),
            "save_inner_ns": max(sum(inner for inner, _ in r["saves"]) for r in ranks),
            "save_outer_ns": max(sum(outer for _, outer in r["saves"]) for r in ranks),
            "loop_ns": sum(r["loop"] for r in ranks) // len(ranks),
        }
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                       dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        summary = json.loads(p.stdout)
        self.whole_run = summary.get("whole_run")
        return truth, summary["verdict"]

    def assert_near(self, got, want, what, low=0.9, high=1.1, slack_ns=3 * 10**6):
        self.assertGreaterEqual(got, low * want - slack_ns, (what, got, want))
        self.assertLessEqual(got, high * want + slack_ns, (what, got, want))

    def test_one_slow_loader_holds_every_rank_back(self):
        """Under DLPROF_KEEP: the whole run's verdict from the counters
        finds the lockstep too, its wait the slowest rank's (it said the
        ranks' sums: 12.7 % of a job whose kept events said 27.0 %)."""
        truth, v = self.run_ranks("lockstep", 8, env={"DLPROF_KEEP": "1h"})
        whole = self.whole_run["verdict"]
        self.assertIsNotNone(whole["lockstep"], whole)
        self.assertEqual(whole["lockstep"]["ranks"], 3)
        self.assertEqual(whole["bound"], "data", whole)
        self.assert_near(whole["lockstep"]["wait_ns"], truth["slowest_rank_wait_ns"], "slowest rank")
        self.assert_near(whole["lockstep"]["loop_ns"], truth["loop_ns"], "loop")
        lock = v["lockstep"]
        self.assertIsNotNone(lock, v)
        self.assertEqual(lock["ranks"], 3)
        self.assert_near(lock["wait_ns"], truth["wait_ns"], "critical wait")
        self.assert_near(lock["loop_ns"], truth["loop_ns"], "loop")
        self.assertEqual(v["bound"], "data", v)
        # The sums stay the ranks' sums (a third of the job's loss here).
        self.assert_near(v["batch_wait"]["ns"], truth["summed_wait_ns"], "summed wait")
        self.assertLess(v["batch_wait"]["per_mille"] * 2, lock["wait_per_mille"], v)
        self.assertTrue(any(f["rule"] == "slow_rank" for f in v["findings"]), v["findings"])
        # --compare shows the share the verdict judges beside the summed one
        # (it showed the sums only: 9.9 % of a loop that lost 28 %).
        p = dltest.run([dltest.DUMP, "--compare", self.traces, self.traces, "--format", "json"],
                       dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        judged = json.loads(p.stdout)["change"]["verdict"]["judged_wait_per_mille"]
        self.assertEqual(judged["change"], 0, judged)
        truth_per_mille = truth["wait_ns"] * 1000 // truth["loop_ns"]
        self.assertLessEqual(abs(judged["before"] - truth_per_mille), max(15, truth_per_mille // 10),
                             (judged, truth))

    def test_a_rank_that_enters_the_loop_late(self):
        """Rank 0 starts 0.4 s late: the others' first step waits for it in
        the allreduce, their loops 0.4 s longer than its (it was missed)."""
        truth, v = self.run_ranks("late", 8, env={"DLPROF_KEEP": "1h"})
        lock = v["lockstep"]
        self.assertIsNotNone(lock, v)
        self.assert_near(lock["wait_ns"], truth["wait_ns"], "critical wait")
        self.assertEqual(v["bound"], "data", v)
        # The whole run's counters weigh each rank from when the last one
        # began its loop: the lockstep is found there too.
        whole = self.whole_run["verdict"]
        self.assertIsNotNone(whole["lockstep"], whole)
        self.assert_near(whole["lockstep"]["wait_ns"], truth["slowest_rank_wait_ns"], "slowest rank")

    def test_ranks_at_their_own_pace_keep_their_sums(self):
        _, v = self.run_ranks("free", 8, env={"DLPROF_KEEP": "1h"})
        self.assertIsNone(v["lockstep"], v)
        self.assertIsNone(self.whole_run["verdict"]["lockstep"], self.whole_run["verdict"])
        # The loop's line sums the ranks and says so (a start-up of 31.5 s
        # in a run of 14.7 s read as one process's).
        p = dltest.run([dltest.DUMP, "--summary", self.traces], dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"\n  loop  .*; start-up before it .*\(each summed over 3 ranks\)\n")

    def test_ranks_stepping_until_a_deadline_keep_their_sums(self):
        """Loops of one length, waits that differ, but no collective: the
        slow rank took fewer steps (it was read as lockstep)."""
        _, v = self.run_ranks("deadline", 8, steps=64)
        self.assertIsNone(v["lockstep"], v)

    def test_rank_zero_saving_holds_every_rank_back(self):
        truth, v = self.run_ranks("save", 0)
        lock = v["lockstep"]
        self.assertIsNotNone(lock, v)
        # A save found by its writes runs from its open for output (which
        # truncates the last save's 24 MiB first) to its settling fsync or
        # close (docs/ANALYSIS_CHECKPOINTS.md): the script's clock around
        # the whole save (it read 0.77-0.92 of it from the first write).
        self.assert_near(lock["save_ns"], truth["save_outer_ns"], "save")
        self.assert_near(lock["loop_ns"], truth["loop_ns"], "loop")
        self.assertEqual(v["bound"], "checkpoint", v)
        self.assertLess(v["checkpoint"]["per_mille"] * 2, lock["save_per_mille"], v)


if __name__ == "__main__":
    dltest.main()
