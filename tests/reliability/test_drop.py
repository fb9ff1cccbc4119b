"""Drop mode under a deliberately tiny buffer.

DLPROF_ON_FULL=drop with DLPROF_BUFFER_KB=4 (64 events per thread ring):
8 threads x 100 000 preads overrun the rings. What the trace records plus the
dropped count it carries must equal what the program did (8 x 100 000 preads,
one open, one close), the count dlprof-dump warns about must be that same
number, and no recorded event may be duplicated or out of order.
"""

import json
import os
import re

import dltest
import dltest.reliability as rtest

THREADS, N = 8, 100000


class DropModeTest(rtest.RelTestCase):

    def run_drop(self, buffer_kb, **env):
        path = self.make_file("burst.bin", N)
        p = self.run_traced([rtest.program("storm"), "burst", path, str(THREADS), str(N)],
                            env=dict(env, DLPROF_ON_FULL="drop", DLPROF_BUFFER_KB=buffer_kb),
                            quiet=False, timeout=100)
        self.assertIn("TOTAL %d\n" % (THREADS * N), p.stdout)
        check = self.check(seq=["pread"])
        self.assertEqual(len(check["processes"]), 1)
        proc = check["processes"][0]
        self.assertEqual(proc["messages"], [])
        self.assertTrue(proc["final"])
        did = THREADS * N + 3  # the preads, one open, one close, the exit record
        self.assertEqual(proc["events"] + proc["dropped"], did)
        # The tracer's exit line says the same.
        m = re.search(r"dlprof: trace .*: (\d+) events written, (\d+) dropped", p.stderr)
        self.assertIsNotNone(m, p.stderr)
        self.assertEqual((int(m.group(1)), int(m.group(2))), (proc["events"], proc["dropped"]))
        # dlprof-dump's warning names the same count; the decode is clean.
        trace = self.decode(clean=False, keep=lambda e: False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        warned = rtest.dropped_from_warnings(trace.dump_stderr)
        if proc["dropped"]:
            self.assertEqual(list(warned.values()), [proc["dropped"]])
        else:
            self.assertEqual(warned, {})
        for s in check["seq"]["pread"]:
            self.assertTrue(s["increasing"], s)  # a subset, in order, no duplicate
            self.assertLessEqual(s["count"], N)
        self.assertEqual(sum(s["count"] for s in check["seq"]["pread"]),
                         proc["kinds"].get("pread", 0))
        # The summary says its figures are short of the run, first, and in
        # its JSON's "input" (it said "complete", only stderr warned).
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                       dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        loss = json.loads(p.stdout)["input"]
        self.assertEqual((loss["complete"], loss["events_dropped"]),
                         (proc["dropped"] == 0, proc["dropped"]))
        p = dltest.run([dltest.DUMP, "--summary", self.traces], dltest.base_env())
        first = p.stdout.splitlines()[0]
        if proc["dropped"]:
            self.assertEqual(first, "input: %d events dropped while tracing: figures are of "
                             "what was recorded" % proc["dropped"])
        else:
            self.assertFalse(first.startswith("input:"), first)
        print("RESULT drop buffer_kb=%s did=%d recorded=%d dropped=%d"
              % (buffer_kb, did, proc["events"], proc["dropped"]))
        return proc

    def test_tiny_buffer_drops_are_counted(self):
        # The flusher asleep until the first drop wakes it (no flush by time,
        # no TSC scale to refresh): each thread's ring fills and drops
        # before anything drains it, however the machine schedules them.
        proc = self.run_drop("4", DLPROF_FLUSH_MS="600000", DLPROF_CLOCK="clock_gettime")
        self.assertGreater(proc["dropped"], 0, "nothing dropped: the test tested nothing")

    def test_large_buffer_drops_nothing_or_counts(self):
        self.run_drop("4096")


if __name__ == "__main__":
    dltest.main()


class StringBurstTest(rtest.RelTestCase):
    """20 000 distinct paths of ~3 800 bytes between two flushes: 76 MB of new
    strings, more than one block may hold (64 MiB). They must go out in
    blocks of their own ahead of the events, every path decodable."""

    PATHS, COMPONENTS = 20000, 15

    def test_string_burst_larger_than_a_block(self):
        script = (
            "import os, sys\n"
            "base, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
            "failed = 0\n"
            "for i in range(n):\n"
            "    p = os.path.join(base, *[('%05d' % i) + 'x' * 245] * k)\n"
            "    try:\n"
            "        os.stat(p)\n"
            "    except FileNotFoundError:\n"
            "        failed += 1\n"
            "print('FAILED', failed)\n")
        p = self.run_traced(
            [dltest.SYSTEM_PYTHON, "-c", script, self.data, str(self.PATHS),
             str(self.COMPONENTS)],
            # One ring holds them all, and no flush comes before exit.
            env={"DLPROF_BUFFER_KB": "65536", "DLPROF_FLUSH_MS": "600000"}, timeout=100)
        self.assertIn("FAILED %d\n" % self.PATHS, p.stdout)
        check = self.check()
        proc = check["processes"][0]
        self.assertEqual(proc["messages"], [])
        self.assertEqual(proc["damaged"], 0)
        trace = self.decode(keep=lambda e: e["name"] in ("stat", "stat64") and
                            e.get("path", "").startswith(self.data + "/"))
        stats = trace.events
        self.assertEqual(len(stats), self.PATHS)
        self.assertEqual(len({e["path"] for e in stats}), self.PATHS)
        self.assertTrue(all(len(e["path"]) > 3700 for e in stats))
