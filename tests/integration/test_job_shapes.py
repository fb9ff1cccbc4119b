"""The verdict on jobs as they really run (issue 48), each against what the
loop measured of itself (scripts/torch_jobs.py): a DataLoader loop that
starts with `from mpi4py import MPI` (Open MPI's singleton, which forks
orted) or MPICH's singleton MPI_Init, or runs as two ranks under mpirun;
workers that start slowly at every epoch, or once; a loop without a
DataLoader (get_batch between optimizer steps); checkpoints saved in the
loop or on a thread of their own; two trainers in a job without ranks
(scripts/torch_trainers.py), spawned or forked. Each timed figure inside
the loop's own brackets of it (dltest/brackets.py: clock reads just outside
the traced regions and calls, and just inside them; no tolerance, which a
busy machine crossed), the verdict's conclusions where those brackets leave
no doubt, counts exact."""

import ctypes.util
import json
import os
import shutil
import subprocess

import dltest
import dltest.mpi as mpitest
from dltest.brackets import BracketsMixin, data_bound
from dltest.pytorch import TorchTestCase, bootstrap_env

SCRIPT = dltest.script("torch_jobs.py")
TRAINERS = dltest.script("torch_trainers.py")
PARTS = ("reading", "preprocessing", "handover", "worker_startup")
# A region's or call's recorded end may lie this far past a clock read just
# after it (the TSC's conversion: integration.clock).
CLOCK_NS = 4000


def has_mpi4py():
    p = subprocess.run([dltest.SYSTEM_PYTHON, "-c", "import mpi4py"], capture_output=True,
                       env=dltest.base_env(), timeout=60)
    return p.returncode == 0


