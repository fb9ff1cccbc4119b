"""The CUPTI plugin end to end on a machine without a GPU, against a fake
libcupti (fake_cupti/fake_cupti.cc) preloaded next to libdlprof.

Covers what the CPU unit tests cannot: attaching, the buffer callbacks,
the flush and translate threads, the forced flush at exit and at context
destroy, the tuning settings, both clock methods on the decoded timeline,
the zero-timestamp switch (detach at an API exit, attach again converting),
dropped records, another subscriber, a CUPTI of the wrong version, and a
forked child.

    env: DLPROF_LIB, DLPROF_DUMP, DLPROF_CUPTI_PLUGIN, DLPROF_FAKE_CUPTI,
         DLPROF_FAKE_CUDA_APP
"""

import os
import unittest

import dltest
import gpu_test  # (gpu_kind, gpu_name, gpu_events, end)

PLUGIN = os.environ.get("DLPROF_CUPTI_PLUGIN", "")
FAKE = os.environ.get("DLPROF_FAKE_CUPTI", "")
APP = os.environ.get("DLPROF_FAKE_CUDA_APP", "")


class FakeCuptiTest(dltest.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        dltest.check_environment()
        if not (PLUGIN and FAKE and APP):
            raise unittest.SkipTest("no CUPTI plugin built")

    def run_app(self, mode="normal", env=None, quiet=True, lost=False):
        """Runs the app traced in a fresh trace directory; `lost`: GPU records
        are expected to be lost, which dlprof-dump reports as dropped."""
        self.runs = getattr(self, "runs", 0) + 1
        traces = os.path.join(self.tmp, "traces%d" % self.runs)
        data = os.path.join(self.data, "batch.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 8192)
        extra = {"LD_PRELOAD": dltest.LIB + ":" + FAKE, "CUDA_INJECTION64_PATH": None}
        extra.update(env or {})
        p = self.run_traced([APP, PLUGIN, data, mode], env=extra, quiet=quiet, timeout=60,
                            trace_dir=traces)
        self.assertNotIn("FAKE_CUPTI:", p.stderr)
        facts = dict(l.split(" ", 1) for l in p.stdout.splitlines() if " " in l)
        trace = self.decode(traces, clean=not lost)
        if lost:
            self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
            for m in trace.messages():
                self.assertIn("events were dropped", m)
        return p, facts, data, trace

    def kernels(self, trace, name):
        return sorted((k for k in gpu_test.gpu_events(trace.events, "kernel")
                       if gpu_test.gpu_name(k).startswith(name + "(")),
                      key=lambda e: e["ts"])

    def reads(self, trace, data):
        return sorted((e for e in trace.events
                       if e.get("path") == data and e["name"] in dltest.READ_NAMES),
                      key=lambda e: e["ts"])

    def assert_read_between(self, read, before, after):
        self.assertLessEqual(gpu_test.end(before), read["ts"], (before, read))
        self.assertLessEqual(gpu_test.end(read), after["ts"], (read, after))

    def clocks(self, trace):
        """(method, reason) of each cupti_clock event. The reason is the
        event's fd: `reason` in docs/CUDA.md's presentation, else printed as
        `device` (the generic cuda mapping) or `fd`."""
        words = {"start": 0, "refresh": 1, "zero_timestamps": 2, "forced": 3}

        def reason(c):
            for key in ("reason", "device", "fd"):
                if key in c:
                    return words.get(c[key], c[key])
            return None
        return [(gpu_test.gpu_name(c), reason(c))
                for c in gpu_test.gpu_events(trace.events, "cupti_clock")]

    def check_normal_run(self, trace, data):
        before = self.kernels(trace, "before_kernel")
        after = self.kernels(trace, "after_kernel")
        self.assertEqual((len(before), len(after)), (5, 5))
        reads = self.reads(trace, data)
        self.assertEqual(len(reads), 1)
        self.assert_read_between(reads[0], before[-1], after[0])
        k = before[0]
        self.assertEqual(gpu_test.gpu_name(k), "before_kernel(float*, int)")
        self.assertEqual(k.get("device", k.get("fd")), 0)
        self.assertEqual(k.get("stream", k.get("offset")), 7)
        self.assertEqual(k["dur"], 2000)

    def test_convert_by_version(self):
        # CUPTI 13.0 Update 1 is on the list: CUPTI's own clock is converted.
        _, _, data, trace = self.run_app()
        self.check_normal_run(trace, data)
        clocks = self.clocks(trace)
        self.assertEqual(clocks[0], ("convert", 0))

    def test_bounded_trace_counts_the_gpus_busy_time(self):
        """DLPROF_KEEP: the counters' GPU busy time is the union of the
        kernels the fake reported (2 us each, apart or overlapping), which
        the kept events of so short a run all hold; the kernel rows count
        each."""
        _, _, data, trace = self.run_app(env={"DLPROF_KEEP": "1s"})
        self.check_normal_run(trace, data)
        kernels = gpu_test.gpu_events(trace.events, "kernel")
        spans = sorted((k["ts"], gpu_test.end(k)) for k in kernels)
        self.assertEqual(len(spans), 10)
        union, reached = 0, 0
        for start, end in spans:
            union += max(0, end - max(start, reached))
            reached = max(reached, end)
        w = self.summary(os.path.join(self.tmp, "traces%d" % self.runs))["whole_run"]
        self.assertEqual(w["gpu_busy_ns"], union, spans)
        self.assertEqual(sum(k["calls"] for k in w["kinds"] if k["name"] == "kernel"), 10)
        self.assertEqual(sum(p["gpu_busy_ns"] for p in w["points"]), union)
        self.assertEqual(w["verdict"]["gpu_busy"]["ns"], union)

    def test_callback_on_a_fixed_version(self):
        _, _, data, trace = self.run_app(env={"FAKE_CUPTI_VERSION": "130100"})
        self.check_normal_run(trace, data)
        self.assertEqual(self.clocks(trace), [("callback", 0)])

    def test_forced_methods(self):
        for method in ("callback", "convert"):
            _, _, data, trace = self.run_app(env={"DLPROF_CUPTI_CLOCK": method})
            self.check_normal_run(trace, data)
            self.assertEqual(self.clocks(trace)[0], (method, 3))

    def test_translation_in_place_and_other_settings(self):
        # The tuning settings (docs/CUDA.md) give the same trace: translation
        # in CUPTI's callback instead of the translate thread; small buffers
        # and a short flush period.
        for env in ({"DLPROF_CUPTI_TRANSLATE": "inline"},
                    {"DLPROF_CUPTI_BUFFER_KB": "64", "DLPROF_CUPTI_FLUSH_MS": "10"}):
            _, _, data, trace = self.run_app(env=env)
            self.check_normal_run(trace, data)

    def test_bad_setting_warns_once_and_traces(self):
        p, _, data, trace = self.run_app(env={"DLPROF_CUPTI_BUFFER_KB": "huge"}, quiet=False)
        self.assertEqual(p.stderr.count("DLPROF_CUPTI_BUFFER_KB"), 1, p.stderr)
        self.check_normal_run(trace, data)

    def test_zero_timestamps_switch_to_convert(self):
        p, facts, data, trace = self.run_app(
            "switch", env={"FAKE_CUPTI_ZERO": "1", "DLPROF_CUPTI_CLOCK": "callback"},
            quiet=False, lost=True)
        self.assertEqual(facts["SWITCHED"], "1", p.stderr)
        self.assertIn("switching to converting CUPTI's clock", p.stderr)
        # Kernels timed while the callback was registered are lost, counted.
        self.assertEqual(self.kernels(trace, "before_kernel"), [])
        self.assertIn("without timestamps", p.stderr)
        late_before = self.kernels(trace, "late_before_kernel")
        late_after = self.kernels(trace, "late_after_kernel")
        self.assertEqual((len(late_before), len(late_after)), (5, 5))
        reads = self.reads(trace, data)
        self.assertEqual(len(reads), 2)
        self.assert_read_between(reads[1], late_before[-1], late_after[0])
        clocks = self.clocks(trace)
        self.assertEqual(clocks[0], ("callback", 3))
        self.assertIn(("convert", 2), clocks)

    def test_dropped_records_reach_the_trace_count(self):
        p, _, data, trace = self.run_app(env={"FAKE_CUPTI_DROPPED": "3"}, quiet=False,
                                         lost=True)
        self.check_normal_run(trace, data)
        self.assertIn("3 dropped by CUPTI", p.stderr)
        self.assertRegex(p.stderr, r"events written, 3 dropped")

    def test_runtime_api_records(self):
        _, _, _, trace = self.run_app(env={"DLPROF_CUDA": "kernel,runtime"})
        apis = gpu_test.gpu_events(trace.events, "cuda_runtime")
        kernels = gpu_test.gpu_events(trace.events, "kernel")
        self.assertEqual(len(apis), len(kernels))
        self.assertEqual({gpu_test.gpu_name(a) for a in apis}, {"cudaLaunchKernel"})
        corr = lambda e: e.get("correlation", e.get("aux"))
        if all(corr(e) is not None for e in apis + kernels):
            self.assertEqual(sorted(corr(a) for a in apis), sorted(corr(k) for k in kernels))

    def test_another_subscriber(self):
        p, _, _, trace = self.run_app(env={"FAKE_CUPTI_SUBSCRIBED": "1"}, quiet=False)
        self.assertEqual(p.stderr.count("another CUPTI client"), 1, p.stderr)
        self.assertEqual([e for e in trace.events if e.get("cat") == "cuda"], [])

    def test_wrong_cupti_version(self):
        p, _, _, trace = self.run_app(env={"FAKE_CUPTI_VERSION": "28"}, quiet=False)
        self.assertIn("dlprof was built for CUDA 13", p.stderr)
        self.assertEqual([e for e in trace.events if e.get("cat") == "cuda"], [])

    def test_forked_child_never_calls_cupti(self):
        # fake_cupti prints FAKE_CUPTI: ... for any CUPTI call in a child
        # (run_app asserts there is none); the child's exit runs atexit.
        _, facts, data, trace = self.run_app("fork")
        self.assertEqual(facts["CHILD"], "0")
        self.check_normal_run(trace, data)
        self.assertEqual(self.kernels(trace, "child_kernel"), [])


if __name__ == "__main__":
    dltest.main()
