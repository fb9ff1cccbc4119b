"""Signals.

Signals that end the process (programs/sigterm_wait.c and
programs/fatal_signal.c of tests/integration): a traced process without a
handler of its own for a signal whose default action ends it (SIGTERM,
SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM, SIGABRT, SIGSEGV, ...) still dies
of that signal, with the same status and the same core dump as without the
tracer, and its trace is complete up to the signal, final block included --
even when every event is still in memory (a flush interval far longer than
the run). A process with its own handler, or that ignores the signal, keeps
that behaviour; and it sees SIG_DFL where it installed nothing.

Handlers and signals mid-run (programs/sigs.c):

- A SIGUSR1 handler that does I/O, raised at known points: every call of the
  handler and of the main loop is in the trace.
- The same handler, signalled asynchronously from another thread every
  ~200 us while the main thread makes 100 000 preads (or more, until over
  10 signals landed among them): every handler call is
  in the trace too, none dropped -- also with 4 KiB rings. (The signal can
  land while the tracer is recording the interrupted call's event; the
  handler's event then waits in the thread's deferred list, wrapper.h.)
- SIGTERM and SIGINT to a 3-thread program without handlers, mid-run: it
  dies of the signal exactly as without the tracer, its trace has the end
  marker, and each thread's preads are the unbroken run 0, 1, ..., m.
- The same with 4 KiB rings and the main thread blocking the signal, so that
  a thread busy with preads takes it -- often while it writes its full ring
  to the trace itself, holding the trace's lock. Before the fix the handler
  then waited 5 s for a flusher that waited for that lock, and the trace had
  no end marker (CI, 1 run in several). Not a timed test; without the fix it
  fails in only some runs (how often depends on the machine's load), with
  it in none: since then a program thread holds that lock only with every
  signal blocked (lib/core/trace_sink.h, TraceSink::Lock).
- SIGKILL mid-run: every block written before the kill decodes, each thread
  an unbroken run from 0. SIGKILL after a pause longer than DLPROF_FLUSH_MS:
  every call made before the pause is in the trace.
"""

import os
import resource
import signal
import subprocess
import time

import dltest
import dltest.reliability as rtest

PREADS = 5000
FILES = 20
# Every event stays in memory until the signal comes.
NO_FLUSH = {"DLPROF_FLUSH_MS": "600000"}


class SigtermWaitTest(dltest.TraceTestCase):
    """programs/sigterm_wait.c."""

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



