"""Signals that end the process.

A traced process without a handler of its own for a signal whose default
action ends it (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM, SIGABRT,
SIGSEGV, ...) still dies of that signal, with the same status and the same
core dump as without the tracer, and its trace is complete up to the signal,
final block included -- even when every event is still in memory (a flush
interval far longer than the run). A process with its own handler, or that
ignores the signal, keeps that behaviour; and it sees SIG_DFL where it
installed nothing.
"""

import os
import resource
import signal
import subprocess

import dltest

PREADS = 5000
FILES = 20
# Every event stays in memory until the signal comes.
NO_FLUSH = {"DLPROF_FLUSH_MS": "600000"}


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


def core_limit():
    """In the child: core dumps as large as allowed (the test's own limit
    may be 0)."""
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


class FatalSignalTest(dltest.TraceTestCase):
    """programs/fatal_signal.c: FILES files written (3 events each), then a
    death by a signal, traced and untraced."""

    def run_program(self, mode, sig=None, traced=True, env=None, preexec=None):
        """Runs fatal_signal in a directory of its own (where a core dump
        lands); returns (wait status, stdout, stderr, cwd)."""
        cwd = os.path.join(self.tmp, "%s-%s-%s" % (mode, sig, "t" if traced else "u"))
        os.mkdir(cwd)
        cmd = [dltest.program("fatal_signal"), self.data, str(FILES), mode]
        if sig is not None:
            cmd.append(str(int(sig)))
        e = (dltest.traced_env(self.traces, dict(NO_FLUSH, **(env or {})))
             if traced else dltest.base_env())

        def setup():
            core_limit()
            if preexec:
                preexec()
        p = subprocess.Popen(cmd, env=e, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=setup)
        try:
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        # Whether a core was dumped is seen from the file it left.
        return p.returncode, out.decode(), err.decode(), cwd

    def core_dumped(self, cwd):
        return os.path.exists(os.path.join(cwd, "core"))

    def check_like_untraced(self, mode, sig=None, want_sig=None, env=None, preexec=None):
        """The traced run ends as the untraced one; returns its stdout."""
        rc_u, out_u, err_u, cwd_u = self.run_program(mode, sig, False, preexec=preexec)
        rc, out, err, cwd = self.run_program(mode, sig, True, env, preexec)
        if want_sig is not None:
            self.assertEqual(rc_u, -want_sig, err_u)
        self.assertEqual(rc, rc_u, err)
        self.assertEqual(out, out_u)
        self.assertEqual(err, err_u)
        self.assertEqual(self.core_dumped(cwd), self.core_dumped(cwd_u))
        return out, cwd

    def check_every_event(self, extra_files=0, clean=True):
        trace = self.decode(clean=clean)
        names = [e["name"] for e in trace.under(self.data)]
        want = FILES + extra_files
        self.assertEqual((names.count("open"), names.count("write"), names.count("close")),
                         (want, want, want))
        self.assertEqual(len(names), 3 * want)
        return trace

    def dies_of(self, mode, sig, want_sig=None):
        self.check_like_untraced(mode, sig, want_sig or sig)
        self.check_every_event()

    def test_sigusr1(self):
        self.dies_of("raise", signal.SIGUSR1)

    def test_sigusr2(self):
        self.dies_of("raise", signal.SIGUSR2)

    def test_sighup(self):
        self.dies_of("raise", signal.SIGHUP)

    def test_sigquit_dumps_core_as_untraced(self):
        self.dies_of("raise", signal.SIGQUIT)

    def test_realtime_signal(self):
        self.dies_of("raise", signal.SIGRTMIN + 1)

    def test_sigalrm_from_a_timer(self):
        self.dies_of("timer", None, signal.SIGALRM)

    def test_abort(self):
        self.dies_of("abort", None, signal.SIGABRT)

    def test_sigsegv_from_a_real_fault(self):
        self.dies_of("segv", None, signal.SIGSEGV)

    def test_stack_overflow(self):
        # No handler runs on an overflowed stack: the process dies of SIGSEGV
        # at once, without a final block, and the events come back from the
        # rings sidecar.
        self.check_like_untraced("overflow", None, signal.SIGSEGV)
        trace = self.check_every_event(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        self.assertEqual(len(trace.messages()), 1, trace.messages())
        self.assertRegex(trace.messages()[0], r"no end marker.*recovered \d+ events")

    def test_python_script_raising_sigusr1(self):
        # The case: Python writes three files, then SIGUSR1 (which
        # Python leaves at the default) ends it.
        script = ("import os, signal, sys\n"
                  "for k in range(3):\n"
                  "    with open(os.path.join(sys.argv[1], 'p%d' % k), 'w') as f:\n"
                  "        f.write('x' * (100 + k))\n"
                  "os.kill(os.getpid(), signal.SIGUSR1)\n")
        cmd = [dltest.SYSTEM_PYTHON, "-c", script, self.data]
        untraced = self.run_untraced(cmd)
        traced = self.run_traced(cmd, NO_FLUSH, expect_rc=None)
        self.assertEqual(untraced.returncode, -signal.SIGUSR1)
        self.assertEqual(traced.returncode, untraced.returncode, traced.stderr)
        trace = self.decode()
        written = dltest.bytes_by_path(trace.events, dltest.WRITE_NAMES)
        self.assertEqual(written, {os.path.join(self.data, "p%d" % k): 100 + k
                                   for k in range(3)})

    def test_sigbus_from_a_real_fault(self):
        self.dies_of("bus", None, signal.SIGBUS)

    def test_sigfpe_from_a_real_fault(self):
        self.dies_of("fpe", None, signal.SIGFPE)

    def test_sigpipe_from_a_real_write(self):
        self.dies_of("pipe", None, signal.SIGPIPE)

    def test_core_dumps_where_untraced(self):
        # Where core dumps go to files in the working directory (Debian's
        # default "core"), the Core signals leave one, traced and untraced.
        with open("/proc/sys/kernel/core_pattern") as f:
            pattern = f.read().strip()
        if pattern != "core" or resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
            self.skipTest("core dumps do not go to ./core here (%r)" % pattern)
        for mode, sig in (("raise", signal.SIGQUIT), ("segv", None), ("abort", None)):
            _, cwd = self.check_like_untraced(mode, sig)
            self.assertTrue(self.core_dumped(cwd), mode)

    def test_own_handler_kept(self):
        out, _ = self.check_like_untraced("handler", signal.SIGUSR1)
        self.assertEqual(out, "HANDLED\n")
        self.check_every_event(extra_files=1)

    def test_default_given_back_is_default(self):
        # The program's handler, then SIG_DFL again: it reads SIG_DFL, and
        # dies of the signal with every event in the trace.
        out, _ = self.check_like_untraced("reset", signal.SIGUSR2, signal.SIGUSR2)
        self.assertEqual(out, "RESET was-own dfl\n")
        self.check_every_event()

    def test_program_sees_every_disposition_as_untraced(self):
        # SIGHUP ignored by the parent (nohup) stays ignored and is seen so.
        out, _ = self.check_like_untraced(
            "query", preexec=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
        self.assertIn("%d ign\n" % signal.SIGHUP, out)
        self.assertIn("%d dfl\n" % signal.SIGUSR1, out)
        self.check_every_event()

    def test_ignored_signal_stays_ignored(self):
        out, _ = self.check_like_untraced(
            "raise", signal.SIGHUP, preexec=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
        self.assertEqual(out, "SURVIVED\n")
        self.check_every_event()


if __name__ == "__main__":
    dltest.main()
