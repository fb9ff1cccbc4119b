"""The counters file of a bounded trace (DLPROF_KEEP) over a run whose
busiest files are new at every flusher pass.

programs/keep_tmpcache.c is a cache of temporary files: it creates, writes,
reads and unlinks one file after another, each with a 227-byte path, and
prints its own counts. The counters file names the files most time went to
in each interval's record; the record of the interval so far, written at
every pass, names its own, which pass by. The file must grow by the
records kept (an interval's record and the names it brings), not by a
path a pass, and its whole run must count every call the program made.
"""

import os
import re

import dltest

PATH_BYTES = 227
INTERVAL_NS = 2_000_000_000  # DLPROF_KEEP=2s: an interval of 2 s


class KeepCountersTest(dltest.TraceTestCase):

    def test_passing_files_names_do_not_stay_in_the_counters_file(self):
        name = "/cache-entry-00000000.tmp"
        cache = os.path.join(self.data, "c" * (PATH_BYTES - len(self.data) - 1 - len(name)))
        os.mkdir(cache)
        self.assertEqual(len(cache + name), PATH_BYTES)
        # A pass every 50 ms: 40 records so far an interval.
        p = self.run_traced([dltest.program("keep_tmpcache"), cache, "6"],
                            env={"DLPROF_KEEP": "2s", "DLPROF_FLUSH_MS": "50"}, timeout=60)
        m = re.search(r"^DONE (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)
        self.assertIsNotNone(m, p.stdout)
        files, writes, write_bytes, reads, read_bytes, ran_ns = map(int, m.groups())
        self.assertGreater(files, 1000)
        counters = [os.path.join(r, n) for r, _, ns in os.walk(self.traces)
                    for n in ns if n.endswith(".dlcount")]
        self.assertEqual(len(counters), 1, counters)
        size = os.path.getsize(counters[0])
        # At most: a record an interval of the run's (the last one cut short
        # at exit, one more where the run began between two), each naming 8
        # new paths (a strings record: an id and a length a path) with its
        # 8 file rows (under 64 bytes each) and the rest of an interval
        # record (under 400 bytes); the header (under 4 KiB).
        intervals = ran_ns // INTERVAL_NS + 2
        per_interval = 16 + 8 * (PATH_BYTES + 4) + 8 * 64 + 400
        bound = 4096 + intervals * per_interval
        self.assertLessEqual(size, bound,
                             "%d bytes for %d intervals: %.1f MB an hour" %
                             (size, intervals, size * 3600e9 / ran_ns / 1e6))
        # Its whole run counts what the program did.
        w = self.summary()["whole_run"]
        total = {k: sum(c[k] for c in w["classes"].values())
                 for k in ("reads", "read_bytes", "writes", "write_bytes")}
        self.assertEqual(total, {"reads": reads, "read_bytes": read_bytes,
                                 "writes": writes, "write_bytes": write_bytes})
        # Python reads the same counters (dlprof/counters.py).
        python = os.path.join(os.path.dirname(dltest.DUMP), "..", "python")
        r = dltest.run(["/usr/bin/python3", "-c",
                        "import dlprof, sys; from dlprof.counters import CLASSES; "
                        "c = dlprof.read_counters(sys.argv[1]); "
                        "print(sum(int(c[k + '_reads'].sum()) for k in CLASSES))",
                        self.traces], dict(os.environ, PYTHONPATH=python))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(int(r.stdout), reads)


if __name__ == "__main__":
    dltest.main()
