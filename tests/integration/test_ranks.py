"""Per-rank figures (docs/ANALYSIS.md, "Ranks") from real multi-process runs:

- two ranks of a "CUDA program" against the fake libcupti (tests/gpu), each
  on its own device, run at the same time: each rank's GPU busy time, data
  stall and I/O are its own, as worked out here from the decoded events;
- a torchrun-style job without GPU (ranks from RANK/LOCAL_RANK/WORLD_SIZE,
  no MPI) whose rank 1 has a slow dataset: batch wait singles rank 1 out.

    env (ctest): DLPROF_LIB, DLPROF_DUMP, DLPROF_TEST_BIN, DLPROF_SYSTEM_PYTHON,
    DLPROF_PYTHON_DIR, and for the GPU case DLPROF_CUPTI_PLUGIN,
    DLPROF_FAKE_CUPTI, DLPROF_FAKE_CUDA_APP
"""

import json
import os
import subprocess
import unittest

import dltest

PYDIR = os.environ.get("DLPROF_PYTHON_DIR", "")

LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
               "PMI_RANK", "PMIX_RANK", "PALS_RANKID", "FLUX_TASK_RANK", "JSM_NAMESPACE_RANK",
               "MV2_COMM_WORLD_RANK", "ALPS_APP_PE", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID")


def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def length(intervals):
    return sum(e - s for s, e in intervals)


def minus(a, b):
    """The parts of union `a` outside union `b`."""
    out = []
    for s, e in a:
        at = s
        for bs, be in b:
            if be <= at or bs >= e:
                continue
            if bs > at:
                out.append([at, bs])
            at = max(at, be)
        if at < e:
            out.append([at, e])
    return out


def clip(intervals, lo, hi):
    return [[max(s, lo), min(e, hi)] for s, e in intervals if min(e, hi) > max(s, lo)]


