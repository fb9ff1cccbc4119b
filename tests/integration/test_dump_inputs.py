"""What dlprof-dump is given to read: it never writes over it, never waits
on it, and says what it could not read.

A trace of programs/read_files.c; then dlprof-dump is pointed at it in the
ways that once destroyed a trace (-o naming an input: O_TRUNC emptied it
before it was read) or hung (a FIFO where a trace or its rings sidecar
should be: the open waited for a writer that never came).
"""

import os
import shutil
import subprocess
import tempfile

import dltest


class DumpInputsTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        paths = sorted(dltest.write_files(os.path.join(self.data, "in"), 2, lambda i: 3000))
        self.run_traced([dltest.program("read_files")] + paths)
        (self.trace,) = dltest.trace_files(self.traces)

    def dump(self, args):
        return dltest.run([dltest.DUMP] + args, dltest.base_env(), timeout=30)

    def test_output_never_an_input(self):
        with open(self.trace, "rb") as f:
            before = f.read()
        for inputs in ([self.trace], [self.traces]):
            for mode in ([], ["--summary"]):
                p = self.dump(mode + ["-o", self.trace] + inputs)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn("an input: not overwritten", p.stderr)
                with open(self.trace, "rb") as f:
                    self.assertEqual(f.read(), before)
        # --compare reads both sides.
        p = self.dump(["--compare", self.traces, self.traces, "-o", self.trace])
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(self.trace, "rb") as f:
            self.assertEqual(f.read(), before)
        # Any other file is written.
        out = os.path.join(self.data, "out.txt")
        self.assertEqual(self.dump(["-o", out, self.trace]).returncode, 0)
        self.assertGreater(os.path.getsize(out), 0)

    def test_fifo_is_no_trace_and_no_sidecar(self):
        fifo = os.path.join(self.data, "x.dlprof")
        os.mkfifo(fifo)
        p = self.dump([fifo])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("not a regular file", p.stderr)
        # A FIFO where the rings sidecar is (read beside a trace with no end
        # marker: a process killed with SIGKILL, found by the directory walk).
        killed, trace = self.killed_trace()
        if os.path.exists(trace + ".rings"):
            os.remove(trace + ".rings")
        os.mkfifo(trace + ".rings")
        p = self.dump([killed])
        self.assertNotEqual(p.returncode, 124)
        self.assertIn("sigterm_wait", p.stdout)

    def killed_trace(self):
        """The trace directory and trace of a process killed with SIGKILL."""
        killed = os.path.join(self.data, "killed")
        data = os.path.join(self.data, "data.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(100000))
        p = subprocess.Popen([dltest.program("sigterm_wait"), data, "default"],
                             env=self.traced_env(killed), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        try:
            self.assertTrue(dltest.read_line(p.stdout).startswith("READY"))
        finally:
            p.kill()
            p.wait()
        (trace,) = dltest.trace_files(killed)
        return killed, trace

    def test_damaged_sidecar_is_damaged_input(self):
        killed, trace = self.killed_trace()
        with open(trace + ".rings", "wb") as f:
            f.write(b"not a sidecar at all" * 200)
        p = self.dump([killed])
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("not a rings sidecar; nothing recovered from it", p.stderr)

    def test_directory_it_may_not_list(self):
        # A directory below the input that cannot be listed is said, and
        # counts as an input not read (exit 1); the others are read. As
        # root, dlprof-dump runs as nobody (root may list anything).
        top = tempfile.mkdtemp(dir="/tmp")
        self.addCleanup(shutil.rmtree, top, True)
        for sub in ("ok", "locked"):
            os.mkdir(os.path.join(top, sub))
            shutil.copy(self.trace, os.path.join(top, sub, os.path.basename(self.trace)))
            os.chmod(os.path.join(top, sub, os.path.basename(self.trace)), 0o644)
        os.chmod(top, 0o755)
        os.chmod(os.path.join(top, "ok"), 0o755)
        os.chmod(os.path.join(top, "locked"), 0o700 if os.geteuid() == 0 else 0)
        self.addCleanup(os.chmod, os.path.join(top, "locked"), 0o700)
        prefix = []
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                self.skipTest("running as root, and no setpriv to run as nobody")
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        p = dltest.run(prefix + [dltest.DUMP, top], dltest.base_env(), timeout=30)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("locked: cannot list directory: Permission denied", p.stderr)
        self.assertIn("read_files", p.stdout)

    def test_selection_that_keeps_nothing_is_said(self):
        for args in (["--host", "no-such-host"], ["--pid", "1"], ["--summary", "--pid", "1"]):
            p = self.dump(args + [self.traces])
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("none matched the selection", p.stderr)
        p = self.dump([self.traces])
        self.assertNotIn("none matched", p.stderr)
        p = self.dump(["--top", "3", self.traces])
        self.assertIn("go with --summary", p.stderr)
