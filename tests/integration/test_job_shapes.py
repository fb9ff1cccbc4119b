"""The verdict on jobs as they really run (issue 48), each against what the
loop measured of itself (scripts/torch_jobs.py): a DataLoader loop that
starts with `from mpi4py import MPI` (Open MPI's singleton, which forks
orted) or MPICH's singleton MPI_Init, or runs as two ranks under mpirun;
workers that start slowly at every epoch, or once; a loop without a
DataLoader (get_batch between optimizer steps); checkpoints saved in the
loop or on a thread of their own. Shares within 10 % of the loop's own
(and 2 ms a call: the loop's clock reads sit just outside the traced
regions and calls), counts exact."""

import ctypes.util
import json
import os
import subprocess

import dltest
import dltest.mpi as mpitest
from dltest.pytorch import TorchTestCase, bootstrap_env

SCRIPT = dltest.script("torch_jobs.py")
MS = 1000000
PARTS = ("reading", "preprocessing", "handover", "worker_startup")


def has_mpi4py():
    p = subprocess.run([dltest.SYSTEM_PYTHON, "-c", "import mpi4py"], capture_output=True,
                       env=dltest.base_env(), timeout=60)
    return p.returncode == 0


class JobShapesTest(TorchTestCase):

    def run_mode(self, mode, arg=None, env=None):
        # Open MPI's singleton forks orted, which refuses root unless told.
        run_env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                   "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
        run_env.update(env or {})
        truth, _ = self.run_truth(SCRIPT, mode, *([arg] if arg else []), env=run_env)
        self.decode()
        return truth, self.summary()

    def assert_near(self, got, want, calls, what):
        """Within 10 % of the truth and 2 ms a call."""
        self.assertLessEqual(abs(got - want), want // 10 + 2 * MS * calls, (what, got, want))

    def assert_loader_loop(self, truth, s):
        v = s["verdict"]
        loop, wait = v["loop"], v["batch_wait"]
        self.assertEqual(loop["basis"], "dataloader")
        self.assertEqual(wait["steps"], truth["batches"])
        self.assertEqual(loop["steps"], truth["steps"])
        self.assertEqual(sum(wait[p + "_ns"] for p in PARTS), wait["ns"])
        calls = truth["batches"] + 2 * len(truth["pass_worker_startup_ns"])
        self.assert_near(wait["ns"], truth["batch_wait_ns"], calls, "batch wait")
        self.assert_near(loop["ns"], truth["loop_ns"], calls, "loop")
        self.assert_near(wait["worker_startup_ns"], truth["worker_startup_ns"], calls,
                         "worker start-up")
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
        self.assertEqual(v["bound"], "data")
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
            self.assert_near(r["batch_wait_ns"], truth["batch_wait_ns"], truth["batches"] + 2,
                             "rank %d" % rank)
            self.assert_near(r["worker_startup_ns"], truth["worker_startup_ns"],
                             truth["batches"] + 2, "rank %d start-up" % rank)
        roles = self.roles(s["verdict"])
        self.assertEqual((roles["main"], roles["loader workers"]), (2, 4), s["verdict"]["roles"])

    # --- the workers' start-up ----------------------------------------------

    def test_workers_that_start_every_epoch(self):
        """Three epochs, non-persistent workers with a 200 ms worker_init_fn:
        each pass's first wait is mostly start-up, which persistent workers
        would save after the first pass."""
        truth, s = self.run_mode("startup")
        v = self.assert_loader_loop(truth, s)
        wait = v["batch_wait"]
        self.assertEqual(wait["cause"], "worker_startup")
        passes = {p["pass"]: p["ns"] for p in wait["worker_startup_passes"]}
        self.assertEqual(sorted(passes), [1, 2, 3])
        for n, want in enumerate(truth["pass_worker_startup_ns"], 1):
            self.assert_near(passes[n], want, 6, "pass %d" % n)
        self.assert_near(wait["persistent_workers_save_ns"],
                         sum(truth["pass_worker_startup_ns"][1:]), 12, "persistent_workers")
        self.assertEqual(self.roles(v)["loader workers"], 6)
        first = v["findings"][0]
        self.assertEqual(first["rule"], "batch_wait")
        self.assertIn("persistent_workers=True", first["advice"])
        self.assertIn("worker_startup", [f["rule"] for f in v["findings"]])
        text = self.summary(text=True)
        self.assertIn("worker start-up by pass: pass 1 ", text)

    def test_persistent_workers_start_once(self):
        truth, s = self.run_mode("startup", "persistent")
        v = self.assert_loader_loop(truth, s)
        wait = v["batch_wait"]
        passes = {p["pass"]: p["ns"] for p in wait["worker_startup_passes"]}
        self.assert_near(passes[1], truth["pass_worker_startup_ns"][0], 6, "pass 1")
        # Later passes resume the same workers: hardly any start-up left.
        self.assertLess(wait["persistent_workers_save_ns"], passes[1] // 4, wait)
        self.assertEqual(self.roles(v)["loader workers"], 2)

    # --- no DataLoader ------------------------------------------------------

    def test_a_get_batch_loop_without_a_dataloader(self):
        truth, s = self.run_mode("get_batch")
        v = s["verdict"]
        loop, wait = v["loop"], v["batch_wait"]
        self.assertEqual(loop["basis"], "steps")
        self.assertEqual(loop["steps"], truth["steps"])
        self.assertEqual(wait["steps"], truth["steps"])
        self.assertEqual(wait["reading_ns"], wait["ns"])
        self.assertEqual(wait["cause"], "reading")
        self.assert_near(wait["ns"], truth["batch_wait_ns"], truth["steps"], "batch wait")
        self.assert_near(loop["ns"], truth["loop_ns"], truth["steps"], "loop")
        text = self.summary(text=True)
        self.assertIn("no DataLoader: the loop is the optimizer steps", text)

    # --- checkpoints --------------------------------------------------------

    def assert_saves(self, truth, v):
        saves = truth["saves"]
        c = v["checkpoint"]
        self.assertIsNotNone(c, v)
        self.assertEqual(c["writes"], len(saves))
        # torch.save's bytes, give or take the zip's own writes.
        self.assertLessEqual(abs(c["bytes"] - sum(b for _, _, b in saves)), 4096 * len(saves), c)
        self.assert_near(c["ns"], sum(e - s for s, e, _ in saves), len(saves), "saves")
        return c

    def test_checkpoints_that_stop_the_loop(self):
        """A 48 MiB torch.save and fsync every fourth step, on the loop's
        thread: the loop stops for each."""
        truth, s = self.run_mode("checkpoint")
        v = s["verdict"]
        c = self.assert_saves(truth, v)
        self.assertEqual(c["background_ns"], 0)
        self.assertEqual(c["blocking_ns"], c["ns"])
        self.assert_near(v["loop"]["ns"], truth["loop_ns"], truth["steps"], "loop")
        self.assertEqual(c["per_mille"], c["blocking_ns"] * 1000 // v["loop"]["ns"])
        if c["per_mille"] >= 100 and c["per_mille"] >= v["batch_wait"]["per_mille"]:
            self.assertEqual(v["bound"], "checkpoint")
            self.assertEqual(v["findings"][0]["rule"], "checkpoint")
            self.assertIn("asynchronously", v["findings"][0]["advice"])
        self.assert_near(v["batch_wait"]["ns"], truth["batch_wait_ns"], truth["steps"], "batch wait")

    def test_checkpoints_saved_in_the_background(self):
        truth, s = self.run_mode("checkpoint", "background")
        v = s["verdict"]
        c = self.assert_saves(truth, v)
        self.assertEqual(c["blocking_ns"], 0)
        self.assertEqual(c["background_ns"], c["ns"])
        self.assertNotEqual(v["bound"], "checkpoint")
        self.assertIn("all in the background", self.summary(text=True))


if __name__ == "__main__":
    dltest.main()