class JobShapesTest(BracketsMixin, TorchTestCase):

    def run_mode(self, mode, arg=None, env=None):
        # Open MPI's singleton forks orted, which refuses root unless told.
        run_env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                   "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
        run_env.update(env or {})
        truth, _ = self.run_truth(SCRIPT, mode, *([arg] if arg else []), env=run_env)
        self.decode()
        return truth, self.summary()

    def assert_between(self, got, low, high, what):
        self.assertLessEqual(low, got, (what, low, got, high))
        self.assertLessEqual(got, high, (what, low, got, high))

    def assert_startup(self, got, truth, passes, what):
        """The workers' start-up inside the loop's brackets of it: the
        worker's fetch begins, in the trace, just before the clock read in
        its first sample (and a clock's conversion more a pass)."""
        self.assert_between(got, truth["worker_startup_inner_ns"],
                            truth["worker_startup_outer_ns"] + CLOCK_NS * passes, what)

    def assert_loader_loop(self, truth, s):
        v = s["verdict"]
        loop, wait = v["loop"], v["batch_wait"]
        self.assertEqual(loop["basis"], "dataloader")
        self.assertEqual(wait["steps"], truth["batches"])
        self.assertEqual(loop["steps"], truth["steps"])
        self.assertEqual(sum(wait[p + "_ns"] for p in PARTS), wait["ns"])
        self.assert_bracketed(wait["ns"], truth, "wait")
        self.assert_bracketed(loop["ns"], truth, "loop")
        self.assert_startup(wait["worker_startup_ns"], truth,
                            len(truth["pass_worker_startup_ns"]), "worker start-up")
        bound = data_bound(truth)
        if bound is not None:
            self.assertEqual(v["bound"] == "data", bound, (v["bound"], truth))
        return v

    def roles(self, v):
        return {r["role"]: r["processes"] for r in v["roles"] if r["processes"]}

    # --- MPI initialised after tracing began --------------------------------

    def test_mpi4py_singleton(self):
        """Open MPI's singleton MPI_Init forks orted: the loop's process gains
        rank 0 and is the rank's main process; orted is a launcher."""
        if not has_mpi4py():
            self.skipTest("%s has no mpi4py" % dltest.SYSTEM_PYTHON)
        truth, s = self.run_mode("mpi4py")
        v = self.assert_loader_loop(truth, s)
        roles = self.roles(v)
        self.assertEqual((roles["main"], roles["loader workers"]), (1, 2), v["roles"])
        self.assertGreaterEqual(roles.get("launcher", 0), 1, v["roles"])  # orted
        self.assertEqual(list(s["ranks"]), ["0"])
        self.assertEqual(s["ranks"]["0"]["batch_wait_ns"], v["batch_wait"]["ns"])
        # Every process of the rank, its events before MPI_Init too.
        events = self.decode().events
        main = [e for e in events if e.get("name", "").startswith("MPI_Init")]  # mpi4py: _thread
        self.assertEqual(len(main), 1)
        self.assertEqual({e["rank"] for e in events if e["pid"] == main[0]["pid"]}, {0})

    def test_mpich_singleton(self):
        """MPICH's singleton MPI_Init (no launcher process)."""
        if not ctypes.util.find_library("mpich"):
            self.skipTest("no libmpich")
        truth, s = self.run_mode("mpich")
        v = self.assert_loader_loop(truth, s)
        roles = self.roles(v)
        self.assertEqual((roles["main"], roles["loader workers"]), (1, 2), v["roles"])
        self.assertEqual(list(s["ranks"]), ["0"])

    def test_mpi4py_under_mpirun(self):
        """The same script as two ranks under Open MPI's mpirun: a loop per
        rank, each against its own truth."""
        if not has_mpi4py() or not os.path.isfile(mpitest.MPIEXEC) or mpitest.FAMILY != "openmpi":
            self.skipTest("no mpi4py or Open MPI")
        out = os.path.join(self.tmp, "truth.json")
        env = {"LD_PRELOAD": dltest.LIB, "DLPROF_DIR": self.traces, "DLPROF_QUIET": "1"}
        env.update(bootstrap_env())
        cmd = mpitest.launcher_args(2, env) + [dltest.SYSTEM_PYTHON, SCRIPT, "mpi4py", self.data, out]
        p = dltest.run(cmd, mpitest.launcher_env(), timeout=170)
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        self.decode()
        s = self.summary()
        self.assertEqual(sorted(s["ranks"]), ["0", "1"])
        for rank, path in ((0, out), (1, out[:-5] + ".1.json")):
            with open(path) as f:
                truth = json.load(f)
            r = s["ranks"][str(rank)]
            self.assertEqual(sum(1 for x in r["steps"] if x["request"] == "batch"), truth["batches"])
            self.assert_bracketed(r["batch_wait_ns"], truth, "wait")
            self.assert_startup(r["worker_startup_ns"], truth, 1, "rank %d start-up" % rank)
        roles = self.roles(s["verdict"])
        self.assertEqual((roles["main"], roles["loader workers"]), (2, 4), s["verdict"]["roles"])

    # --- two trainers without ranks -----------------------------------------

    def assert_trainers(self, how):
        """Two trainers and no RANK: each one's loop is one of the job's,
        as each rank's is, the wait and the loop summed over them inside
        the sum of the trainers' brackets (the loop was one window from the
        first trainer's iter() to the last one's end, against both waits:
        124.6 % of it in the reviewer's run of two forked loops)."""
        truth, _ = self.run_truth(TRAINERS, how)
        self.decode()
        v = self.summary()["verdict"]
        loop, wait = v["loop"], v["batch_wait"]
        self.assertEqual(loop["basis"], "dataloader")
        self.assertEqual((wait["steps"], loop["steps"]), (truth["batches"], truth["steps"]))
        self.assert_bracketed(wait["ns"], truth, "wait")
        self.assert_bracketed(loop["ns"], truth, "loop")
        self.assertEqual(self.roles(v)["main"], 2, v["roles"])
        self.assertEqual(self.roles(v)["loader workers"], 4, v["roles"])
        bound = data_bound(truth)
        if bound is not None:
            self.assertEqual(v["bound"] == "data", bound, (v["bound"], truth))

    def test_two_trainers_spawned_without_ranks(self):
        """torch.multiprocessing.spawn of two trainers, no RANK."""
        self.assert_trainers("spawn")

    def test_two_trainers_forked_without_ranks(self):
        """A trainer that forks a second one (its child, as its loader
        workers are) before both train."""
        self.assert_trainers("fork")

    def test_two_trainers_in_a_bounded_trace(self):
        """DLPROF_KEEP: the whole run's loop, from the counters, is the two
        trainers' summed too (it was one window over both: 82.3 % of it
        waited for data in the reviewer's run, for 52 %)."""
        truth, _ = self.run_truth(TRAINERS, "fork", env={"DLPROF_KEEP": "1s"})
        self.decode()
        w = self.summary()["whole_run"]
        self.assertEqual(w["steps"], truth["steps"])
        self.assert_bracketed(w["batch_wait_ns"], truth, "wait")
        self.assert_bracketed(w["loop_ns"], truth, "loop")

    # --- the workers' start-up ----------------------------------------------

    def test_workers_that_start_every_epoch(self):
        """Three epochs, non-persistent workers with a 200 ms worker_init_fn:
        each pass's first wait is mostly start-up, which persistent workers
        would save after the first pass."""
        truth, s = self.run_mode("startup")
        v = self.assert_loader_loop(truth, s)
        wait = v["batch_wait"]
        # Start-up is the cause where the loop's brackets leave no doubt: at
        # least half the wait by its inner measure.
        if 2 * truth["worker_startup_inner_ns"] > truth["wait_outer_ns"]:
            self.assertEqual(wait["cause"], "worker_startup", (wait, truth))
        passes = {p["pass"]: p["ns"] for p in wait["worker_startup_passes"]}
        self.assertEqual(sorted(passes), [1, 2, 3])
        inner, outer = truth["pass_worker_startup_inner_ns"], truth["pass_worker_startup_ns"]
        for n in (1, 2, 3):
            self.assert_between(passes[n], inner[n - 1], outer[n - 1] + CLOCK_NS, "pass %d" % n)
        # And every pass's end, where torch shut the workers down while the
        # loop waited (it counted only the start-ups: 90 of 264 ms saved in
        # the reviewer's run with and without persistent workers).
        ends_inner, ends_outer = truth["pass_end_inner_ns"], truth["pass_end_outer_ns"]
        self.assertEqual(len(ends_outer), 3)
        self.assert_between(wait["pass_end_shutdown_ns"], sum(ends_inner),
                            sum(ends_outer) + 3 * CLOCK_NS, "shut-downs")
        self.assert_between(wait["persistent_workers_save_ns"], sum(inner[1:]) + sum(ends_inner),
                            sum(outer[1:]) + sum(ends_outer) + 5 * CLOCK_NS, "persistent_workers")
        self.assertEqual(self.roles(v)["loader workers"], 6)
        found = [f for f in v["findings"] if f["rule"] == "batch_wait"]
        if v["bound"] == "data":
            self.assertEqual(len(found), 1, v["findings"])
        if found and wait["cause"] == "worker_startup":
            self.assertIn("persistent_workers=True", found[0]["advice"])
        # The start-up's own finding, where it is a tenth of the wait or more.
        self.assertEqual("worker_startup" in [f["rule"] for f in v["findings"]],
                         wait["worker_startup_ns"] * 1000 // wait["ns"] >= 100, wait)
        text = self.summary(text=True)
        self.assertIn("worker start-up by pass: pass 1 ", text)

    def test_a_new_loader_each_epoch_is_told_to_keep_one(self):
        """`loader = DataLoader(...)` at the top of each epoch, its workers
        not persistent: persistent_workers=True alone would save nothing
        (each new DataLoader starts its workers again), one DataLoader kept
        with them the later passes' start-ups and the passes' ends' shut-
        downs, as for one DataLoader iterated each epoch. (The advice was
        persistent_workers=True alone, for the shut-downs alone: 53.3 ms of
        a 896 ms wait that one kept DataLoader cut to 369 ms.)"""
        truth, s = self.run_mode("startup", "rebuilt")
        v = self.assert_loader_loop(truth, s)
        wait = v["batch_wait"]
        inner, outer = truth["pass_worker_startup_inner_ns"], truth["pass_worker_startup_ns"]
        ends_inner, ends_outer = truth["pass_end_inner_ns"], truth["pass_end_outer_ns"]
        self.assert_between(wait["persistent_workers_save_ns"], sum(inner[1:]) + sum(ends_inner),
                            sum(outer[1:]) + sum(ends_outer) + 5 * CLOCK_NS, "persistent_workers")
        advice = [f["advice"] for f in v["findings"] if f["rule"] == "batch_wait"]
        self.assertTrue(advice, v["findings"])
        self.assertIn("one DataLoader kept across the passes (it is made anew each pass), with "
                      "persistent_workers=True (it would save about ", advice[0])

    def test_a_new_persistent_loader_each_epoch(self):
        """A new DataLoader of persistent workers each epoch: the old one's
        workers are shut down when `it = iter(new)` drops its iterator, in
        the loop's iter() clock. They were in no figure (dlprof's wait 299
        ms, the loop's clock 509 ms, in the reviewer's 6-epoch run); the
        last loader's, after the loop, is in neither."""
        truth, s = self.run_mode("startup", "persistent-renew")
        v = self.assert_loader_loop(truth, s)  # the wait, inside the shut-downs' clocks
        wait = v["batch_wait"]
        passes = {p["pass"]: p["ns"] for p in wait["worker_startup_passes"]}
        self.assertEqual(sorted(passes), [1, 2, 3])  # each loader started its workers
        # Each loader had one pass, its workers persistent: no saving claimed
        # of them, no shut-down at a pass's end.
        self.assertEqual(wait["pass_end_shutdown_ns"], 0)
        self.assertEqual(wait["persistent_workers_save_ns"], 0)

    def test_a_persistent_loader_rebuilt_after_its_pass(self):
        """A new DataLoader of persistent workers each epoch, the old
        iterator dropped after its pass: the old loader keeps it, and its
        workers shut down inside `loader = make()`, which the loop clocks
        as wait. They were in no figure (the reviewer's spawn run: dlprof's
        wait 8.86 s, the program's next + iter 8.87 s and 2.04 s more in
        `dl = DataLoader(...)`); the last loader's, after the loop, is in
        neither."""
        truth, s = self.run_mode("startup", "persistent-rebuilt")
        v = self.assert_loader_loop(truth, s)  # the wait, inside the shut-downs' clocks
        wait = v["batch_wait"]
        passes = {p["pass"]: p["ns"] for p in wait["worker_startup_passes"]}
        self.assertEqual(sorted(passes), [1, 2, 3])  # each loader started its workers
        self.assertEqual(wait["pass_end_shutdown_ns"], 0)  # persistent: no such advice
        self.assertEqual(wait["persistent_workers_save_ns"], 0)
        # What the rebuilding cost: the two old loaders' shut-downs (their
        # workers' _shutdown_workers, the loop's inner clock) and the later
        # loaders' start-ups; the advice names the one line that made them.
        self.assertLessEqual(truth["shutdown_inner_ns"], wait["rebuilt_persistent_ns"])
        self.assertLessEqual(wait["rebuilt_persistent_ns"], truth["wait_outer_ns"])
        with open(SCRIPT) as f:
            line = 1 + next(i for i, text in enumerate(f) if "return DataLoader(Sleepy" in text)
        advice = [f["advice"] for f in v["findings"] if f["rule"] == "worker_startup"]
        self.assertTrue(advice, v["findings"])
        self.assertIn("persistent_workers=True saves nothing for loader 0 at torch_jobs.py:%d: "
                      "the DataLoader is made anew each pass" % line, advice[0])

    def test_persistent_workers_beside_a_validation_loader(self):
        """A training and a validation loader, both of persistent workers,
        dropped 200 ms after the loop: their shut-downs are outside it. The
        training loader's was recorded as a batch wait, the validation
        loader having begun a pass since (taken as a new DataLoader
        replacing it): the loop and the wait ran past the loop's clock (the
        reviewer's spawn run: 19.9 s where the program said 17.8 s)."""
        truth, s = self.run_mode("startup", "persistent-val")
        v = self.assert_loader_loop(truth, s)  # the loop and the wait, inside its clocks
        wait = v["batch_wait"]
        self.assertEqual([w["steps"] for w in wait["loaders"]],
                         [truth["batches"] // 2, truth["batches"] // 2], wait["loaders"])
        self.assertEqual(wait["pass_end_shutdown_ns"], 0)
        self.assertEqual(wait["persistent_workers_save_ns"], 0)

    def test_persistent_workers_start_once(self):
        truth, s = self.run_mode("startup", "persistent")
        v = self.assert_loader_loop(truth, s)
        wait = v["batch_wait"]
        passes = {p["pass"]: p["ns"] for p in wait["worker_startup_passes"]}
        inner, outer = truth["pass_worker_startup_inner_ns"], truth["pass_worker_startup_ns"]
        self.assert_between(passes[1], inner[0], outer[0] + CLOCK_NS, "pass 1")
        # Later passes resume the same workers: their start-up is no more
        # than the loop measured of them (no worker_init_fn again), and
        # persistent workers cannot save it: no advice of them (it said
        # persistent_workers=True to a loop that had them).
        for n in (2, 3):
            self.assert_between(passes.get(n, 0), 0, outer[n - 1] + CLOCK_NS, "pass %d" % n)
        self.assertEqual(wait["persistent_workers_save_ns"], 0)
        self.assertEqual(wait["pass_end_shutdown_ns"], 0)
        self.assertFalse([f for f in v["findings"] if "persistent_workers=True" in f["advice"]],
                         v["findings"])
        self.assertEqual(self.roles(v)["loader workers"], 2)

    # --- no DataLoader ------------------------------------------------------

    def test_a_get_batch_loop_without_a_dataloader(self):
        truth, s = self.run_mode("get_batch")
        v = s["verdict"]
        loop, wait = v["loop"], v["batch_wait"]
        self.assertEqual(loop["basis"], "steps")
        self.assertEqual(loop["steps"], truth["steps"])
        self.assertEqual(wait["steps"], truth["steps"])
        # The preads' time is reading, the Python between them (joined, in
        # the wait) preprocessing: O_DIRECT reads, most of it reading.
        self.assertEqual(wait["reading_ns"] + wait["preprocessing_ns"], wait["ns"])
        self.assertEqual(wait["cause"], "reading")
        self.assert_bracketed(wait["ns"], truth, "wait")
        self.assert_bracketed(loop["ns"], truth, "loop")
        text = self.summary(text=True)
        self.assertIn("no DataLoader: the loop is the optimizer steps", text)

    # --- checkpoints --------------------------------------------------------

    def assert_saves(self, truth, v, background=False):
        saves = truth["saves"]
        c = v["checkpoint"]
        self.assertIsNotNone(c, v)
        self.assertEqual(c["writes"], len(saves))
        # torch.save's bytes, give or take the zip's own writes.
        self.assertLessEqual(abs(c["bytes"] - sum(b for _, _, b in saves)), 4096 * len(saves), c)
        # Each save from its torch.save to its fsync (or sync): inside the
        # loop's clock reads around both, and short of them by no more than
        # the Python between the clock reads and the calls (2 ms a save, on
        # a loaded machine; 0.1 ms measured), never shorter than
        # torch.save's own work.
        # (Saves on threads of their own may overlap: the figure is their
        # union, and torch.save's summed work no floor then.)
        spans = sorted((s, e) for s, e, _ in saves)
        overlap = any(b[0] < a[1] for a, b in zip(spans, spans[1:]))
        outer, reach = 0, 0
        for start, end in spans:
            outer += max(0, end - max(start, reach))
            reach = max(reach, end)
        inner = 0 if overlap else truth["save_inner_ns"]
        # A save on a thread of its own may also wait for the interpreter
        # lock, which the loop's busy steps hold, twice (after its first
        # clock read, before its last): a switch interval, 5 ms, each (8.6
        # ms short over 3 saves, under load).
        slack = 2000000 + (10000000 if background else 0)
        self.assert_between(c["ns"], max(inner, outer - slack * len(saves)),
                            outer + CLOCK_NS * len(saves), "saves")
        return c

    def test_checkpoints_that_stop_the_loop(self):
        """A 48 MiB torch.save and fsync every fourth step, on the loop's
        thread: the loop stops for each."""
        self.check_blocking_saves("checkpoint")

    def test_checkpoints_settled_by_sync(self):
        """The same with os.sync() in place of fsync: sync() writes every
        file's data, the checkpoint's with it (the save was counted without
        it: 272 of 448 ms, in a review's run)."""
        self.check_blocking_saves("sync")

    def test_checkpoints_of_one_file_at_every_step(self):
        """torch.save over the same file at every step: each save's close,
        in its own region, is that save's, not a late close of the save
        before (which stretched each save over the step between: the saves
        counted 772.8 ms of a loop whose clock had 366.5, and the bound
        went from data to checkpoint, in a review's run); and its open,
        which truncates the last save, and its close are the save's, not
        the batch wait's (the wait held to the get_batch calls: 142 ms
        against their 58 before)."""
        self.check_blocking_saves("same")

    def check_blocking_saves(self, arg):
        truth, s = self.run_mode("checkpoint", None if arg == "checkpoint" else arg)
        v = s["verdict"]
        c = self.assert_saves(truth, v)
        self.assertEqual(c["background_ns"], 0)
        self.assertEqual(c["blocking_ns"], c["ns"])
        self.assert_bracketed(v["loop"]["ns"], truth, "loop")
        self.assertEqual(c["per_mille"], c["blocking_ns"] * 1000 // v["loop"]["ns"])
        if c["per_mille"] >= 100 and c["per_mille"] >= v["batch_wait"]["per_mille"]:
            self.assertEqual(v["bound"], "checkpoint")
            found = [f for f in v["findings"] if f["rule"] == "checkpoint"]
            self.assertEqual(len(found), 1, v["findings"])
            self.assertIn("asynchronously", found[0]["advice"])
        self.assert_bracketed(v["batch_wait"]["ns"], truth, "wait")

    def test_checkpoints_saved_in_the_background(self):
        truth, s = self.run_mode("checkpoint", "background")
        v = s["verdict"]
        c = self.assert_saves(truth, v, background=True)
        self.assertEqual(c["blocking_ns"], 0)
        self.assertEqual(c["background_ns"], c["ns"])
        self.assertNotEqual(v["bound"], "checkpoint")
        self.assertIn("all in the background", self.summary(text=True))

    def test_the_whole_run_has_the_checkpoints(self):
        """Under DLPROF_KEEP, the whole run, from counters, said nothing of
        the saves that stopped the loop: each torch.save, settled by its
        fsync (or sync), is the kept events' save there too (every event
        kept), on the loop's thread or in the background, and over the
        same file at every step each save's close its own."""
        for arg in ("checkpoint", "sync", "background", "same"):
            with self.subTest(arg=arg):
                shutil.rmtree(self.traces, ignore_errors=True)  # one run each
                truth, s = self.run_mode("checkpoint", None if arg == "checkpoint" else arg,
                                         env={"DLPROF_KEEP": "1h"})
                full, whole = s["verdict"]["checkpoint"], s["whole_run"]["verdict"]
                c = whole["checkpoint"]
                self.assertIsNotNone(c, whole)
                for key in ("writes", "bytes", "ns", "blocking_ns", "background_ns"):
                    self.assertEqual(c[key], full[key], (key, c, full))
                self.assertEqual(whole["bound"] == "checkpoint",
                                 s["verdict"]["bound"] == "checkpoint", (whole, s["verdict"]))


if __name__ == "__main__":
    dltest.main()
