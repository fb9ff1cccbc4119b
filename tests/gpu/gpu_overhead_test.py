"""bench/gpu_overhead.py without a GPU: its statistics, configurations,
schedule and count checks; that it stops at once, saying why, on a machine
that cannot run it; and its workload on the CPU under dlprof, counted the
way the benchmark counts a GPU run's trace.

    env: DLPROF_LIB, DLPROF_DUMP, DLPROF_SYSTEM_PYTHON (as ctest sets them),
         DLPROF_GPU_OVERHEAD (the benchmark's driver: the program under test)
"""

import os
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import dltest

GPU_OVERHEAD = os.environ.get("DLPROF_GPU_OVERHEAD", "")
go = dltest.load_module(GPU_OVERHEAD, "gpu_overhead")
# The workload beside it (torch is imported only inside its functions).
gw = dltest.load_module(os.path.join(os.path.dirname(GPU_OVERHEAD), "gpu_workload.py"),
                        "gpu_workload")


def ev(ts, cat, name, **kw):
    return dict(ts=ts, dur=1, cat=cat, name=name, **kw)


class LogicTest(unittest.TestCase):

    def test_configs(self):
        self.assertEqual(go.parse_configs("kernel, plain,kernel,default"),
                         ["plain", "kernel", "default"])
        self.assertEqual(go.parse_configs("sync")[0], "plain")  # ratios need it
        with self.assertRaises(ValueError):
            go.parse_configs("plain,kernels")
        self.assertEqual(go.recorded_kinds("plain"), set())
        self.assertEqual(go.recorded_kinds("profiler"), set())
        self.assertEqual(go.recorded_kinds("io"), set())
        self.assertEqual(go.recorded_kinds("memset"), {"memset"})
        self.assertEqual(go.recorded_kinds("default"), {"kernel", "memcpy", "memset", "sync"})
        for tuned in ("default-8m", "default-inline", "default-flush100", "default-convert"):
            self.assertEqual(go.recorded_kinds(tuned), go.recorded_kinds("default"))
        self.assertIn("driver", go.recorded_kinds("all"))

    def test_schedule_rotates_rounds(self):
        plan = go.schedule(["plain", "a", "b"], 4)
        self.assertEqual(len(plan), 12)
        for r in range(4):
            self.assertEqual(sorted(c for rr, c in plan if rr == r), ["a", "b", "plain"])
        firsts = [plan[3 * r][1] for r in range(4)]
        self.assertEqual(firsts, ["plain", "a", "b", "plain"])

    def test_schedule_gives_the_compared_more_rounds(self):
        plan = go.schedule(["plain", "a", "b", "c"], 2, focus=["plain", "b"], focus_reps=5)
        self.assertEqual(len(plan), 2 * 4 + 3 * 2)
        for r in range(2):
            self.assertEqual(sorted(c for rr, c in plan if rr == r), ["a", "b", "c", "plain"])
        for r in range(2, 5):
            self.assertEqual(sorted(c for rr, c in plan if rr == r), ["b", "plain"])
        self.assertEqual([c for r, c in plan if r == 3], ["b", "plain"])  # rotated
        self.assertEqual(go.schedule(["plain", "a"], 2, focus=["a"], focus_reps=1),
                         go.schedule(["plain", "a"], 2))
        args = go.parse_args(["--configs", "kernel,io", "--reps", "2"])
        self.assertEqual((args.focus_list, args.focus_reps), (["plain", "io"], 6))

    def test_fastest_runs_and_table(self):
        times = {"plain": {0: 100, 1: 90, 2: 120}, "x": {0: 120, 1: 99, 2: 150}}
        self.assertAlmostEqual(go.min_ratio(times, "x"), 1.1)
        self.assertIsNone(go.min_ratio(times, "missing"))
        steps = {c: [t / 10 for t in v.values()] for c, v in times.items()}
        cpu = {"plain": {0: 50, 1: 50, 2: 50}, "x": {0: 60, 1: 55, 2: 65}}
        cpu_steps = {c: [t / 10 for t in v.values()] for c, v in cpu.items()}
        walls = {"plain": [1.0, 1.0, 1.0], "x": [2.0, 2.0, 2.0]}
        lines = go.table(["plain", "x", "gone"], times, steps, cpu, cpu_steps, walls).split("\n")
        self.assertEqual(len(lines), 4)
        x = lines[2].split()
        # ms/step median and min, slowdown median, of the fastest runs,
        # ... CPU ms/step median and min, CPU slowdown median and of the
        # least CPU-hungry runs (55 against 50), wall s.
        self.assertEqual(x[:5], ["x", "0.000", "0.000", "20.0%", "10.0%"])
        self.assertEqual(x[-5:], ["0.000", "0.000", "20.0%", "10.0%", "2.0"])
        self.assertEqual(lines[1].split()[-5:], ["0.000", "0.000", "0.0%", "0.0%", "1.0"])
        self.assertIn("no successful run", lines[3])

    def test_profiler_kernels_are_kernel_activities(self):
        """torch.profiler lists a record_function's GPU-side user annotation
        (Optimizer.step#SGD.step) among the CUDA events: it is no kernel."""
        class K:  # a kineto event as torch.profiler gives it
            def __init__(self, name, cuda, annotation=None):
                self._name, self._cuda = name, cuda
                if annotation is not None:
                    self.is_user_annotation = lambda: annotation

            def name(self):
                return self._name

            def device_type(self):
                return "CUDA" if self._cuda else "CPU"

        step = "Optimizer.step#SGD.step"
        events = [K(step, False), K("aten::add_", False), K("cudaLaunchKernel", False),
                  K("void at::native::vectorized_elementwise_kernel<4>", True),
                  K("void at::native::vectorized_elementwise_kernel<4>", True),
                  K("Memcpy HtoD (Pageable -> Device)", True), K("Memset (Device)", True)]
        # Recent torch says which are annotations; older ones do not, and
        # the device event named as a host event is one.
        for annotated in (K(step, True, annotation=True), K(step, True)):
            c = gw.count_gpu_activities(events + [annotated] * 32, "CUDA")
            self.assertEqual(c, {"kernel": 2, "memcpy": 1, "memset": 1, "annotation": 32})
        c = gw.count_gpu_activities(events + [K("sgd_kernel", True, annotation=False)], "CUDA")
        self.assertEqual(c["kernel"], 3)

    def test_statistics(self):
        self.assertEqual(go.quantile([5], 0.5), 5)
        self.assertEqual(go.quantile([4, 1, 3, 2], 0.5), 2.5)
        self.assertEqual(go.quantile([1, 2, 3, 4, 5], 0.25), 2)
        self.assertAlmostEqual(go.quantile([0, 10], 0.75), 7.5)
        times = {"plain": {0: 100, 1: 200, 2: 100, 3: 50},
                 "x": {0: 110, 1: 260, 2: 120}}  # round 3 failed for x
        s = go.ratio_summary(times, "x")
        self.assertEqual(s["n"], 3)
        self.assertAlmostEqual(s["median"], 1.2)
        self.assertAlmostEqual(s["min"], 1.1)
        self.assertAlmostEqual(s["max"], 1.3)
        self.assertAlmostEqual(s["q1"], 1.15)
        self.assertAlmostEqual(s["q3"], 1.25)
        self.assertIsNone(go.ratio_summary(times, "missing"))

    def trace(self):
        d, m = "/w/data", "/w/marks"
        return d, m, [
            ev(5, "cuda", "k0", kind="kernel"),          # before the loop
            ev(10, "posix", "openat", path=m + "/begin"),
            ev(11, "posix", "read", path=d + "/s1.bin", bytes=1024),
            ev(12, "posix", "read", path=d + "/s1.bin", bytes=0),     # end of file
            ev(13, "posix", "read", path="/w/database/x", bytes=9),  # not a sample
            ev(14, "posix", "pread64", path=d + "/s2.bin", bytes=1024),
            ev(20, "cuda", "k1", kind="kernel"),
            ev(21, "cuda", "memcpy HtoD", kind="memcpy"),
            ev(22, "cuda", "memset", kind="memset"),
            ev(23, "cuda", "stream synchronize", kind="synchronization"),
            ev(24, "cuda", "cudaLaunchKernel", kind="cuda_runtime"),
            ev(30, "posix", "openat", path=m + "/end"),
            ev(31, "cuda", "k2", kind="kernel"),          # after the loop
            ev(40, "posix", "read", path=d + "/s3.bin", bytes=1024),  # a worker, late
        ]

    def test_count_trace(self):
        d, m, events = self.trace()
        c = go.count_trace(iter(events), d, m)
        self.assertEqual(c, {"reads": 3, "marks": True, "kernel": 1, "memcpy": 1,
                             "memset": 1, "sync": 1})
        c = go.count_trace(iter(events[2:]), d, m)  # no begin marker
        self.assertFalse(c["marks"])
        self.assertEqual(c["kernel"], 0)

    def test_checks(self):
        d, m, events = self.trace()
        c = go.count_trace(iter(events), d, m)
        good = {"reads": 3, "kernel": 1, "memcpy": 1, "memset": 1}
        self.assertEqual(go.check_counts("default", c, good), [])
        self.assertEqual(go.check_counts("io", c, dict(good, kernel=7)), [])  # not recorded
        lost = go.check_counts("default", c, dict(good, kernel=2, reads=4))
        self.assertEqual(len(lost), 2, lost)
        self.assertTrue(any("1 kernel records" in p for p in lost), lost)
        self.assertTrue(any("3 sample reads" in p for p in lost), lost)
        no_sync = dict(c, sync=0)
        self.assertEqual(len(go.check_counts("sync", no_sync, good)), 1)
        self.assertEqual(len(go.check_counts("kernel", dict(c, marks=False), good)), 1)

        runs = [("kernel", 0, c, 3), ("default", 0, c, 3), ("default", 1, dict(c, kernel=0), 3)]
        self.assertEqual(len(go.final_checks(runs, good)), 1)
        # Without a profiler run, disagreeing runs are still caught.
        problems = go.final_checks(runs, {"reads": 3})
        self.assertTrue(any("kernel records differ" in p for p in problems), problems)
        self.assertEqual(go.final_checks(runs[:2], {"reads": 3}), [])
        self.assertEqual(len(go.final_checks([("io", 0, c, 4)], {"reads": 5})), 2)

    def test_no_gpu_reason(self):
        self.assertIsNone(go.no_gpu_reason(0, "NVIDIA H100 torch 2.5"))
        self.assertEqual(go.no_gpu_reason(3, "x\nno CUDA driver (stub)\n"), "no CUDA driver (stub)")