class RanksTest(dltest.TraceTestCase):

    def clean_env(self, extra):
        env = {k: None for k in LAUNCH_VARS}
        env.update(extra)
        return env

    def test_ranks_on_their_own_devices(self):
        if not dltest.HAS_FAKE_CUDA:
            self.skipTest("no CUPTI plugin built")
        data = os.path.join(self.data, "batch.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 8192)
        procs = []
        for rank in (0, 1):
            env = dltest.traced_env(self.traces, self.clean_env(dltest.fake_cuda_env({
                "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                "FAKE_CUPTI_DEVICE": str(rank), "DLPROF_RUN_ID": "ranks-gpu"})))
            procs.append(subprocess.Popen([dltest.FAKE_CUDA_APP, dltest.CUPTI_PLUGIN, data, "normal"],
                                          env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          stdin=subprocess.DEVNULL, text=True))
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn("DONE", out)
        trace = self.decode()
        s = self.summary(self.traces)
        self.assertEqual(sorted(s["ranks"]), ["0", "1"])
        stall_sum = 0
        for rank in (0, 1):
            r = s["ranks"][str(rank)]
            mine = [e for e in trace.events if e.get("rank") == rank]
            kernels = [e for e in mine if e.get("cat") == "cuda" and
                       (e.get("kind") or e["name"]) == "kernel"]
            self.assertEqual(len(kernels), 10)
            self.assertEqual({e["device"] for e in kernels}, {rank})
            busy = union([e["ts"], e["ts"] + e["dur"]] for e in kernels)
            first = min(e["ts"] for e in kernels)
            last = max(e["ts"] + e["dur"] for e in kernels)
            io = [e for e in mine if e["cat"] in ("posix", "stdio") and not e.get("nested")]
            io_union = union([e["ts"], e["ts"] + e["dur"]] for e in io)
            stall = length(minus(clip(io_union, first, last), busy))
            reads = [e for e in io if e["name"] in dltest.READ_NAMES]
            self.assertEqual(r["rank"], rank)
            self.assertEqual(r["devices"], [rank])
            self.assertEqual(r["processes"], 1)
            self.assertEqual(r["gpu_first_ns"], first)
            self.assertEqual(r["gpu_last_ns"], last)
            self.assertEqual(r["gpu_busy_ns"], length(busy))
            self.assertEqual(r["gpu_compute_ns"], length(busy))
            self.assertEqual(r["gpu_communication_ns"], 0)
            self.assertEqual(r["gpu_memory_ns"], 0)
            self.assertEqual(r["gpu_idle_ns"], last - first - length(busy))
            # The read between the kernels, with 2 ms sleeps around it.
            self.assertGreater(stall, 0)
            self.assertEqual(r["data_stall_ns"], stall)
            self.assertEqual(r["io_ops"], len(io))
            self.assertEqual(r["io_ns"], sum(e["dur"] for e in io))
            self.assertEqual(r["read_bytes"], sum(e["bytes"] for e in reads))
            self.assertGreaterEqual(r["read_bytes"], 4096)
            self.assertEqual(r["batch_wait_ns"], 0)
            self.assertEqual(r["steps"], [])
            self.assertEqual(r["straggler_loss_ns"], 0)
            stall_sum += stall
        # The job's stall is the ranks' added up, not "no device busy".
        self.assertEqual(s["gpu"]["data_stall_ns"], stall_sum)
        self.assertEqual(s["rank_distribution"]["data_stall_ns"]["total_ns"], stall_sum)

    def test_rank_from_each_launchers_variable(self):
        # One process per launcher's variable, each its own rank, in one run;
        # the trace header, the events and the summary all carry it.
        rank_vars = [v for v in LAUNCH_VARS if v not in ("LOCAL_RANK", "WORLD_SIZE", "SLURM_JOB_ID",
                                                         "TORCHELASTIC_RUN_ID")]
        cases = {var: rank for rank, var in enumerate(rank_vars)}
        pids = {}
        for var, rank in cases.items():
            out = os.path.join(self.data, var)
            p = self.run_traced([dltest.program("write_file"), out, "3000"],
                                self.clean_env({var: str(rank), "DLPROF_RUN_ID": "ranks"}))
            pids[int(p.stdout.split()[1])] = (var, rank)
        headers = {dltest.read_header(f)["pid"]: dltest.read_header(f)["rank"]
                   for f in dltest.trace_files(self.traces)}
        self.assertEqual(headers, {pid: rank for pid, (_, rank) in pids.items()})
        p = dltest.run([dltest.DUMP, "--format", "jsonl", self.traces], dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        writes = {}
        for e in map(json.loads, p.stdout.splitlines()):
            if e["name"] == "write":
                writes.setdefault(e["pid"], set()).add(e["rank"])
        self.assertEqual(writes, {pid: {rank} for pid, (_, rank) in pids.items()})
        summary = self.summary(self.traces)
        self.assertEqual(sorted(map(int, summary["ranks"])), sorted(cases.values()))

    def test_batch_wait_singles_out_the_slow_rank(self):
        if not PYDIR:
            self.skipTest("DLPROF_PYTHON_DIR not set")
        if not dltest.has_torch():
            self.skipTest("no torch in " + dltest.SYSTEM_PYTHON)
        with open(os.path.join(self.data, "items.bin"), "wb") as f:
            f.write(bytes(range(256)) * 50)
        # (0.25 s an item: the fast rank's own wait grows with the machine's
        # load, and at 0.15 s a loaded machine once left the two 0.39 s apart.)
        steps, delay = 6, 0.25
        p = self.run_traced(
            [dltest.SYSTEM_PYTHON, dltest.script("rank_loader.py"), "launch", self.data,
             str(steps), "1", str(delay)],
            env=self.clean_env({"PYTHONPATH": PYDIR}), timeout=120)
        self.assertIn("rank 0 steps %d" % steps, p.stdout)
        self.assertIn("rank 1 steps %d" % steps, p.stdout)
        self.decode()
        s = self.summary(self.traces)
        self.assertEqual(sorted(s["ranks"]), ["0", "1"])
        fast, slow = s["ranks"]["0"], s["ranks"]["1"]
        for r in (fast, slow):
            self.assertEqual(r["processes"], 3)  # the rank and its 2 workers
            # A batch wait per batch, and the last fetch, which found the
            # loader exhausted.
            self.assertEqual(len(r["steps"]), steps + 1)
            self.assertEqual([x["step"] for x in r["steps"]], list(range(1, steps + 2)))
            self.assertEqual(r["batch_wait_ns"], sum(x["batch_wait_ns"] for x in r["steps"]))
            self.assertGreaterEqual(r["read_bytes"], 2 * steps * 1000)
            self.assertEqual(r["devices"], [])
            self.assertEqual(r["data_stall_ns"], 0)  # no GPU: no window
        # 12 items of 0.25 s over 2 workers: the last batch is ready 1.5 s
        # after the loop started, at the earliest, and the loop does nothing
        # but wait.
        self.assertGreater(slow["batch_wait_ns"], 1.2e9)
        self.assertGreater(slow["batch_wait_ns"] - fast["batch_wait_ns"], 0.4e9)
        self.assertEqual(s["slowest_loader_rank"], 1)
        per_step = s["slowest_loader_per_step"]
        self.assertEqual(len(per_step), steps + 1)
        self.assertEqual(per_step[0]["rank"], 1)
        dist = s["rank_distribution"]["batch_wait_ns"]
        self.assertEqual(dist["max_ns"], slow["batch_wait_ns"])
        self.assertEqual(dist["min_ns"], fast["batch_wait_ns"])
        self.assertEqual(dist["top"][0]["rank"], 1)
        text = dltest.run([dltest.DUMP, "--summary", self.traces], dltest.base_env()).stdout
        self.assertIn("slowest loader: rank 1 on ", text)
        # Each rank's row names its wait's largest cause (issue 31): the slow
        # rank's workers slept in __getitem__, so preprocessing, with the
        # share its JSON gives.
        rows = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) > 4 and f[0] in ("0", "1") and f[2] == str(steps + 1):
                rows[int(f[0])] = line
        share = 1000 * slow["preprocessing_ns"] // slow["batch_wait_ns"]  # as PerMille: truncated
        self.assertIn(" preprocessing %d.%d %% " % (share // 10, share % 10), rows[1])
        self.assertGreater(slow["preprocessing_ns"], max(slow["reading_ns"], slow["handover_ns"]))


if __name__ == "__main__":
    dltest.main()
