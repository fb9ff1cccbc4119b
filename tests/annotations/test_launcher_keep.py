"""`dlprof keep DIR` (tools/launcher/keep_request.cc) asks the processes of a
bounded run (DLPROF_KEEP) to keep the window around now, by the time of
RUN_DIR/dlprof.keep: only where DIR is such a run, or leads to one (the
trace directory, a host's directory); elsewhere it fails and leaves no
file. And `dlprof run --keep` names the run's directory as it starts."""

import os
import re
import time
import unittest

import dltest.annotations as U

KEEP_FILE = "dlprof.keep"


class LauncherKeepTest(U.AnnotTestCase):

    def launch(self, args, env=None):
        e = U.base_env()
        e.update(env or {})
        return U.run([U.LAUNCHER] + args, e, 60, cwd=self.tmp)

    def traced_run(self, trace_dir, keep=True):
        """A run of exit_with into `trace_dir`; its run directory."""
        before = set(U.trace_files(trace_dir))
        args = ["run", "--dir", trace_dir, "--no-summary"] + (["--keep", "2s"] if keep else [])
        p = self.launch(args + ["--", U.program("exit_with"), "code", "0"])
        self.assertEqual(p.returncode, 0, p.stderr)
        (trace,) = set(U.trace_files(trace_dir)) - before
        return os.path.dirname(os.path.dirname(trace))

    def keep(self, directory):
        return self.launch(["keep", directory])

    def marks(self, top):
        return sorted(os.path.join(d, n) for d, _, names in os.walk(top) for n in names
                      if n == KEEP_FILE)

    def test_run_names_its_directory_as_it_starts(self):
        # It was named at the end only, too late for `dlprof keep`.
        p = self.launch(["run", "--dir", self.traces, "--keep", "2s", "--no-summary", "--",
                         "/bin/sh", "-c", "echo COMMAND >&2"])
        self.assertEqual(p.returncode, 0, p.stderr)
        first, command = p.stderr.splitlines()[:2]
        m = re.match(r"^dlprof: bounded trace \(last 2s kept\) in (\S+); to keep the window "
                     r"around a moment: dlprof keep (\S+)$", first)
        self.assertTrue(m, p.stderr)
        self.assertEqual(m.group(1), m.group(2))
        self.assertEqual(os.path.dirname(m.group(1)), self.traces)
        self.assertEqual(command, "COMMAND")
        # Not for a run that keeps every event, nor under --quiet.
        for args in (["--quiet", "--keep", "2s"], []):
            p = self.launch(["run", "--dir", self.traces, "--no-summary"] + args + ["--",
                            "/bin/true"])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertNotIn("bounded trace", p.stderr)

    def test_a_directory_without_a_bounded_run_is_refused(self):
        # Each said it asked, exited 0 and left a dlprof.keep that no process
        # reads.
        empty = os.path.join(self.tmp, "empty")
        os.mkdir(empty)
        p = self.keep(empty)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stderr, "dlprof keep: %s holds no run's traces (expected "
                         "DLPROF_DIR/<run id> of a job traced with dlprof run --keep "
                         "DURATION); nothing asked\n" % empty)
        unbounded = os.path.join(self.tmp, "unbounded")
        run_dir = self.traced_run(unbounded, keep=False)
        for directory, whose in ((run_dir, "its run was"), (unbounded, "its runs were")):
            p = self.keep(directory)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertEqual(p.stderr, "dlprof keep: %s holds no bounded trace: %s traced "
                             "without --keep (DLPROF_KEEP), which keeps every event already; "
                             "nothing asked\n" % (directory, whose))
        self.assertEqual(self.marks(self.tmp), [])

    def test_the_run_meant_is_found(self):
        # The run's own directory, a host's directory of it, or the trace
        # directory (DLPROF_DIR) holding one bounded run: the run is asked.
        run_dir = self.traced_run(self.traces)
        (host_dir,) = [os.path.join(run_dir, h) for h in os.listdir(run_dir)]
        said = ("dlprof keep: asked the processes of %s to keep their window around now (they "
                "notice within a second)\n" % run_dir)
        for directory, first in ((run_dir, ""),
                                 (host_dir + "/", "dlprof keep: %s is a host's directory of "
                                  "the run %s\n" % (host_dir, run_dir)),
                                 (self.traces, "dlprof keep: %s is the trace directory; its "
                                  "one bounded run is %s\n" % (self.traces,
                                                               os.path.basename(run_dir)))):
            p = self.keep(directory)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stderr, first + said)
            self.assertEqual(self.marks(self.tmp), [os.path.join(run_dir, KEEP_FILE)])
            os.unlink(os.path.join(run_dir, KEEP_FILE))
        # Several: the one written last (a running job's files are), the
        # others named. A run that keeps every event is no candidate.
        other = self.traced_run(self.traces)
        self.traced_run(self.traces, keep=False)
        past = time.time() - 3600
        for d, _, names in os.walk(run_dir):
            for n in names:
                os.utime(os.path.join(d, n), (past, past))
        p = self.keep(self.traces)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "dlprof keep: %s is the trace directory of 2 bounded runs; "
                         "taking the one written last, %s (the others: %s; to ask one of "
                         "them, name its directory)\n" % (self.traces, os.path.basename(other),
                                                         os.path.basename(run_dir))
                         + said.replace(run_dir, other))
        self.assertEqual(self.marks(self.tmp), [os.path.join(other, KEEP_FILE)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
