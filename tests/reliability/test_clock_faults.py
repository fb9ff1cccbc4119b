"""A clock that does not behave never stops the traced program.

With the TSC as the events' clock (lib/core/tsc_clock.h), the flusher
calibrates it against clock_gettime(CLOCK_MONOTONIC_RAW): it waits for that
clock to pass a short baseline. Where CLOCK_MONOTONIC_RAW stands still (here
the clock shim of the symlink test, shim/fakeclock.c; a broken VM clock, a
checkpoint/restore tool), the wait once never ended and the traced program
hung at its start. It is bounded now: the tracer says once that it times
with clock_gettime, the trace header says why, the program runs as
untraced and every call is in the trace.
"""

import os

import dltest
import dltest.reliability as rtest

FAKE_NS = 98765432101234
PREADS = 500


class FrozenClockTest(rtest.RelTestCase):

    def run_frozen(self, clock):
        env = rtest.traced_env(self.traces, {"FAKECLOCK_NS": str(FAKE_NS), "DLPROF_CLOCK": clock},
                               quiet=False)
        env["LD_PRELOAD"] = " ".join(
            ([dltest.PRELOAD_PREFIX] if dltest.PRELOAD_PREFIX else [])
            + [rtest.FAKECLOCK, dltest.LIB_PATH])
        cmd = [rtest.program("workload"), "run", self.data, str(PREADS)]
        untraced = dltest.run(cmd, rtest.base_env())
        traced = dltest.run(cmd, env, timeout=60)  # it hung here for good
        self.assertEqual(untraced.returncode, 0, untraced.stderr)
        self.assertEqual((traced.returncode, traced.stdout), (0, untraced.stdout), traced.stderr)
        return traced

    def check_trace(self):
        (f,) = dltest.trace_files(self.traces)
        trace = self.decode()
        out = os.path.join(self.data, "out.bin")
        names = [e["name"] for e in trace.events if e.get("path") == out]
        # workload's open, its 64 KiB write and its one-byte preads, then close.
        self.assertEqual(names.count("pread"), PREADS, names[:5])
        self.assertEqual(names.count("write"), 1)
        return dltest.read_header_strings(f)["clock"]

    def test_tsc_with_a_clock_that_stands_still(self):
        if not dltest.invariant_tsc():
            self.skipTest("no invariant TSC here")
        p = self.run_frozen("tsc")
        self.assertEqual(rtest.tracer_lines(p.stderr), [
            "dlprof: clock_gettime(CLOCK_MONOTONIC_RAW) stands still while the TSC runs: "
            "the TSC cannot be calibrated; timing with clock_gettime"])
        self.assertEqual(self.check_trace(),
                         "clock_gettime: CLOCK_MONOTONIC_RAW stood still while the TSC ran")

    def test_clock_gettime_with_a_clock_that_stands_still(self):
        p = self.run_frozen("clock_gettime")
        self.assertEqual(rtest.tracer_lines(p.stderr), [])
        self.assertEqual(self.check_trace(), "clock_gettime: DLPROF_CLOCK=clock_gettime")


if __name__ == "__main__":
    dltest.main()
