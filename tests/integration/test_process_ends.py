"""How each process ended, from its trace's last record
(lib/core/process_end.h; programs/process_ends.c): the summary names the
processes that ended with a non-zero status or by a signal, against what
the parent's wait() said of each. Without it a job whose rank failed read
as a finished run: every trace ended cleanly (the launcher's SIGTERM to
the other ranks is caught and the trace finished), and nothing said which
process failed. A process killed by SIGKILL (the OOM killer's), which no
handler sees, is named for its trace cut short with no end record."""

import re
import signal

import dltest


class ProcessEndsTest(dltest.TraceTestCase):

    def test_each_way_to_end(self):
        data = dltest.write_files(self.data, 1, lambda i: 1000)
        p = self.run_traced([dltest.program("process_ends"), next(iter(data))], expect_rc=1)
        parent = int(re.search(r"^PARENT (\d+)$", p.stdout, re.M).group(1))
        waited = {way: (int(pid), int(status), int(sig)) for pid, way, status, sig in
                  re.findall(r"^CHILD (\d+) (\S+) status=(-?\d+) signal=(\d+)$", p.stdout, re.M)}
        self.assertEqual(waited["return"][1:], (4, 0))
        self.assertEqual(waited["term"][1:], (-1, signal.SIGTERM))
        self.assertEqual(waited["kill"][1:], (-1, signal.SIGKILL))
        # (_exit on a thread with no ring: its record parked for the final
        # pass, where it was lost.)
        self.assertEqual(waited["thread_exit"][1:], (7, 0))
        self.assertEqual(waited["segv"][1:], (-1, signal.SIGSEGV))
        # Each trace's last record: exit with the status, or the signal
        # (and who sent it: the parent's kill; the kernel's fault none);
        # none for SIGKILL.
        trace = self.decode(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        # The one message: the killed child's trace has no end marker.
        self.assertEqual([m for m in trace.messages() if "no end marker; process %d was killed"
                          % waited["kill"][0] not in m], [])
        last = {}
        for e in trace.events:
            if e["name"] in ("exit", "signal"):
                last[e["pid"]] = (e["name"], e["ret"], e.get("sender", 0))
        for way, (pid, status, sig) in waited.items():
            want = ("signal", sig, parent if way == "term" else 0) if sig else ("exit", status, 0)
            if way == "kill":
                want = None
            self.assertEqual(last.get(pid), want, way)
        self.assertEqual(last.get(parent), ("exit", 1, 0))
        # The summary: the parent and every child but the one that exited
        # 0, by pid; the one killed as having no end recorded (its status
        # and signal unknown: 0).
        v = self.summary()["verdict"]
        killed = waited["kill"][0]
        bad = sorted([w if w[0] != killed else (killed, 0, 0) for w in waited.values()
                      if w[1] != 0] + [(parent, 1, 0)], key=lambda w: w[0])
        self.assertEqual([(e["pid"], e["status"] if not e["signal"] else -1, e["signal"])
                          for e in v["ended"]], bad[:8])  # the first 8 named
        self.assertEqual(v["ended_count"], len(bad))
        self.assertEqual([e["pid"] for e in v["ended"] if not e["recorded"]], [killed])
        self.assertEqual([e["how"] for e in v["ended"] if e["pid"] == killed],
                         ["no end recorded (SIGKILL, the OOM killer, or still running)"])
        term = [e for e in v["ended"] if e["signal"] == signal.SIGTERM]
        self.assertEqual(term[0]["sender"], parent)
        self.assertEqual(term[0]["how"], "SIGTERM from pid %d (process_ends)" % parent)
        text = self.summary(text=True)
        self.assertIn("ended        exit status 1: pid %d (process_ends)" % parent, text)
        self.assertIn("; exit status 4: pid %d (process_ends);" % waited["return"][0], text)
        self.assertIn("; no end recorded (SIGKILL, the OOM killer, or still running): pid %d "
                      "(process_ends);" % killed, text)

    def test_a_helper_that_failed_is_its_parents_to_judge(self):
        """A job that ran a helper which failed (git rev-parse outside a
        repository, 128; ctypes.util.find_library's compiler probes, 1) and
        went on to end with status 0: no process ended badly (the helper was
        named: a false alarm on a job that succeeded)."""
        data = dltest.write_files(self.data, 1, lambda i: 1000)
        p = self.run_traced([dltest.program("process_ends"), next(iter(data)), "helper"])
        self.assertIn("HELPER status=1\n", p.stdout)
        trace = self.decode()
        self.assertIn(("exit", 1), [(e["name"], e["ret"]) for e in trace.events])  # recorded
        v = self.summary()["verdict"]
        self.assertEqual((v["ended"], v["ended_count"]), ([], 0))
        self.assertNotIn("ended  ", self.summary(text=True))


if __name__ == "__main__":
    dltest.main()
