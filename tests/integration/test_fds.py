"""Programs that sweep the descriptor table.

programs/close_fds.c closes every fd from 3 up (a close() loop to 1024,
close_range, closefrom, or the fds listed in /proc/self/fd), or dup2()s one
file onto every fd number up to 1023 -- or up to a lowered RLIMIT_NOFILE, so
that no number is left for the tracer -- and then does I/O. Its results must
be the same as without the tracer (the trace file is invisible to it and
never written into its files), and tracing continues after the sweep.
"""

import os

import dltest


class FdSweepTest(dltest.TraceTestCase):

    def check_sweep(self, mode):
        traced, _ = self.assert_same_as_untraced(
            [dltest.program("close_fds"), mode, self.data])
        trace = self.decode()
        after = os.path.join(self.data, "after.dat")
        events = [(e["name"], e.get("fd"), e.get("offset"), e.get("bytes"), e["ret"])
                  for e in trace.on(after)]
        self.assertEqual(events, [
            ("open", 3, None, None, 3),
            ("write", 3, 0, 4096, 4096),
            ("lseek", 3, 0, None, 0),
            ("read", 3, 0, 4096, 4096),
            ("close", 3, None, None, 0),
        ])
        before = [e["name"] for e in trace.on(os.path.join(self.data, "before.dat"))]
        self.assertEqual(before[:2], ["open", "write"])
        return traced, trace

    def test_close_loop(self):
        out, trace = self.check_sweep("loop")
        self.assertIn("LOOP ok=", out.stdout)

    def test_close_loop_in_forked_child(self):
        # The child must not see the parent's trace descriptor either.
        out, trace = self.check_sweep("fork_loop")
        self.assertIn("PARENT child status=0", out.stdout)
        self.assertEqual(len(trace.files), 2)

    def test_close_range(self):
        self.check_sweep("close_range")

    def test_closefrom(self):
        self.check_sweep("closefrom")

    def test_close_what_proc_lists(self):
        self.check_sweep("proc")

    def check_dup2(self, mode, last):
        out, trace = self.check_sweep(mode)
        self.assertIn("DUP2 last=%d fails=0\nREADBACK bytes=2000 ok=1\n" % last,
                      out.stdout)
        dup = os.path.join(self.data, "dup.dat")
        # Nothing but the program's 100 records in its file.
        self.assertEqual(os.path.getsize(dup), 2000)
        events = trace.on(dup)
        dups = [e for e in events if e["name"] == "dup2"]
        fd = events[0]["fd"]
        self.assertEqual(sorted(e["newfd"] for e in dups),
                         [k for k in range(3, last + 1) if k != fd])
        writes = [e for e in events if e["name"] == "write"]
        self.assertEqual([e["offset"] for e in writes], list(range(0, 2000, 20)))
        self.assertEqual({e["bytes"] for e in writes}, {20})
        self.assertEqual({e["fd"] for e in writes},
                         {3 + (i * 37) % (last - 2) for i in range(100)})
        reads = [e for e in events if e["name"] == "read"]
        self.assertEqual([(e["fd"], e["offset"], e["bytes"]) for e in reads],
                         [(last - 1, 0, 2000)])

    def test_dup2_onto_every_fd(self):
        self.check_dup2("dup2", 1023)

    def test_dup2_onto_every_fd_below_the_limit(self):
        self.check_dup2("dup2_limit", 255)


if __name__ == "__main__":
    dltest.main()
