"""SIGKILL: every block written before the kill decodes.

programs/sigkill_self.c records 200 000 preads, sleeps well past
DLPROF_FLUSH_MS, and kills itself with SIGKILL. dlprof-dump must decode the
trace (exit status 0), say that it has no end marker, and show every pread
made before the sleep.
"""

import collections
import os
import re
import signal

import dltest

PREADS = 200000


class SigkillTest(dltest.TraceTestCase):

    def test_events_before_the_kill_are_kept(self):
        path = os.path.join(self.data, "input.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(4096))
        p = self.run_traced(
            [dltest.program("sigkill_self"), path, str(PREADS), "400"],
            env={"DLPROF_FLUSH_MS": "50"}, expect_rc=-signal.SIGKILL)
        pid, count = map(int, re.search(r"^DONE (\d+) (\d+)$", p.stdout, re.M).groups())
        self.assertEqual(count, PREADS)
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
