"""Runs, the trace layout and the clock pairs of the writer.

- The run id in every trace header comes from DLPROF_RUN_ID, else the batch
  system's job id (Slurm, PBS, Cobalt, Flux, LSF), else the launcher's job
  identity (PMIx, Open MPI, torchrun), else a traced ancestor's, else an id
  made by the first traced process, passed on to forked and exec'ed
  children; two separate invocations get two runs.
- Traces go to DLPROF_DIR/<run id>/<host>/.
- Every block's clock pair states an error bound, non-zero and small, and an
  idle process still writes a pair every ~5 s.
See lib/core/run_id.h and docs/USER_GUIDE.md, "Runs".
"""

import json
import os
import re
import shutil
import socket
import subprocess
import time
import unittest

import dltest

# Everything that names a run, removed so that each test sets its own.
RUN_VARS = ("DLPROF_RUN_ID", "DLPROF_RUN_ID_AUTO", "SLURM_JOB_ID", "PBS_JOBID",
            "COBALT_JOBID", "FLUX_JOB_ID", "LSB_JOBID", "LSB_JOBINDEX", "PMIX_NAMESPACE",
            "OMPI_MCA_ess_base_jobid", "TORCHELASTIC_RUN_ID", "PMI_RANK", "PMI_FD",
            "HYDI_CONTROL_FD")
HOST = socket.gethostname()