class NoGpuTest(unittest.TestCase):

    def test_says_why_and_stops(self):
        with tempfile.TemporaryDirectory() as tmp:
            stub = os.path.join(tmp, "python")
            with open(stub, "w") as f:
                f.write("#!/bin/sh\necho 'no CUDA driver (stub)'\nexit 3\n")
            os.chmod(stub, stat.S_IRWXU)
            t0 = time.monotonic()
            p = subprocess.run([sys.executable, GPU_OVERHEAD,
                                "--python", stub, "--build", tmp],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, go.NO_GPU, p.stderr)
            self.assertIn("cannot run the GPU benchmark: no CUDA driver (stub)", p.stderr)
            self.assertIn("Nothing was measured", p.stderr)
            self.assertLess(time.monotonic() - t0, 30)
            self.assertEqual(os.listdir(tmp), ["python"])  # no data made


class WorkloadOnCpuTest(unittest.TestCase):
    """The workload script on the CPU under dlprof: reads and markers are
    counted the way a GPU run's are."""

    def test_reads_and_markers(self):
        lib, dump = os.environ.get("DLPROF_LIB", ""), os.environ.get("DLPROF_DUMP", "")
        python = os.environ.get("DLPROF_SYSTEM_PYTHON", "/usr/bin/python3")
        if not (os.path.exists(lib) and os.path.exists(dump)):
            self.fail("DLPROF_LIB and DLPROF_DUMP must name the built library and dump")
        if not dltest.has_torch():
            self.skipTest("%s has no torch" % python)
        with tempfile.TemporaryDirectory() as tmp:
            data, marks, traces = (os.path.join(tmp, n) for n in ("data", "marks", "traces"))
            go.make_data(data, 96)
            os.makedirs(marks)
            env = go.run_env("io", lib, traces)
            p = subprocess.run([python, go.WORKLOAD, "--device", "cpu", "--data", data,
                                "--marks", marks, "--epochs", "2", "--depth", "2",
                                "--batch", "32", "--workers", "2"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=240)
            self.assertEqual(p.returncode, 0, p.stderr)
            res = go.json.loads(p.stdout.strip().splitlines()[-1])
            self.assertEqual(res["samples"], 96 * 3)  # warm-up and two timed epochs
            self.assertEqual(res["steps"], 6)
            counts, rc, err = go.decode_counts(dump, traces, data, marks)
            self.assertEqual(rc, 0, err)
            self.assertTrue(counts["marks"], counts)
            self.assertEqual(go.check_counts("io", counts, {"reads": res["samples"]}), [])

    def test_benchmark_runs_through_on_the_cpu(self):
        # The whole driver (rounds, counts, the table) with the CPU smoke
        # device: plain, profiler and dlprof without GPU records.
        lib, dump = os.environ.get("DLPROF_LIB", ""), os.environ.get("DLPROF_DUMP", "")
        python = os.environ.get("DLPROF_SYSTEM_PYTHON", "/usr/bin/python3")
        if not dltest.has_torch():
            self.skipTest("%s has no torch" % python)
        build = os.path.dirname(os.path.dirname(lib))
        p = subprocess.run([sys.executable, GPU_OVERHEAD,
                            "--device", "cpu", "--build", build, "--python", python,
                            "--configs", "io,profiler", "--reps", "1", "--focus-reps", "1",
                            "--epochs", "1",
                            "--files", "64", "--depth", "2"],
                           env=dict(os.environ, DLPROF_DUMP=dump), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=240)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("3 runs: 1 rounds of plain,io,profiler", p.stdout)
        # ms/step median and min, slowdown, of the fastest runs, ..., the
        # rounds, CPU ms/step median and min, CPU slowdown median and of the
        # least CPU-hungry runs, wall s.
        self.assertRegex(p.stdout, r"\nio +[0-9.]+ +[0-9.]+ +-?[0-9.]+% +-?[0-9.]+% .* 1 +"
                                   r"[0-9.]+ +[0-9.]+ +-?[0-9.]+% +-?[0-9.]+% +[0-9.]+\n")
        self.assertIn("no record lost", p.stdout)


if __name__ == "__main__":
    unittest.main()
