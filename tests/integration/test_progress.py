"""dlprof-dump's progress line (tools/dump/progress.h): on a terminal (a pty)
when the work takes more than a second, with traces and bytes done, rate and
time left, cleared at the end; nothing without a terminal, nothing with
--quiet, nothing on a short run."""

import os
import pty
import re
import subprocess
import time
import unittest

import dltest as T

LINE = re.compile(rb"\rdlprof-dump: (\d+)/(\d+) traces, [\d.]+ (?:B|KiB|MiB|GiB) of [\d.]+ "
                  rb"(?:B|KiB|MiB|GiB) \((\d+) %\)(?:, [\d.]+ (?:B|KiB|MiB|GiB)/s"
                  rb"(?:, \d+ s left)?)?\x1b\[K")


def run_on_pty(cmd):
    """Runs `cmd` with stderr on a new pty; returns (seconds, status, stderr bytes)."""
    master, slave = pty.openpty()
    start = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave,
                             stdin=subprocess.DEVNULL)
    finally:
        os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the pty
            break
        if not chunk:
            break
        out += chunk
    status = p.wait(timeout=120)
    os.close(master)
    return time.monotonic() - start, status, out


class ProgressTest(T.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # One large trace for every test: 3 M fgetc calls served from the
        # stream's buffer (about a second to make).
        import tempfile
        cls.big = tempfile.mkdtemp(prefix="dlprof-progress-")
        data = os.path.join(cls.big, "data.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(65536))
        env = T.traced_env(os.path.join(cls.big, "traces"))
        p = T.run([T.program("getc_loop"), data, "3000000"], env, timeout=120)
        assert p.returncode == 0, p.stderr
        cls.big_traces = os.path.join(cls.big, "traces")

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.big, ignore_errors=True)

    def slow_decode(self, *extra):
        # Text on one thread: the slowest of the outputs, a few seconds here.
        return [T.DUMP, "--threads", "0", "--format", "text"] + list(extra) + [self.big_traces]

    def test_progress_on_a_terminal(self):
        elapsed, status, out = run_on_pty(self.slow_decode())
        self.assertEqual(status, 0, out[-2000:])
        if elapsed < 1.3:
            self.skipTest("the decode took %.2f s: too quick for a progress line" % elapsed)
        lines = LINE.findall(out)
        self.assertTrue(lines, out[-2000:])
        for done, total, percent in lines:
            self.assertEqual(int(total), 1)
            self.assertLessEqual(int(done), 1)
            self.assertLessEqual(int(percent), 100)
        percents = [int(p) for _, _, p in lines]
        self.assertEqual(percents, sorted(percents))  # it only moves on
        self.assertIn(b"s left", out)
        # Cleared at the end: the terminal's line is empty again.
        self.assertTrue(out.endswith(b"\r\x1b[K"), out[-200:])
        # Nothing but progress lines on stderr.
        self.assertEqual(LINE.sub(b"", out).replace(b"\r\x1b[K", b""), b"")

    def test_silent_with_quiet(self):
        elapsed, status, out = run_on_pty(self.slow_decode("--quiet"))
        self.assertEqual(status, 0, out[-2000:])
        self.assertEqual(out, b"")

    def test_silent_without_a_terminal(self):
        p = subprocess.run(self.slow_decode(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(p.stderr, b"")

    def test_silent_on_a_short_run(self):
        self.run_traced([T.program("getc_loop"), os.path.join(self.big, "data.bin"), "10"])
        elapsed, status, out = run_on_pty([T.DUMP, "--summary", self.traces])
        self.assertEqual(status, 0, out)
        if elapsed > 0.9:
            self.skipTest("the short decode took %.2f s" % elapsed)
        self.assertEqual(out, b"")


if __name__ == "__main__":
    T.main()
