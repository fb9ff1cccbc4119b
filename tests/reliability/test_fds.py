"""Programs that close every descriptor or take the tracer's
(programs/fdsweep.c).

Each run must print and exit exactly as without the tracer, leave its files
exactly as without the tracer, and tracing must go on after the sweep (the
after.dat calls are in the trace, and the trace ends cleanly).
"""

import os

import rtest


class FdSweepTest(rtest.RelTestCase):

    def sweep(self, mode, env=None, compare_stderr=True):
        # Untraced first, in its own directory: the files it leaves are the
        # reference for the traced run's.
        ref = os.path.join(self.tmp, "ref")
        os.mkdir(ref)
        plain = self.run_untraced([rtest.program("fdsweep"), mode, ref])
        traced = self.run_traced([rtest.program("fdsweep"), mode, self.data], env=env,
                                 expect_rc=None)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(traced.returncode, 0, traced.stderr)
        self.assertEqual(traced.stdout, plain.stdout)
        if compare_stderr:
            self.assertEqual(traced.stderr, plain.stderr)
        self.assertIn("AFTER ok=1\n", traced.stdout)
        for name in sorted(os.listdir(ref)):
            with open(os.path.join(ref, name), "rb") as a, \
                    open(os.path.join(self.data, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
        self.assertEqual(sorted(os.listdir(ref)), sorted(os.listdir(self.data)))
        trace = self.decode()
        after = os.path.join(self.data, "after.dat")
        self.assertEqual([(e["name"], e.get("offset"), e.get("bytes")) for e in trace.on(after)],
                         [("open", None, None), ("write", 0, 4096), ("pread", 0, 4096),
                          ("close", None, None)])
        return traced, trace

    def test_close_to_the_fd_limit(self):
        out, _ = self.sweep("limit")
        self.assertIn("SWEEP limit closed=1\n", out.stdout)  # before.dat only

    def test_close_range(self):
        out, _ = self.sweep("range")
        self.assertIn("SWEEP range ret=0\n", out.stdout)

    def test_close_the_tracers_fd(self):
        out, _ = self.sweep("findclose")
        self.assertIn("SWEEP findclose ret=-1 errno=9\n", out.stdout)

    def test_dup2_onto_the_tracers_fd(self):
        out, trace = self.sweep("finddup2")
        self.assertIn("READBACK ok=1\n", out.stdout)
        dup = os.path.join(self.data, "dup.dat")
        self.assertEqual(os.path.getsize(dup), 2000)  # no trace bytes in it
        writes = [e for e in trace.on(dup) if e["name"] == "write"]
        self.assertEqual([e["offset"] for e in writes], list(range(0, 2000, 20)))

    def test_program_reuses_fd_2_for_data(self):
        # The tracer's exit line goes to fd 2: with DLPROF_QUIET=0 and fd 2
        # now the program's data file, it must not land in that file.
        self.sweep("stderr", env={"DLPROF_QUIET": "0"}, compare_stderr=False)


if __name__ == "__main__":
    rtest.dltest.main()
