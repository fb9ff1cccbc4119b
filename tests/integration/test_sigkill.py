"""SIGKILL: every block written before the kill decodes, and the events not
written yet are recovered from the rings sidecar.

programs/sigkill_self.c records 200 000 preads, then waits, and kills
itself with SIGKILL when told. It is told once the tracer's periodic flush
(DLPROF_FLUSH_MS) has written every pread while the program waited -- no exit
path flushes them -- which the test sees in the trace file (bounded: 60 s,
far past the 50 ms interval). dlprof-dump must decode the trace (exit status
0), say that it has no end marker, and show every pread made before the wait.

programs/fatal_signal.c writes files, says DONE on its stdout, and waits: the
test kills it then, with every event still in memory (DLPROF_FLUSH_MS far
longer than the run) or some written and some not; dlprof-dump must show
each event exactly once, and say how many it recovered from the sidecar. A
forked child killed the same way has its own sidecar and names its parent's
paths. A process that ends normally leaves no sidecar.
"""

import collections
import os
import re
import signal
import subprocess

import dltest

PREADS = 200000


class SigkillTest(dltest.TraceTestCase):

    def test_events_before_the_kill_are_kept(self):
        path = os.path.join(self.data, "input.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(4096))
        p = subprocess.Popen(
            [dltest.program("sigkill_self"), path, str(PREADS)],
            env=dltest.traced_env(self.traces, {"DLPROF_FLUSH_MS": "50"}),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        with p:
            try:
                done = dltest.read_line(p.stdout)
                m = re.match(r"^DONE (\d+) (\d+)$", done)
                self.assertTrue(m, done)
                pid, count = map(int, m.groups())
                self.assertEqual(count, PREADS)

                # The block headers say when enough events are on disk (the
                # open and the preads); the decoder then says whether they
                # are all the preads.
                headers = dltest.wait_until(
                    lambda: dltest.flushed_events(self.traces) >= PREADS + 1, 60,
                    "the preads never reached the trace while the program waited")

                def all_preads():
                    n = collections.Counter()
                    dltest.decode(self.traces, keep=lambda e: n.update([e["name"]]))
                    return n["pread"] == PREADS

                dltest.wait_until(all_preads, 60, "preads missing from the trace")
                print("RESULT sigkill flushed after %.3f s" % headers)
                p.stdin.write("kill\n")
                p.stdin.flush()
                p.communicate(timeout=60)
            finally:
                if p.poll() is None:
                    p.kill()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        offsets = collections.Counter()

        def keep(e):
            if e["name"] == "pread":
                offsets[(e.get("path"), e["offset"], e["bytes"], e["pid"])] += 1
                return False
            return True

        trace = self.decode(clean=False, keep=keep)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        messages = trace.messages()
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("no end marker", messages[0])
        self.assertIn(str(pid), messages[0])
        self.assertEqual(offsets, collections.Counter(
            {(path, k * 128, 128, pid): PREADS // 32 for k in range(32)}))
        self.assertEqual([e["name"] for e in trace.on(path)], ["open"])


FILES = 50
NO_FLUSH = {"DLPROF_FLUSH_MS": "600000"}


def sidecars(trace_dir):
    return [os.path.join(d, n) for d, _, names in os.walk(trace_dir)
            for n in names if n.endswith(".dlprof.rings")]


class SidecarRecoveryTest(dltest.TraceTestCase):
    """Events in memory at a SIGKILL come back from the rings sidecar."""

    def start(self, mode, env, files=FILES):
        p = subprocess.Popen(
            [dltest.program("fatal_signal"), self.data, str(files), mode],
            env=dltest.traced_env(self.traces, env), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        line = dltest.read_line(p.stdout)
        m = re.match(r"^DONE (\d+)$", line)
        self.assertTrue(m, line)
        return p, int(m.group(1))

    def check_files(self, events, files=FILES):
        """open, write and close of each file exactly once."""
        got = collections.Counter((e["name"], e["path"]) for e in events
                                  if e.get("path", "").startswith(self.data + "/"))
        want = collections.Counter()
        for k in range(files):
            for name in ("open", "write", "close"):
                want[(name, os.path.join(self.data, "f%d" % k))] = 1
        self.assertEqual(got, want)

    def recovered(self, trace, pid):
        notes = [m for m in trace.messages() if "(%d)" % pid in m or
                 "process %d " % pid in m]
        self.assertEqual(len(notes), 1, trace.messages())
        m = re.search(r"recovered (\d+) events from (\S+)", notes[0])
        return int(m.group(1)) if m else 0

    def test_events_only_in_memory(self):
        p, pid = self.start("wait", NO_FLUSH)
        self.assertEqual(dltest.flushed_events(self.traces), 0)
        self.assertEqual(len(sidecars(self.traces)), 1)
        os.kill(pid, signal.SIGKILL)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        trace = self.decode(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        self.check_files(trace.events)
        # Nothing was written: every event of the process is a recovered one.
        self.assertEqual(self.recovered(trace, pid), len(trace.by_pid()[pid]))

    def test_events_partly_written(self):
        # 64-event rings are written whenever half full: the kill finds most
        # events in the trace, the last few only in the ring, none in both.
        files = 3000
        p, pid = self.start("wait", dict(NO_FLUSH, DLPROF_BUFFER_KB="4"), files)
        self.assertGreater(dltest.flushed_events(self.traces), 0)
        os.kill(pid, signal.SIGKILL)
        p.communicate(timeout=60)
        trace = self.decode(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        self.check_files(trace.events, files)
        self.assertNotIn("unknown string", "".join(e.get("path", "") for e in trace.events))

    def test_forked_child_has_its_own(self):
        p, child = self.start("fork", NO_FLUSH)
        os.kill(child, signal.SIGKILL)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        trace = self.decode(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        by_pid = trace.by_pid()
        self.assertEqual(set(by_pid), {p.pid, child})
        self.check_files(by_pid[p.pid])
        self.check_files(by_pid[child])
        self.assertEqual(self.recovered(trace, child), len(by_pid[child]))
        self.assertEqual(self.recovered(trace, p.pid), len(by_pid[p.pid]))

    def test_no_sidecar_after_a_normal_end(self):
        p, pid = self.start("wait", NO_FLUSH)
        p.communicate("go\n", timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(sidecars(self.traces), [])
        self.check_files(self.decode().events)


if __name__ == "__main__":
    dltest.main()
