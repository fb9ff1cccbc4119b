"""The loop a verdict judges, against the loops the program kept account of.

programs/step_truth.c runs training loops that write down every step on the
tracer's clock: [A, B] around the step's reads (its batch wait), C after its
optimizer step. Two shapes the verdict measured against the wrong window:

- several processes without ranks whose loops have no DataLoader (nanoGPT-
  style trainers, torch.multiprocessing's): each is a loop of its own, as a
  rank is, and the job's share is their waits over their loops summed (the
  four processes' waits were set against one window spanning them: four
  times their share, "waited for data 28.8 %" for 7.2 %);
- a bounded trace whose rule kept a window (DLPROF_KEEP_WHEN) before its
  last DURATION: the kept windows' verdict is about the kept steps, not the
  seconds deleted between them (a loop of 11.1 s kept read as 16.1 s).

Which steps a bounded trace kept is read from its events (a step is kept
where its region is on disk); everything else from the program's clocks.
"""

import glob
import os
import subprocess

import dltest

# Kept steps in a row (none deleted between them): their loop is the first
# one's A to the last one's C.


def steps_of(path):
    with open(path) as f:
        return [tuple(int(x) for x in line.split()[1:]) for line in f if line.startswith("STEP")]


class LoopWindowsTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.file = os.path.join(self.data, "data.bin")
        with open(self.file, "wb") as f:
            f.write(os.urandom(16 << 20))  # in the page cache: reading is copying
        self.truth = os.path.join(self.tmp, "truth")
        os.mkdir(self.truth)

    def run_loops(self, mode, procs, seconds, step_ms, slow=None, env=None):
        """Each process's steps (pid -> [(A, B, C)])."""
        cmd = [dltest.program("step_truth"), mode, self.file, self.truth, str(procs),
               str(seconds), str(step_ms)] + [str(x) for x in (slow or ())]
        self.run_traced(cmd, env=env, timeout=120)
        files = glob.glob(os.path.join(self.truth, "*.txt"))
        self.assertEqual(len(files), procs, files)
        return {int(os.path.basename(f)[:-4]): steps_of(f) for f in files}

    def kept(self, steps, region, bracket):
        """`steps` less those whose `region` is not on disk: the event of
        each kept step lies inside its `bracket` (a pair of indexes into
        its (A, B, C))."""
        t = self.decode(keep=lambda e: e.get("name") == region)
        starts = {}
        for e in t.events:
            starts.setdefault(e["pid"], []).append(e["ts"])
        kept = {}
        for pid, own in steps.items():
            ts = sorted(starts.get(pid, []))
            kept[pid] = []
            j = 0
            for s in own:
                lo, hi = s[bracket[0]], s[bracket[1]]
                while j < len(ts) and ts[j] < lo:
                    j += 1
                kept[pid].append(j < len(ts) and ts[j] <= hi)
        return kept

    @staticmethod
    def account(steps, kept=None):
        """(wait, loop) of the steps: each kept step's B - A, and each run of
        kept steps in a row, from its first A to its last C."""
        wait = loop = 0
        for pid, own in steps.items():
            run_start = None
            for i, (a, b, c) in enumerate(own):
                if kept is not None and not kept[pid][i]:
                    run_start = None
                    continue
                wait += b - a
                if run_start is None:
                    run_start = a
                last = i + 1 == len(own) or (kept is not None and not kept[pid][i + 1])
                if last:
                    loop += c - run_start
        return wait, loop

    def assert_share(self, per_mille, wait, loop, what):
        # The share's own rounding (down) and a step's worth at each end.
        truth = 1000.0 * wait / loop
        self.assertLessEqual(abs(per_mille - truth), 15, (what, per_mille, truth, wait, loop))

    def test_trainers_without_a_dataloader_are_a_loop_each(self):
        steps = self.run_loops("steps", 4, 3, 5)
        wait, loop = self.account(steps)
        v = self.summary()["verdict"]
        self.assertEqual(v["loop"]["basis"], "steps", v["loop"])
        self.assertEqual(v["loop"]["steps"], sum(len(s) for s in steps.values()))
        # Each process's loop from its first step's window to its last
        # step's end: within a step of its own account (before: one window
        # of 3 s for the four loops' 12 s).
        self.assertLess(abs(v["loop"]["ns"] - loop), 4 * 2 * 10e6, (v["loop"], loop))
        self.assert_share(v["batch_wait"]["per_mille"], wait, loop, "events")

    def test_a_bounded_trace_of_trainers_sums_their_loops(self):
        # The whole run from the counters, and the last second of events.
        steps = self.run_loops("steps", 4, 3, 5, env={"DLPROF_KEEP": "1s"})
        wait, loop = self.account(steps)
        w = self.summary()["whole_run"]
        self.assertLess(abs(w["loop_ns"] - loop), 4 * 2 * 10e6, (w["loop_ns"], loop))
        self.assert_share(w["verdict"]["batch_wait"]["per_mille"], wait, loop, "whole run")
        kept = self.kept(steps, "optimizer_step", (1, 2))
        wait, loop = self.account(steps, kept)
        v = self.summary()["verdict"]
        self.assertLess(abs(v["loop"]["ns"] - loop), 4 * 2 * 10e6, (v["loop"], loop))
        self.assert_share(v["batch_wait"]["per_mille"], wait, loop, "kept windows")

    def test_the_kept_windows_verdict_leaves_the_deleted_stretch_out(self):
        # 10 s of steps of 10 ms; from 2 s to 3.5 s each batch sleeps 20 ms
        # more: the rule keeps a window there, the run its last second, and
        # about 4 s between them are deleted.
        env = {"DLPROF_KEEP": "1s", "DLPROF_KEEP_WHEN": "batch_wait>25%"}
        steps = self.run_loops("batch", 1, 10, 10, slow=(2, 3.5, 20), env=env)
        kept = self.kept(steps, "load_batch", (0, 1))
        (own,), (flags,) = steps.values(), kept.values()
        gaps = sum(1 for i in range(1, len(flags)) if flags[i - 1] and not flags[i])
        self.assertGreaterEqual(gaps, 1, "no stretch deleted between two kept windows")
        wait, loop = self.account(steps, kept)
        whole = own[-1][2] - own[flags.index(True)][0]
        self.assertLess(loop, 0.8 * whole, (loop, whole))
        v = self.summary()["verdict"]
        self.assertEqual(v["batch_wait"]["steps"], sum(flags))
        # The kept steps' loop, within a step at each end of each stretch
        # (before: their window, the deleted seconds in it).
        self.assertLess(abs(v["loop"]["ns"] - loop), 4 * 40e6, (v["loop"]["ns"], loop, whole))
        self.assert_share(v["batch_wait"]["per_mille"], wait, loop, "kept windows")


if __name__ == "__main__":
    dltest.main()
