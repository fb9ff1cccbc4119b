"""A process whose last program thread leaves through pthread_exit, or by
returning from its start routine after main did, ends as it does untraced
(programs/lifecycle.c, issue 38).

glibc ends the process with exit(0) when the last thread it counts is gone;
the tracer's flusher thread counts too, so the tracer itself must notice and
end the process the same way: status 0, atexit handlers run (their calls
traced), every event in the trace, and soon: DLPROF_FLUSH_MS is 10 s here
and the flusher's clock-pair tick comes at 5 s, so a run that ends within
4 s (0.05-0.5 s untraced) was ended by the watch, not by a tick. Worker threads
that are still alive keep the process alive as before. CPython's
test_threading cases of issue 38 run under the tracer too.
"""

import os
import subprocess
import sys
import time

import dltest
import dltest.reliability as rtest

SLOW_FLUSH = {"DLPROF_FLUSH_MS": "10000"}


class LastThreadTest(rtest.RelTestCase):

    def setUp(self):
        super().setUp()
        self.file = self.make_file("input.bin", 8192)
        self.out = os.path.join(self.data, "atexit.txt")

    def run_both(self, args, timeout=20):
        """Untraced, then traced: same status and stdout; the traced run's
        elapsed seconds."""
        plain = self.run_untraced([rtest.program("lifecycle")] + args, timeout=timeout)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        with open(self.out) as f:
            self.assertEqual(f.read(), "atexit\n")
        os.unlink(self.out)
        start = time.monotonic()
        traced = self.run_traced([rtest.program("lifecycle")] + args, env=SLOW_FLUSH,
                                 timeout=timeout)
        elapsed = time.monotonic() - start
        self.assertEqual(traced.stdout, plain.stdout)
        self.assertEqual(rtest.without_tracer_lines(traced.stderr), "")
        with open(self.out) as f:
            self.assertEqual(f.read(), "atexit\n", "the atexit handler did not run traced")
        return traced, elapsed

    def ops(self, trace, path):
        return [(e["name"], e.get("offset"), e.get("bytes")) for e in trace.on(path)]

    def test_main_ends_with_pthread_exit(self):
        _, elapsed = self.run_both(["mainexit", self.file, self.out])
        print("RESULT mainexit traced %.3f s" % elapsed)
        self.assertLess(elapsed, 4.0)
        trace = self.decode()
        self.assertEqual(self.ops(trace, self.file),
                         [("open", None, None)] + [("pread", 1000 * i, 1000) for i in range(4)]
                         + [("close", None, None)])
        # The atexit handler ran on the flusher's thread, traced.
        self.assertEqual(self.ops(trace, self.out),
                         [("open", None, None), ("write", 0, 7), ("close", None, None)])
        self.assert_clean(self.check())

    def test_workers_keep_the_process_alive(self):
        traced, elapsed = self.run_both(["workers", self.file, self.out])
        self.assertEqual(traced.stdout, "MAIN leaves\nIDLER done\n")
        print("RESULT workers traced %.3f s" % elapsed)
        self.assertLess(elapsed, 4.0)
        trace = self.decode()
        self.assertEqual(self.ops(trace, self.file),
                         [("open", None, None)] + [("pread", 100 * i, 100) for i in range(20)]
                         + [("close", None, None)])
        self.assertEqual(self.ops(trace, self.out),
                         [("open", None, None), ("write", 0, 7), ("close", None, None)])
        self.assert_clean(self.check())

    def fork_from_thread(self, how):
        rtest.skip_forks_under_tsan(self)
        rtest.skip_forks_under_asan(self)
        p = self.run_traced([rtest.program("lifecycle"), "forkthread", self.file, how],
                            env=SLOW_FLUSH, timeout=30)
        self.assertEqual(p.stdout, "CHILD 0\n")
        trace = self.decode()
        self.assertEqual(len(trace.files), 2)
        child = [h["pid"] for h in trace.headers
                 if h["flags"] & dltest.HEADER_FLAG_FORKED]
        self.assertEqual(len(child), 1)
        self.assertEqual([(e["name"], e.get("offset"), e.get("bytes"))
                          for e in trace.by_pid(trace.on(self.file))[child[0]]],
                         [("open", None, None)] + [("pread", 10 * i, 10) for i in range(3)]
                         + [("close", None, None)])
        self.assert_clean(self.check())

    def test_forked_child_thread_returns(self):
        self.fork_from_thread("ret")

    def test_forked_child_thread_calls_pthread_exit(self):
        self.fork_from_thread("exit")


def cpython_with_tests():
    """Debian's python3 (libpython3.11-testsuite), else this one if it has
    its test suite."""
    for py in ("/usr/bin/python3", sys.executable):
        if os.path.exists(py) and subprocess.run(
                [py, "-c", "import test.libregrtest"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


class CPythonThreadingTest(rtest.RelTestCase):
    """The two test_threading cases of issue 38, from Debian's
    libpython3.11-testsuite, traced (each took 300 s, or hung, before)."""

    def run_case(self, name):
        python = cpython_with_tests()
        if python is None:
            self.skipTest("CPython's test suite is not installed (libpython3.11-testsuite)")
        env = rtest.traced_env(self.traces, SLOW_FLUSH)
        try:
            p = subprocess.run([python, "-m", "test", "test_threading", "-m", name],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, text=True, timeout=60, cwd=self.data)
        except subprocess.TimeoutExpired:
            self.fail("%s hung under the tracer" % name)
        self.assertEqual(p.returncode, 0, p.stdout[-4000:])
        self.assertIn("Tests result: SUCCESS", p.stdout)

    def test_main_thread_after_fork_from_nonmain_thread(self):
        rtest.skip_forks_under_tsan(self)
        self.run_case("test_main_thread_after_fork_from_nonmain_thread")

    def test_3_join_in_forked_from_thread(self):
        rtest.skip_forks_under_tsan(self)
        self.run_case("test_3_join_in_forked_from_thread")


if __name__ == "__main__":
    dltest.main()