class SignalTest(rtest.RelTestCase):
    """programs/sigs.c."""


    def setUp(self):
        super().setUp()
        self.file = self.make_file("input.bin", 200000)

    def check_handler_run(self, mode, n, env=None):
        p = self.run_traced([rtest.program("sigs"), mode, self.file, str(n)], env=env,
                            timeout=60)
        handled, main = map(int, p.stdout.split()[1::2])
        # async: the main thread goes on past n until more than 10 signals
        # landed among its preads (sigs.c), whatever the scheduling.
        if mode == "async":
            self.assertGreaterEqual(main, n)
        else:
            self.assertEqual(main, n)
        check = self.check(seq=["pread"])
        (proc,) = check["processes"]
        self.assertTrue(proc["final"])
        self.assertEqual((proc["damaged"], proc["messages"]), (0, []))
        trace = self.decode(clean=False,
                            keep=lambda e: e["name"] == "pread" and e["offset"] >= 100000)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        handler = sorted(e["offset"] - 100000 for e in trace.events)
        main_preads = proc["kinds"]["pread"] - len(handler)
        print("RESULT signals_%s handled=%d traced_handler=%d dropped=%d main=%d traced_main=%d"
              % (mode, handled, len(handler), proc["dropped"], main, main_preads))
        self.assertEqual(main_preads, main)
        # Every handler call is in the trace, or (more than 16 signals while
        # one event waited for a full ring) counted as dropped. A handler
        # raised by the thread itself (one at a time) is never dropped;
        # signals from another thread are, where a busy machine keeps the
        # flusher from the processors while 16 of them land in one wait.
        self.assertEqual(len(handler) + proc["dropped"], handled)
        self.assertEqual(len(set(handler)), len(handler))
        self.assertTrue(all(0 <= k < handled for k in handler), handler[-3:])
        if mode == "handler":
            self.assertEqual(proc["dropped"], 0)
            self.assertEqual(handler, list(range(handled)))
        return handled

    def test_handler_does_io(self):
        self.assertEqual(self.check_handler_run("handler", 20000), 2000)

    def test_async_signals_with_io_in_handler(self):
        self.assertGreater(self.check_handler_run("async", 100000), 10)

    def test_async_signals_while_the_ring_is_full(self):
        # 4 KiB rings: the main thread keeps waiting for the flusher with an
        # event half-recorded, and the signals land in that wait.
        self.assertGreater(self.check_handler_run("async", 100000,
                                                  env={"DLPROF_BUFFER_KB": "4"}), 10)

    def run_jumps(self, mode, n, env=None):
        p = self.run_traced([rtest.program("sigs"), mode, self.file, str(n)], env=env,
                            timeout=90)
        jumps, main = map(int, p.stdout.split()[1::2])
        (proc,) = self.check()["processes"]
        self.assertTrue(proc["final"])
        self.assertEqual((proc["damaged"], proc["messages"]), (0, []))
        trace = self.decode(clean=False, keep=lambda e: e["name"] in ("pread", "read"))
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        main_preads = [e for e in trace.events if e["name"] == "pread" and e["offset"] < 100000]
        handler = sorted(e["offset"] - 100000 for e in trace.events
                         if e["name"] == "pread" and e["offset"] >= 100000)
        print("RESULT signals_%s jumps=%d traced_handler=%d dropped=%d main=%d traced_main=%d"
              % (mode, jumps, len(handler), proc["dropped"], main, len(main_preads)))
        # A call the program jumped out of never returned to it: it is not
        # in the trace, and every call made after the jump is its own, not
        # nested in it.
        self.assertFalse([e for e in trace.events if e["name"] == "read"])
        self.assertEqual(sum(1 for e in main_preads if e.get("nested")), 0)
        return jumps, main, main_preads, handler, proc["dropped"]

    def test_jump_out_of_a_blocking_read(self):
        jumps, main, preads, handler, dropped = self.run_jumps("jump", 200)
        self.assertEqual((jumps, main, dropped, handler), (200, 200, 0, []))
        self.assertEqual([e["offset"] for e in preads], list(range(200)))

    def test_jumps_out_of_anywhere(self):
        # The jumps land in the tracer's code too: in its window, and in its
        # wait for ring space (4 KiB rings).
        jumps, main, preads, handler, dropped = self.run_jumps(
            "jumpasync", 1000, env={"DLPROF_BUFFER_KB": "4"})
        self.assertGreaterEqual(jumps, 1000)
        # Every pread that returned to the loop is there; so may be one per
        # jump that was made after the tracer recorded its pread.
        self.assertGreaterEqual(len(preads), main)
        self.assertLessEqual(len(preads), main + jumps)
        # Every handler's pread is there once, or counted as dropped: more
        # than 16 signals landed while one thread waited for ring space.
        self.assertEqual(len(handler), len(set(handler)))
        self.assertEqual(len(handler) + dropped, jumps)

    def start(self, args, env=None, traced=True):
        env = (rtest.traced_env(self.traces, env) if traced else rtest.base_env())
        return subprocess.Popen([rtest.program("sigs")] + args, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def signal_mid_run(self, sig, traced, env=None, mode="loop"):
        p = self.start([mode, self.file, "3"], env=env, traced=traced)
        try:
            self.assertEqual(dltest.read_line(p.stdout), "READY\n")
            # Not a synchronisation: READY already means every thread made
            # 1000 preads, all the checks need. The pause lets the threads
            # record more, so that the signal lands mid-run.
            time.sleep(0.2)
            p.send_signal(sig)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        return p.returncode, out, err

    def check_runs_from_zero(self, check, threads=3, complete=True):
        """Each thread's preads are the unbroken run 0, 1, ..., m. With
        `complete` (the trace was finished), every thread made 1000 before
        the signal and all of them are there; after SIGKILL a thread whose
        events were all still in memory may be missing altogether."""
        runs = check["seq"]["pread"]
        if complete:
            self.assertEqual(len(runs), threads)
        else:
            self.assertLessEqual(len(runs), threads)
            self.assertGreaterEqual(len(runs), 1)
        for s in runs:
            self.assertEqual(s["first"], 0)
            self.assertTrue(s["contiguous"], s)
            if complete:
                self.assertGreaterEqual(s["count"], 1000)
        return sum(s["count"] for s in runs)

    def check_termination(self, sig, mode="loop", env=None):
        rc_plain, out_plain, err_plain = self.signal_mid_run(sig, traced=False, mode=mode)
        rc, out, err = self.signal_mid_run(sig, traced=True, env=env, mode=mode)
        self.assertEqual(rc_plain, -sig)
        self.assertEqual((rc, out, err), (rc_plain, out_plain, err_plain))
        check = self.check(seq=["pread"])
        (proc,) = check["processes"]
        self.assertTrue(proc["final"], proc)
        self.assertEqual((proc["damaged"], proc["messages"]), (0, []))
        # A thread that was waiting on a full ring when tracing ended has
        # that one event counted as dropped; nothing else may be missing.
        self.assertLessEqual(proc["dropped"], 3)
        n = self.check_runs_from_zero(check)
        print("RESULT %s events=%d dropped=%d" % (signal.Signals(sig).name, n, proc["dropped"]))

    def test_sigterm_mid_run(self):
        self.check_termination(signal.SIGTERM)

    def test_sigint_mid_run(self):
        self.check_termination(signal.SIGINT)

    def test_sigterm_taken_by_a_thread_writing_its_ring(self):
        self.check_termination(signal.SIGTERM, mode="loopers", env={"DLPROF_BUFFER_KB": "4"})

    def test_sigkill_mid_run(self):
        rc, _, _ = self.signal_mid_run(signal.SIGKILL, True, env={"DLPROF_FLUSH_MS": "20"})
        self.assertEqual(rc, -signal.SIGKILL)
        check = self.check(seq=["pread"])
        (proc,) = check["processes"]
        self.assertFalse(proc["final"])
        # At most the block being written at the kill is torn.
        self.assertLessEqual(proc["damaged"], 1)
        n = self.check_runs_from_zero(check, complete=False)
        trace = self.decode(clean=False, keep=lambda e: False)
        self.assertEqual(trace.dump_rc if proc["damaged"] == 0 else 0, 0, trace.dump_stderr)
        print("RESULT SIGKILL_mid_run events=%d damaged=%d" % (n, proc["damaged"]))

    def wait_for_flushed_preads(self, want):
        """Waits until every one of `want` preads is in the trace file (the
        block headers first, cheap to poll; then the decoder's count).
        Returns the seconds until the headers showed them."""
        headers = dltest.wait_until(
            lambda: dltest.flushed_events(self.traces) >= want, 60,
            "the preads never reached the trace while the program slept")

        def all_preads():
            n = [0]

            def count(e):
                n[0] += e["name"] == "pread"
                return False

            dltest.decode(self.traces, keep=count)
            return n[0] == want

        dltest.wait_until(all_preads, 60, "preads missing from the trace")
        return headers

    def test_sigkill_after_flush_interval(self):
        threads, n = 4, 50000
        p = self.start(["pause", self.file, str(threads), str(n)],
                       env={"DLPROF_FLUSH_MS": "50"})
        try:
            self.assertEqual(dltest.read_line(p.stdout), "PAUSED\n")
            # The kill comes once the periodic flush (50 ms) has written
            # every pread while the program sleeps -- no exit path flushes
            # them; waiting a fixed time instead fails on a loaded machine.
            waited = self.wait_for_flushed_preads(threads * n)
            print("RESULT SIGKILL_after_pause flushed after %.3f s" % waited)
            p.kill()
            p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        check = self.check(seq=["pread"])
        (proc,) = check["processes"]
        self.assertEqual((proc["damaged"], proc["messages"], proc["final"]), (0, [], False))
        runs = check["seq"]["pread"]
        self.assertEqual(len(runs), threads)
        for s in runs:
            self.assertEqual((s["count"], s["first"], s["last"], s["contiguous"]),
                             (n, 0, n - 1, True))
        trace = self.decode(clean=False, keep=lambda e: False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        self.assertEqual(len(trace.messages()), 1)
        self.assertIn("no end marker", trace.messages()[0])
        print("RESULT SIGKILL_after_pause events=%d" % (threads * n))


if __name__ == "__main__":
    dltest.main()
