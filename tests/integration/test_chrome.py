"""dlprof-dump --format chrome: a Trace Event JSON that Perfetto UI and
chrome://tracing open.

Real programs (fork children, threads, every STDIO call, plain POSIX I/O) are
traced into one directory; the timeline is loaded with Python's JSON parser
(numbers as Decimal, so nothing is rounded) and checked against the jsonl of
the same traces: the structure Perfetto requires (traceEvents; ph, pid, tid,
ts in microseconds with the nanoseconds kept as decimals), one complete event
per traced call with the same process, thread, name, start and duration,
every event kind present, a named track for every process and thread, and
bandwidth counters for the processes that read.
"""

import collections
import decimal
import json
import os
import subprocess

import dltest


class ChromeTimelineTest(dltest.TraceTestCase):

    def trace_programs(self):
        # Four programs, one timeline: one run (each would be a run of its own).
        env = {"DLPROF_RUN_ID": "chrome-test"}
        files = sorted(dltest.write_files(self.data, 3, lambda i: 20000 + i))
        self.run_traced([dltest.program("fork_children"), "_exit"] + files, env=env)
        self.run_traced([dltest.program("threads_pread"), files[0], "3", "200"], env=env)
        stdio_dir = os.path.join(self.data, "stdio")
        os.mkdir(stdio_dir)
        self.run_traced([dltest.program("stdio_all"), stdio_dir], env=env)
        self.run_traced([dltest.program("basic_io"), self.data], env=env)

    def chrome(self):
        p = subprocess.run([dltest.DUMP, "--format", "chrome", self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return json.loads(p.stdout, parse_float=decimal.Decimal)

    def test_timeline_matches_the_trace(self):
        self.trace_programs()
        trace = self.decode()
        doc = self.chrome()

        self.assertIsInstance(doc, dict)
        self.assertEqual(doc.get("displayTimeUnit"), "ns")
        events = doc["traceEvents"]
        self.assertIsInstance(events, list)
        for e in events:
            self.assertIn(e["ph"], ("X", "M", "C", "s", "f"), e)
            self.assertIsInstance(e["pid"], int, e)
            if e["ph"] != "C":
                self.assertIsInstance(e["tid"], int, e)
            if e["ph"] != "M":
                self.assertIsInstance(e["ts"], (int, decimal.Decimal), e)

        # One complete event per traced call: same process, thread, name,
        # and start and duration to the nanosecond.
        def ns(micros):
            return int(decimal.Decimal(micros) * 1000)

        got = collections.Counter(
            (e["pid"], e["tid"], e["name"], ns(e["ts"]), ns(e["dur"]))
            for e in events if e["ph"] == "X")
        want = collections.Counter(
            (e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in trace.events)
        self.assertEqual(got, want)
        self.assertGreater(len(trace.events), 100)

        # Every kind of call the programs made is on the timeline, and its
        # arguments say what the call did.
        kinds = {e["name"] for e in trace.events}
        for name in ("open", "read", "pread", "write", "close", "fork", "fopen", "fread",
                     "fwrite", "fclose"):
            self.assertIn(name, kinds)
        self.assertEqual(kinds, {e["name"] for e in events if e["ph"] == "X"})
        by_key = {(e["pid"], e["tid"], ns(e["ts"]), e["name"]): e
                  for e in events if e["ph"] == "X"}
        for e in trace.events:
            if e["name"] != "pread":
                continue
            args = by_key[(e["pid"], e["tid"], e["ts"], e["name"])]["args"]
            self.assertEqual(args["offset"], e["offset"])
            self.assertEqual(args["size"], e["size"])
            self.assertEqual(args["ret"], e["ret"])
            self.assertEqual(args["path"], e["path"])

        # Named tracks: every process, and every thread that has events.
        names = {(e["pid"], e["tid"]) for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        procs = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
        self.assertEqual(procs, {e["pid"] for e in trace.events})
        self.assertEqual(names, {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"})

        # Bandwidth counters for the processes that read (POSIX reads here;
        # STDIO readers have counters too).
        readers = {e["pid"] for e in trace.events if e["name"] in dltest.READ_NAMES}
        counted = {e["pid"] for e in events if e["ph"] == "C"}
        self.assertTrue(readers <= counted, (readers, counted))
        self.assertTrue(counted <= procs, (counted, procs))
        # MiB/s to the thousandth over 100 ms bins: a process's bins add up
        # to the bytes it read (whole MiB/s made a loader's 0.78 MiB/s 0).
        # The processes that read with POSIX calls alone (and the record of
        # how each ended, every process's):
        posix = {e["pid"] for e in trace.events if e["name"] in dltest.READ_NAMES} - \
            {e["pid"] for e in trace.events if e["cat"] != "posix" and not dltest.is_end(e)}
        self.assertTrue(posix)
        # (A copy between files, sendfile or copy_file_range, reads what it
        # moves: basic_io copies 970 bytes.)
        copies = {"sendfile", "sendfile64", "copy_file_range"}
        for pid in posix:
            bins = [float(e["args"]["read"]) for e in events if e["ph"] == "C" and e["pid"] == pid]
            read = sum(e.get("bytes", 0) for e in trace.events
                       if e["pid"] == pid and e["name"] in dltest.READ_NAMES | copies)
            self.assertGreater(read, 0)
            self.assertLessEqual(abs(sum(bins) * 0.1 * 2**20 - read), 110 * len(bins) + 1,
                                 (pid, bins, read))


if __name__ == "__main__":
    dltest.main()