class RunTest(dltest.TraceTestCase):

    def env(self, **extra):
        e = {k: None for k in RUN_VARS}
        e.update(extra)
        return e

    def write_one(self, name="out.bin", **extra):
        """One traced write_file; returns its trace's path."""
        before = set(dltest.trace_files(self.traces))
        p = self.run_traced([dltest.program("write_file"), os.path.join(self.data, name), "3000"],
                            env=self.env(**extra))
        self.assertEqual(p.returncode, 0, p.stderr)
        (new,) = set(dltest.trace_files(self.traces)) - before
        return new

    def run_id_of(self, path):
        return dltest.read_header_strings(path)["run_id"]

    def assert_layout(self, path, run_id):
        """`path` is DLPROF_DIR/<run_id>/<host>/<file>."""
        rel = os.path.relpath(path, self.traces).split(os.sep)
        self.assertEqual(rel[:2], [run_id, HOST], path)
        self.assertEqual(len(rel), 3, path)

    # --- where the id comes from ---------------------------------------

    def test_batch_job_ids(self):
        cases = [({"SLURM_JOB_ID": "4242"}, "slurm-4242"),
                 ({"PBS_JOBID": "123[4].pbs/server"}, "pbs-123_4_.pbs_server"),
                 ({"COBALT_JOBID": "77"}, "cobalt-77"),
                 ({"FLUX_JOB_ID": "\u0192ABC9"}, "flux-fABC9"),
                 ({"LSB_JOBID": "55", "LSB_JOBINDEX": "3"}, "lsf-55_3"),
                 ({"LSB_JOBID": "56", "LSB_JOBINDEX": "0"}, "lsf-56"),
                 # The batch system before a launcher inside it.
                 ({"SLURM_JOB_ID": "9", "PMIX_NAMESPACE": "ns"}, "slurm-9")]
        for i, (extra, want) in enumerate(cases):
            with self.subTest(want=want):
                f = self.write_one("b%d.bin" % i, **extra)
                self.assertEqual(self.run_id_of(f), want)
                self.assert_layout(f, want)

    def test_launcher_job_ids(self):
        cases = [({"PMIX_NAMESPACE": "prterun-h-12@1", "OMPI_MCA_ess_base_jobid": "5"},
                  "pmix-prterun-h-12_1"),
                 ({"OMPI_MCA_ess_base_jobid": "73859073"}, "ompi-73859073"),
                 ({"TORCHELASTIC_RUN_ID": "c0ffee"}, "torchrun-c0ffee"),
                 # A traced ancestor's own id ranks below the job's ...
                 ({"DLPROF_RUN_ID": "made", "DLPROF_RUN_ID_AUTO": "made",
                   "PMIX_NAMESPACE": "42"}, "pmix-42"),
                 ({"DLPROF_RUN_ID": "made", "DLPROF_RUN_ID_AUTO": "made"}, "made"),
                 # ... one the user set does not.
                 ({"DLPROF_RUN_ID": "mine", "DLPROF_RUN_ID_AUTO": "made",
                   "PMIX_NAMESPACE": "42"}, "mine")]
        for i, (extra, want) in enumerate(cases):
            with self.subTest(want=want):
                f = self.write_one("l%d.bin" % i, **extra)
                self.assertEqual(self.run_id_of(f), want)
                # The made-up id a job id overrode is the parent run (the
                # traced launcher's, which a reader joins to this one).
                parent = "made" if want == "pmix-42" else ""
                self.assertEqual(dltest.read_header_strings(f)["parent_run_id"], parent)

    def test_dlprof_run_id_comes_first_and_is_a_safe_name(self):
        f = self.write_one(DLPROF_RUN_ID="exp-7", SLURM_JOB_ID="4242")
        self.assertEqual(self.run_id_of(f), "exp-7")
        self.assert_layout(f, "exp-7")
        for i, (given, want) in enumerate([("../../etc", "_._.._etc"), (".hidden", "_hidden"),
                                           ("a b/c\u00e9", "a_b_c__"),
                                           ("x" * 300, "x" * 128)]):
            with self.subTest(given=given):
                f = self.write_one("s%d.bin" % i, DLPROF_RUN_ID=given)
                self.assertEqual(self.run_id_of(f), want)
                self.assert_layout(f, want)

    # --- a run made by the first traced process ---------------------------

    def test_made_id_is_inherited_by_forked_and_execed_children(self):
        files = dltest.write_files(self.data, 3, lambda i: 5000 + i)
        p = self.run_traced([dltest.program("fork_exec"), self.data, self.data,
                             dltest.program("fork_children"), "_exit"] + sorted(files),
                            env=self.env())
        self.assertEqual(p.returncode, 0, p.stderr)
        traces = dltest.trace_files(self.traces)
        # fork_exec, its child before and after exec, and that one's three
        # forked children.
        self.assertEqual(len(traces), 6, traces)
        ids = {self.run_id_of(f) for f in traces}
        self.assertEqual(len(ids), 1, ids)
        (run_id,) = ids
        self.assertRegex(run_id, r"^%s-\d{8}-\d{6}-\d+-[0-9a-f]{4}$" % re.escape(HOST))
        for f in traces:
            self.assert_layout(f, run_id)
        self.decode()  # and the decoder reads the tree

    def test_two_invocations_are_two_runs(self):
        a = self.write_one("a.bin")
        b = self.write_one("b.bin")
        self.assertNotEqual(self.run_id_of(a), self.run_id_of(b))
        self.assertEqual(sorted(os.listdir(self.traces)),
                         sorted([self.run_id_of(a), self.run_id_of(b)]))

    def test_hydra_ranks_of_a_host_share_the_launchers_identity(self):
        # MPICH's Hydra names no job (see USER_GUIDE.md, "Runs"): the ranks of
        # a host share the proxy that started them.
        mpiexec = shutil.which("mpiexec.mpich")
        if not mpiexec:
            self.skipTest("no mpiexec.mpich")
        env = dltest.traced_env(self.traces, self.env())
        cmd = [mpiexec, "-launcher", "fork", "-n", "2"]
        for k in ("LD_PRELOAD", "DLPROF_DIR", "DLPROF_QUIET"):
            cmd += ["-env", k, env.pop(k)]
        cmd += ["sh", "-c", 'exec "$0" "$1.$PMI_RANK" 2000', dltest.program("write_file"),
                os.path.join(self.data, "r")]
        p = dltest.run(cmd, env)
        self.assertEqual(p.returncode, 0, p.stderr)
        traces = [f for f in dltest.trace_files(self.traces)
                  if os.path.basename(f).startswith("write_file-")]
        self.assertEqual(len(traces), 2, traces)
        ids = {self.run_id_of(f) for f in traces}
        self.assertEqual(len(ids), 1, ids)
        self.assertRegex(ids.pop(), r"^hydra-%s-\d+-\d+$" % re.escape(HOST))

    # --- --run: a run as users name it -------------------------------------

    def test_run_takes_a_bare_job_id(self):
        # Slurm jobs 101 and 102, PBS job 102 on server "sched" and LSF job
        # 103's array elements 1 and 2: "--run 101" is slurm-101; "102" and
        # "103" could each be two runs, which the error names; "104" none.
        jobs = [("a", {"SLURM_JOB_ID": "101"}, 1), ("b", {"SLURM_JOB_ID": "102"}, 2),
                ("c", {"PBS_JOBID": "102.sched"}, 3),
                ("d", {"LSB_JOBID": "103", "LSB_JOBINDEX": "1"}, 4),
                ("e", {"LSB_JOBID": "103", "LSB_JOBINDEX": "2"}, 5)]
        for name, extra, writes in jobs:
            for i in range(writes):
                self.write_one("%s%d.bin" % (name, i), **extra)
        self.assertEqual(sorted(os.listdir(self.traces)),
                         ["lsf-103_1", "lsf-103_2", "pbs-102.sched", "slurm-101", "slurm-102"])

        def dump(run):
            return dltest.run([dltest.DUMP, "--run", run, "--format", "jsonl", self.traces],
                              dltest.base_env())
        for run, want, traces in (("101", "slurm-101", 1), ("slurm-101", "slurm-101", 1),
                                  ("102.sched", "pbs-102.sched", 3), ("103_2", "lsf-103_2", 5)):
            with self.subTest(run=run):
                p = dump(run)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("this is run %s (%d traces" % (want, traces), p.stderr)
                pids = {json.loads(l)["pid"] for l in p.stdout.splitlines()}
                self.assertEqual(len(pids), traces)
        for run, could in (("102", "slurm-102 pbs-102.sched"), ("103", "lsf-103_2 lsf-103_1")):
            with self.subTest(run=run):
                p = dump(run)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertIn("no single run '%s' in the input: it could be " % run, p.stderr)
                self.assertEqual(sorted(p.stderr.split("it could be ")[1].split(" (")[0].split()),
                                 sorted(could.split()))
        p = dump("104")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("no run '104' in the input (runs: ", p.stderr)

    # --- clock pairs ------------------------------------------------------

    def test_clock_pairs_have_a_small_error_bound(self):
        f = self.write_one()
        blocks = [b for b in dltest.block_headers(f) if b["events"] > 0]
        self.assertTrue(blocks)
        for b in blocks:
            self.assertGreater(b["clock_error_ns"], 0, b)
            self.assertLess(b["clock_error_ns"], 1000000, b)

    def test_idle_process_writes_a_clock_pair_every_few_seconds(self):
        # sleep(1) traced for 6.5 s: no events after start, yet blocks that
        # carry only a clock pair (no events, not the final block, and an
        # error bound, which blocks of strings alone do not have).
        start = time.monotonic()
        p = self.run_traced(["sh", "-c", "sleep 6.5"], env=self.env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertGreaterEqual(time.monotonic() - start, 6.5)
        pairs = 0
        for f in dltest.trace_files(self.traces):
            for b in dltest.block_headers(f):
                if b["events"] == 0 and not b["flags"] & 1 and b["clock_error_ns"] > 0:
                    pairs += 1
        self.assertGreaterEqual(pairs, 1)


if __name__ == "__main__":
    dltest.main()
