"""Termination signals.

A traced process without a SIGTERM/SIGINT handler of its own still ends
"killed by SIGTERM" (as without the tracer), and its trace is complete up to
the signal, final block included -- even when every event is still in memory
(a flush interval far longer than the run). A process with its own handler,
or that ignores the signal, keeps that behaviour; and it sees SIG_DFL where it
installed nothing.
"""

import os
import signal
import subprocess

import dltest

PREADS = 5000


class SignalTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.file = os.path.join(self.data, "input.bin")
        with open(self.file, "wb") as f:
            f.write(os.urandom(1000))

    def run_signalled(self, mode, sig, traced, stdin_line=False):
        """Starts sigterm_wait, signals it once READY; returns (rc, stdout)."""
        cmd = [dltest.program("sigterm_wait"), self.file, mode]
        env = (dltest.traced_env(self.traces, {"DLPROF_FLUSH_MS": "600000"})
               if traced else dltest.base_env())
        p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with p:
            try:
                before = ""
                line = dltest.read_line(p.stdout)
                while line and not line.startswith("READY "):
                    before += line
                    line = dltest.read_line(p.stdout)
                self.assertTrue(line, "no READY line; output: %r" % before)
                p.send_signal(sig)
                if stdin_line:
                    p.stdin.write("go\n")
                    p.stdin.flush()
                out, err = p.communicate(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
        self.assertEqual(err, "")
        # The pid in the READY line differs from run to run.
        return p.returncode, before + line.rsplit(" ", 1)[1] + out

    def check_same(self, mode, sig, want_rc, stdin_line=False):
        rc_plain, out_plain = self.run_signalled(mode, sig, False, stdin_line)
        rc, out = self.run_signalled(mode, sig, True, stdin_line)
        self.assertEqual(rc_plain, want_rc)
        self.assertEqual(rc, rc_plain)
        self.assertEqual(out, out_plain)
        return out

    def check_complete_trace(self, extra_preads=0):
        trace = self.decode()  # clean: the final block is there
        preads = [e for e in trace.on(self.file) if e["name"] == "pread"]
        self.assertEqual(len(preads), PREADS + extra_preads)
        self.assertEqual({e["bytes"] for e in preads}, {100})
        return trace

    def test_sigterm_without_handler(self):
        self.check_same("default", signal.SIGTERM, -signal.SIGTERM)
        self.check_complete_trace()

    def test_sigint_without_handler(self):
        self.check_same("default", signal.SIGINT, -signal.SIGINT)
        self.check_complete_trace()

    def test_program_sees_default_disposition(self):
        out = self.check_same("query", signal.SIGTERM, -signal.SIGTERM)
        self.assertIn("QUERY SIGTERM dfl\nQUERY SIGINT dfl\n", out)
        self.check_complete_trace()

    def test_own_sigaction_handler_kept(self):
        out = self.check_same("handler", signal.SIGTERM, 3)
        self.assertIn("HANDLED 10\n", out)
        self.check_complete_trace(extra_preads=10)

    def test_own_signal_handler_kept(self):
        out = self.check_same("signal", signal.SIGTERM, 3)
        self.assertIn("HANDLED 10\n", out)
        self.check_complete_trace(extra_preads=10)

    def test_ignored_sigterm_stays_ignored(self):
        out = self.check_same("ignore", signal.SIGTERM, 0, stdin_line=True)
        self.assertIn("SURVIVED 10\n", out)
        self.check_complete_trace(extra_preads=10)

    def test_sigterm_while_another_thread_records(self):
        # READY comes only once the second thread's first pread has returned
        # (sigterm_wait.c), so both threads have recorded before the signal.
        rc, _ = self.run_signalled("threads", signal.SIGTERM, True)
        self.assertEqual(rc, -signal.SIGTERM)
        trace = self.decode(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        # The final block is there. The busy thread may have been waiting on
        # a full buffer when tracing ended: that one event is counted as
        # dropped, which is the only message allowed.
        for m in trace.messages():
            self.assertRegex(m, r": 1 events? w[a-z]+ dropped")
        tids = {e["tid"] for e in trace.on(self.file) if e["name"] == "pread"}
        self.assertEqual(len(tids), 2)


if __name__ == "__main__":
    dltest.main()
