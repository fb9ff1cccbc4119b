"""Many threads: every event is there (lossless by default), with its tid.

programs/threads_pread.c runs 4 threads x 100 000 preads of 64 bytes on one
file and prints each thread's tid; the trace must hold exactly 100 000 pread
events per printed tid, with the right offsets, also when the per-thread
ring is tiny and producers keep waiting for the flusher.
"""

import collections
import os
import re

import dltest

THREADS = 4
ITERATIONS = 100000


class ThreadsTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.file = os.path.join(self.data, "shared.bin")
        with open(self.file, "wb") as f:
            f.write(os.urandom(4096))

    def run_threads(self, threads, iterations, waves=1, env=None, quiet=True):
        cmd = [dltest.program("threads_pread"), self.file, str(threads),
               str(iterations), str(waves)]
        p = self.run_traced(cmd, env=env, quiet=quiet, timeout=120)
        fd = int(re.search(r"^FD (\d+)$", p.stdout, re.M).group(1))
        tids = {}
        for tid, reads, nbytes in re.findall(r"^TID (\d+) (\d+) (\d+)$", p.stdout, re.M):
            self.assertNotIn(int(tid), tids)
            tids[int(tid)] = (int(reads), int(nbytes))
        self.assertEqual(len(tids), threads * waves)
        return p, fd, tids

    def check_preads(self, trace_kwargs, fd, tids, iterations):
        """Streams the trace; checks every pread event on the file."""
        per_tid = collections.Counter()
        offsets = collections.defaultdict(collections.Counter)
        bad = []

        def keep(e):
            if e["name"] == "pread" and e.get("path") == self.file:
                per_tid[e["tid"]] += 1
                offsets[e["tid"]][e["offset"]] += 1
                if (e["fd"], e["size"], e["bytes"], e["ret"], e["errno"]) != (
                        fd, 64, 64, 64, 0) and len(bad) < 10:
                    bad.append(e)
                return False
            return True

        trace = self.decode(keep=keep, **trace_kwargs)
        self.assertEqual(bad, [])
        self.assertEqual(sum(per_tid.values()), len(tids) * iterations)
        self.assertEqual(dict(per_tid), {t: r for t, (r, _) in tids.items()})
        for tid in tids:
            self.assertEqual(tids[tid], (iterations, iterations * 64))
            self.assertEqual(offsets[tid],
                             collections.Counter({k * 64: iterations // 50
                                                  for k in range(50)}))
        # One open and one close by the main thread; nothing else on the file.
        others = trace.on(self.file)
        self.assertEqual(sorted(e["name"] for e in others), ["close", "open"])
        return trace

    def test_four_threads_lossless(self):
        _, fd, tids = self.run_threads(THREADS, ITERATIONS)
        trace = self.check_preads({}, fd, tids, ITERATIONS)
        self.assertEqual(len(trace.files), 1)

    def test_tiny_ring_waits_for_the_flusher(self):
        # 16 KiB rings hold 256 events: producers fill them over and over.
        _, fd, tids = self.run_threads(
            THREADS, ITERATIONS, env={"DLPROF_BUFFER_KB": "16"})
        self.check_preads({}, fd, tids, ITERATIONS)

    def test_threads_come_and_go(self):
        # 60 waves of 4 short-lived threads: buffers of ended threads are
        # drained and handed to new threads without losing an event.
        _, fd, tids = self.run_threads(
            THREADS, 500, waves=60, env={"DLPROF_BUFFER_KB": "16"})
        self.check_preads({}, fd, tids, 500)

    def test_drop_mode_counts_what_it_drops(self):
        iterations = 50000
        p, fd, tids = self.run_threads(
            THREADS, iterations, quiet=False,
            env={"DLPROF_BUFFER_KB": "4", "DLPROF_ON_FULL": "drop"})
        m = re.search(r"^dlprof: trace (\S+): (\d+) events written, (\d+) dropped$",
                      p.stderr, re.M)
        self.assertIsNotNone(m, p.stderr)
        written, dropped = int(m.group(2)), int(m.group(3))
        per_tid = collections.Counter()

        def keep(e):
            if e["name"] == "pread":
                per_tid[e["tid"]] += 1
                return False
            return True

        trace = self.decode(clean=False, keep=keep)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        self.assertGreater(dropped, 0)
        # open + close are never dropped here (the ring is empty then).
        self.assertEqual(written + dropped, THREADS * iterations + 2)
        self.assertEqual(sum(per_tid.values()) + len(trace.events), written)
        self.assertIn("%d events were dropped" % dropped, trace.dump_stderr)
        self.assertLessEqual(set(per_tid), set(tids))


if __name__ == "__main__":
    dltest.main()
