"""SIGKILL: every block written before the kill decodes.

programs/sigkill_self.c records 200 000 preads, then waits, and kills
itself with SIGKILL when told. It is told once the tracer's periodic flush
(DLPROF_FLUSH_MS) has written every pread while the program waited -- no exit
path flushes them -- which the test sees in the trace file (bounded: 60 s,
far past the 50 ms interval). dlprof-dump must decode the trace (exit status
0), say that it has no end marker, and show every pread made before the wait.
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


if __name__ == "__main__":
    dltest.main()
