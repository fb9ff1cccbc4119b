"""Bounded traces (DLPROF_KEEP): the full events of the last DURATION on disk,
the whole run in counters, windows kept whole by a rule or on request.

programs/keep_loop.c reads a file in batches of 20 preads (read i at block
i of a large sparse file, so that each read is told apart by its offset),
each batch in a "load_batch" region and an "optimizer_step" region pacing
it; it prints "DONE PID READS START" (its loop's start on the tracer's
clock) and waits for a line on stdin. Every test
checks what it knows exactly: the reads it made against the whole run's
counters, and the reads of the kept windows against the decoded events.
"""

import glob
import json
import os
import signal
import struct
import subprocess
import time

import dltest

BLOCK = 4096


class KeepTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        # Sparse: offsets up to 4 GiB tell 1 Mi reads apart without writing them.
        self.file = os.path.join(self.data, "data.bin")
        with open(self.file, "wb") as f:
            f.truncate(1 << 32)

    def start(self, seconds, rate, env, slow=None, procs=1):
        args = [dltest.program("keep_loop"), self.file, str(seconds), str(rate)]
        if slow or procs > 1:
            args += [str(x) for x in (slow or (0, 0, 0))] + [str(procs)]
        return subprocess.Popen(args, env=self.traced_env(self.traces, env),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def finish(self, p, procs=1, kill=False, linger=0):
        """The reads of each process (pid -> count); ends it (SIGKILL with
        `kill`), `linger` seconds after its loop. self.loop_start: each
        process's loop start (pid -> ns)."""
        done = {}
        self.loop_start = {}
        with p:
            for _ in range(procs):
                line = dltest.read_line(p.stdout, timeout=120)
                _, pid, reads, start = line.split()
                done[int(pid)] = int(reads)
                self.loop_start[int(pid)] = int(start)
            time.sleep(linger)
            if kill:
                for pid in done:
                    os.kill(pid, signal.SIGKILL)
            else:
                p.stdin.write("\n" * procs)
                p.stdin.close()
            p.wait(timeout=60)
        return done

    def whole_run(self):
        s = self.summary()
        self.assertIn("whole_run", s)
        return s, s["whole_run"]

    def python(self, code):
        """What `code` prints, run by the system Python (pandas) with the
        build's dlprof package and the trace directory as its argument."""
        python = os.path.join(os.path.dirname(dltest.DUMP), "..", "python")
        r = subprocess.run(["/usr/bin/python3", "-c", code, self.traces],
                           env=dict(os.environ, PYTHONPATH=python), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def assert_keeps_the_last(self, pid, ns, clean=True):
        """The process's kept events reach back `ns` from its newest: the
        writer deletes a segment only once the one after it begins that far
        back (a test of preads alone would miss by the gap between two)."""
        t = self.decode(keep=lambda e: e.get("pid") == pid, clean=clean)
        ts = [e["ts"] for e in t.events]
        self.assertLessEqual(min(ts), max(ts) - ns, (max(ts) - min(ts)) / 1e9)

    def kept_reads(self, keep=lambda e: e["name"] == "pread", clean=True):
        return self.decode(keep=keep, clean=clean)

    def kept_after_sigkill(self, p):
        """Ends `p` with SIGKILL after its loop: its pid, its reads and the
        indexes of the reads kept, once only the segment being written
        lacks its end marker (the older ones whole) and its rings are
        recovered."""
        done = self.finish(p, kill=True)
        (pid, reads), = done.items()
        dltest.wait_gone([pid])
        t = self.kept_reads(clean=False)
        self.assertEqual(t.dump_rc, 0, t.dump_stderr)
        notes = t.messages()
        self.assertEqual(len(notes), 1, notes)
        self.assertIn("no end marker", notes[0])
        return pid, reads, sorted(e["offset"] // BLOCK for e in t.events)

    def segments(self):
        return [f for f in dltest.trace_files(self.traces)]

    # --- tests --------------------------------------------------------------

    def test_long_loop_is_bounded_and_counts_are_exact(self):
        p = self.start(6, 4000, {"DLPROF_KEEP": "1s"})
        done = self.finish(p)
        (pid, reads), = done.items()
        _, w = self.whole_run()
        # Exact: every pread the program made, though most are gone from disk.
        preads = [k for k in w["kinds"] if k["name"] == "pread"]
        self.assertEqual(preads[0]["calls"], reads)
        self.assertEqual(w["classes"]["data"]["reads"], reads)
        self.assertEqual(w["batches"], reads // 20)
        # Bounded: segments of 1 s, a segment kept while its newest block is
        # younger than 1 s: at most 3 on disk, and a small counters file.
        segs = [f for f in self.segments() if "keep_loop" in f]
        self.assertLessEqual(len(segs), 3, segs)
        counters = [os.path.join(r, n) for r, _, ns in os.walk(self.traces)
                    for n in ns if n.endswith(".dlcount")]
        self.assertTrue(counters)
        for c in counters:
            self.assertLess(os.path.getsize(c), 8192, c)
        t = self.kept_reads()
        self.assertEqual(t.dump_rc, 0, t.dump_stderr)
        kept = sorted(e["offset"] // BLOCK for e in t.events)
        # The kept events are the last reads, with none missing, over at least 1 s.
        self.assertEqual(kept[-1], reads - 1)
        self.assertEqual(kept, list(range(kept[0], reads)))
        self.assertLess(len(kept), reads * 0.6)
        self.assert_keeps_the_last(pid, 1e9)
        text = self.summary(text=True)
        self.assertIn("Whole run, from counters", text)
        self.assertIn("Kept windows", text)
        # The HTML report draws the counters first (where it can be built).
        page = os.path.join(self.tmp, "report.html")
        r = dltest.run([dltest.DUMP, "--format", "html", "-o", page, self.traces],
                       dltest.base_env())
        if "without the charting library" not in r.stderr:
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(page) as f:
                html = f.read()
            self.assertIn("Whole run, from counters (DLPROF_KEEP)", html)
            self.assertIn('"whole_run":', html)
        # Python reads the same counters as a DataFrame (dlprof/counters.py).
        r = self.python("import dlprof, sys; c = dlprof.read_counters(sys.argv[1]); "
                        "print(int(c.data_reads.sum()), int(c.batch_waits.sum()), len(c))")
        data_reads, waits, rows = map(int, r.split())
        self.assertEqual(data_reads, reads)
        self.assertEqual(waits, w["batches"])
        self.assertGreaterEqual(rows, 5)

    def test_sigkill_inside_the_kept_window_loses_nothing(self):
        p = self.start(4, 4000, {"DLPROF_KEEP": "1s", "DLPROF_FLUSH_MS": "2000"})
        pid, reads, kept = self.kept_after_sigkill(p)
        self.assertEqual(kept[-1], reads - 1, "the last reads, not yet written, recovered")
        self.assertEqual(kept, list(range(kept[0], reads)))
        self.assert_keeps_the_last(pid, 1e9, clean=False)
        # The counters stop at the last interval written: never more than made.
        _, w = self.whole_run()
        self.assertLessEqual(w["classes"]["data"]["reads"], reads)

    def counters_records(self):
        """(type, payload) of each whole record of the run's counters files,
        read as docs/FORMAT_BOUNDED.md lays them out (a parser of its own,
        and cheap enough to poll)."""
        paths = [os.path.join(r, n) for r, _, ns in os.walk(self.traces)
                 for n in ns if n.endswith(".dlcount")]
        records = []
        for path in sorted(paths):
            with open(path, "rb") as f:
                data = f.read()
            at = struct.unpack_from("<I", data, 12)[0]
            while at + 16 <= len(data):
                magic, rtype, _, size, _ = struct.unpack_from("<IHHII", data, at)
                if magic != 0x43504C44 or at + 16 + size > len(data):
                    break
                records.append((rtype, data[at + 16:at + 16 + size]))
                at += 16 + size
        return records

    @staticmethod
    def varints(payload):
        out, v, shift = [], 0, 0
        for b in payload:
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                out.append(v)
                v, shift = 0, 0
        return out

    def last_counters_record(self):
        """(type, data reads) of the last whole record of the run's one
        counters file; None before any."""
        records = self.counters_records()
        if not records or records[-1][0] not in (2, 7):
            return None
        # start, length, rank, events, then the data class's reads
        return records[-1][0], self.varints(records[-1][1])[4]

    def test_a_killed_process_counts_to_its_last_pass(self):
        """Intervals of 5 s, a loop of 1 s, then SIGKILL before the first
        interval ended: each flusher pass (every 200 ms) leaves the interval
        so far in the counters, over the one before, so that the whole run
        counts every read while the process runs and after it was killed
        (before, none until the interval's end, and none after a kill)."""
        p = self.start(1, 4000, {"DLPROF_KEEP": "5s"})
        with p:
            _, pid, reads, _ = dltest.read_line(p.stdout, timeout=120).split()
            pid, reads = int(pid), int(reads)
            # The record so far holding every read: the interval's end is
            # 4 s away, each look a file read.
            dltest.wait_until(lambda: self.last_counters_record() == (7, reads), 60,
                              "no record so far with every read")
            os.kill(pid, signal.SIGKILL)
            p.wait(timeout=60)
        dltest.wait_gone([pid])
        _, w = self.whole_run()
        self.assertEqual(w["intervals"], 1)
        self.assertEqual(w["classes"]["data"]["reads"], reads)
        self.assertEqual(w["batches"], reads // 20)
        so_far = "the last interval of 1 process is counted up to its tracer's last pass"
        self.assertTrue(any(so_far in m for m in w["messages"]), w["messages"])
        # Python's DataFrame has it too, marked as the interval so far.
        r = self.python("import dlprof, sys; c = dlprof.read_counters(sys.argv[1]); "
                        "print(len(c), int(c.data_reads.sum()), bool(c.so_far.iloc[-1]))")
        self.assertEqual(r.split(), ["1", str(reads), "True"])

    def test_a_segment_that_cannot_be_made_leaves_the_trace_whole(self):
        """The next segment's name taken (a directory there, made before the
        first block: the flusher every 2 s): the segment being written goes
        on growing, with no end marker, so that a SIGKILL loses nothing --
        the reader recovers the rings beside a trace without its end. (It
        ended the segment before trying the next one: a trace marked whole
        that went on, whose rings no reader looked for.)"""
        p = self.start(3, 2000, {"DLPROF_KEEP": "1s", "DLPROF_FLUSH_MS": "2000"})
        deadline = time.monotonic() + 60
        while not self.segments():
            self.assertLess(time.monotonic(), deadline, "no trace made")
            time.sleep(0.005)
        first, = self.segments()
        os.mkdir(first[:-len(".dlprof")] + ".k1.dlprof")
        _, reads, kept = self.kept_after_sigkill(p)
        self.assertEqual(self.segments(), [first])
        # Nothing was dropped: every read, the last ones from the rings.
        self.assertEqual(kept, list(range(reads)))

    def test_the_last_duration_before_the_last_events_is_kept(self):
        """The flusher every 2 s, a loop of 2.5 s, then 2.5 s without an
        event before the program exits: the block after the loop is written
        after it, at the next tick, and the rotation there keeps the 1 s
        before the loop's last reads, not the 1 s before the tick (which
        left 0.5 s of reads)."""
        p = self.start(2.5, 1000, {"DLPROF_KEEP": "1s", "DLPROF_FLUSH_MS": "2000"})
        done = self.finish(p, linger=2.5)
        (pid, reads), = done.items()
        t = self.kept_reads()
        self.assertEqual(t.dump_rc, 0, t.dump_stderr)
        kept = sorted(e["offset"] // BLOCK for e in t.events)
        self.assertEqual(kept, list(range(kept[0], reads)))
        self.assert_keeps_the_last(pid, 1e9)

    def test_an_idle_process_keeps_no_more_segments(self):
        """A loop of 1 s, then 12 s without an event (a process that waits for
        the length of a job: a launcher, a parent blocked on its children):
        the flusher's clock blocks go on, and a segment rotated out with no
        event in it goes at once. (Each span added one that was never
        deleted: 1 + 12 / 5 files here, about 17,000 a day.) The record of
        the process's exit, 12 s on, is in a segment of its own."""
        p = self.start(1, 1000, {"DLPROF_KEEP": "1s"})
        done = self.finish(p, linger=12)
        (pid, reads), = done.items()
        self.assertLessEqual(len(self.segments()), 3, self.segments())
        t = self.kept_reads()
        self.assertEqual(t.dump_rc, 0, t.dump_stderr)
        kept = sorted(e["offset"] // BLOCK for e in t.events)
        self.assertEqual(kept, list(range(kept[0], reads)))
        self.assert_keeps_the_last(pid, 1e9)

    def test_slowdown_keeps_its_window_and_shows_in_the_verdict(self):
        env = {"DLPROF_KEEP": "1s", "DLPROF_KEEP_WHEN": "batch_wait>25%"}
        # 8 s at 1000 reads/s (a batch of 20 each 20 ms); from 2.5 s to 5 s
        # each batch waits 20 ms more. (At 4000 reads/s, 100 us a pread
        # with every core busy made a calm interval pass the rule, and the
        # reads outweigh the sleeps.)
        p = self.start(8, 1000, env, slow=(2.5, 5, 20))
        done = self.finish(p)
        s, w = self.whole_run()
        start = self.loop_start[next(iter(done))]
        slow_from, slow_to = start + 2.5e9, start + 5e9
        # A window kept for the slowdown: the rule fired in its stretch.
        rules = [k for k in w["kept"] if k["reason"].startswith("batch_wait")
                 and slow_from <= (k["from_ns"] + k["to_ns"]) / 2 <= slow_to + 1.5e9]
        self.assertTrue(rules, (start, w["kept"]))
        k = rules[0]
        self.assertEqual(k["to_ns"] - k["from_ns"], 2 * 10**9)
        # The slowdown's time is in the whole run's batch wait: at least
        # 20 ms for each slow batch (2.5 s of them, 20+ ms each: > 80, 125
        # on a quiet machine).
        self.assertGreater(w["batch_wait_ns"], 80 * 20 * 10**6)
        # Its window's events are still on disk, though the run went on 3 s
        # after it: slow batches (a region of 20 ms and more) among them.
        t = self.decode(keep=lambda e: e.get("name") == "load_batch")
        slow = [e for e in t.events if e["dur"] >= 20 * 10**6
                and k["from_ns"] <= e["ts"] <= k["to_ns"]]
        self.assertTrue(slow, "no slow batch in the kept window")
        self.assertIn("batch_wait", self.summary(text=True))
        # The whole run's verdict, from the counters: the program slept 20 ms
        # a batch for 2.5 s of its 8 s loop, so it waited for data a good
        # 25 % of it, and mostly for what it did beside its reads (8,000
        # reads of 100 us each at worst: 0.8 s).
        v = w["verdict"]
        self.assertEqual(v["bound"], "data", v)
        self.assertEqual(v["loop_ns"], w["loop_ns"])
        self.assertGreaterEqual(v["batch_wait"]["per_mille"], 250, v)
        self.assertEqual(v["batch_wait"]["cause"], "preprocessing", v)
        self.assertEqual(v["findings"][0]["rule"], "batch_wait", v)
        self.assertIn("of that wait, preprocessing", v["findings"][0]["what"])
        # Over time (whole_run.points, a point a second): the points add up
        # to the run; the worst is in the slow stretch by the program's own
        # clock, its wait mostly preprocessing (the 20 ms sleep beside each
        # batch's reads); the points well before and after it had no sleep
        # to wait for (their reads alone may take a quarter of a point when
        # every core is busy: 100 us a pread).
        pts = w["points"]
        self.assertEqual(sum(q["batch_wait_ns"] for q in pts), w["batch_wait_ns"])
        self.assertEqual(sum(q["io_calls"] for q in pts), w["io"]["calls"])
        self.assertEqual(sum(q["batches"] for q in pts), w["batches"])
        worst = pts[w["worst_point"]]
        middle = (worst["start_ns"] + worst["end_ns"]) / 2
        self.assertTrue(slow_from - 0.5e9 <= middle <= slow_to + 0.5e9,
                        (middle - start, worst))
        self.assertGreater(worst["batch_wait_ns"], worst["waiting_ns"] / 2, worst)
        self.assertEqual(worst["causes"]["cause"], "preprocessing", worst)
        self.assertGreaterEqual(worst["causes"]["preprocessing_ns"], worst["batches"] * 10e6)
        self.assertEqual(sum(v for k, v in worst["causes"].items() if k.endswith("_ns")),
                         worst["batch_wait_ns"])
        calm = [q for q in pts if q["waiting_ns"] > 0.5e9 and not
                slow_from - 1.5e9 < (q["start_ns"] + q["end_ns"]) / 2 < slow_to + 1.5e9]
        self.assertGreaterEqual(len(calm), 2, pts)
        for q in calm:
            self.assertLess(q["causes"]["preprocessing_ns"], q["batches"] * 2e6, q)
            self.assertLess(q["batch_wait_ns"], worst["batch_wait_ns"], q)
        text = self.summary(text=True)
        self.assertIn("    worst      ", text)
        self.assertIn("mostly preprocessing (of %d points of " % len(pts), text)
        # Python has the same whole run (computed by the reader library) in
        # dlprof.summary, first as in dlprof-dump's, and its points as rows.
        r = self.python(
            "import dlprof, json, sys; s = dlprof.summary(sys.argv[1]); "
            "p = dlprof.read_whole_run_points(sys.argv[1]); "
            "print(json.dumps([next(iter(s)), s['whole_run'], len(p), "
            "int(p.preprocessing_ns.sum()), int(p.waiting_ns.sum())]))")
        first, whole, rows, preprocessing, waiting = json.loads(r)
        self.assertEqual(first, "whole_run")
        self.assertEqual(whole, w)
        self.assertEqual(rows, len(pts))
        self.assertEqual(preprocessing, sum(q["causes"]["preprocessing_ns"] for q in pts))
        self.assertEqual(waiting, sum(q["waiting_ns"] for q in pts))

    def test_dlprof_keep_on_a_running_job(self):
        p = self.start(6, 4000, {"DLPROF_KEEP": "1s"})
        time.sleep(2.5)
        dltest.wait_until(lambda: os.listdir(self.traces), 30, "no run directory")
        runs = os.listdir(self.traces)
        self.assertEqual(len(runs), 1, runs)
        asked = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        r = subprocess.run([dltest.LAUNCHER, "keep", os.path.join(self.traces, runs[0])],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        done = self.finish(p)
        _, w = self.whole_run()
        asks = [k for k in w["kept"] if k["reason"] == "dlprof keep"]
        self.assertEqual(len(asks), 1, w["kept"])
        # Noticed within a second.
        self.assertLess(asks[0]["from_ns"] + 10**9 - asked, 10**9)
        # Its window's reads kept, 2 s before the end: every read from
        # before the window's start (its segments are kept whole) to its
        # end, one after the other (a read's place in the sequence is its
        # offset), whatever rate the loop managed.
        t = self.kept_reads()
        seq = sorted((e["ts"], e["offset"] // BLOCK) for e in t.events)
        self.assertLessEqual(seq[0][0], asks[0]["from_ns"], (seq[0], asks))
        window = [n for ts, n in seq if ts <= asks[0]["to_ns"]]
        self.assertEqual(window, list(range(window[0], window[0] + len(window))))
        self.assertGreater(len(window), 100)

    def run_stall(self, keep, reads, mode="stall"):
        """The fake CUDA program's "stall" mode (tests/gpu/fake_cupti/
        fake_cuda_app.c): a forked loader worker blocks in `reads` reads of
        a FIFO while the GPU idles (each read ends 30 ms after a 2 us
        kernel). Its I/O calls as the two processes timed them, and the GPU
        process's data stall records (docs/FORMAT_BOUNDED.md, record 8:
        from, length, io, stall), which follow one another."""
        if not dltest.HAS_FAKE_CUDA:
            self.skipTest("the CUPTI plugin and the fake libcupti are not built")
        fifo = os.path.join(self.data, "batches")
        os.mkfifo(fifo)
        env = {"DLPROF_KEEP": keep, "DLPROF_FLUSH_MS": "20", "FAKE_STALL_READS": str(reads)}
        r = self.run_traced([dltest.FAKE_CUDA_APP, dltest.CUPTI_PLUGIN, fifo, mode],
                            dltest.fake_cuda_env(env), timeout=60)
        self.assertIn("WORKER 0", r.stdout)
        calls = sorted(tuple(int(x) for x in line.split()[1:])
                       for line in r.stdout.splitlines() if line.startswith("IO "))
        self.assertEqual(len(calls), 2 + 2 * reads)  # the opens, the reads, the writes
        stalls = [self.varints(p) for t, p in self.counters_records() if t == 8]
        self.assertTrue(stalls, "no data stall record")
        for before, after in zip(stalls, stalls[1:]):
            self.assertEqual(after[0], before[0] + before[1], "stretches follow one another")
        return calls, stalls

    @staticmethod
    def union_within(spans, a, b):
        """The time in [a, b) inside some of `spans` (sorted by start)."""
        ns, at = 0, a
        for s, e in spans:
            s, e = max(s, at), min(e, b)
            if e > s:
                ns += e - s
                at = e
        return ns

    def assert_stall_is_the_calls(self, calls, stalls):
        """The records' stall against the calls as the program timed them:
        never more (but for each call's 2 bins of 2 us), and less by what
        the program's clock saw around its calls (a preemption between its
        clock and the call, on a loaded machine)."""
        start, end = stalls[0][0], stalls[-1][0] + stalls[-1][1]
        truth = self.union_within(calls, start, end)
        # The rank measured from well before the worker's reads (300 ms;
        # a flusher pass each 20 ms): most of them are in the stretches.
        self.assertGreater(truth, 10 * 30e6, (start, calls[:3]))
        io, stall = sum(s[2] for s in stalls), sum(s[3] for s in stalls)
        self.assertLessEqual(stall, io)
        self.assertLessEqual(io, truth + 1e6)
        self.assertGreater(stall, 0.8 * truth)
        return stall

    def test_a_gpu_process_measures_its_workers_data_stall(self):
        """One record (the run is within an interval: written at its end):
        the calls' union in its stretch, as the full events hold them, to
        the bins; the program's own timing bounds it; the whole run's data
        stall is the record's, and the full events' data stall of the same
        run (kept whole) is that and the I/O before the record's stretch."""
        calls, stalls = self.run_stall("5s", 20)
        stall = self.assert_stall_is_the_calls(calls, stalls)
        t = self.decode(keep=lambda e: e["cat"] in ("posix", "stdio") and not e.get("nested"))
        traced = sorted((e["ts"], e["ts"] + e["dur"]) for e in t.events)
        self.assertEqual(len(traced), 2 + 2 + 2 * 20)  # the closes too
        start, end = stalls[0][0], stalls[-1][0] + stalls[-1][1]
        # 2 bins of 2 us a call at most; the kernels' 2 us.
        self.assertAlmostEqual(stalls[0][2], self.union_within(traced, start, end), delta=200e3)
        self.assertAlmostEqual(stall, self.union_within(traced, start, end), delta=300e3)
        summary, w = self.whole_run()
        self.assertEqual(w["data_stall_ns"], stall)
        self.assertEqual(w["verdict"]["data_stall"]["ns"], stall)
        self.assertAlmostEqual(summary["gpu"]["data_stall_ns"],
                               stall + self.union_within(traced, 0, start), delta=300e3)

    def test_a_worker_started_by_exec_is_in_the_data_stall(self):
        """The worker started by exec, as multiprocessing's spawn and
        forkserver start one: it marks the map its GPU process hands it in
        /dev/shm (rank_io_map.h), which is gone when the run is over."""
        before = set(glob.glob("/dev/shm/dlprof-io-*"))
        calls, stalls = self.run_stall("5s", 20, mode="stall-exec")
        stall = self.assert_stall_is_the_calls(calls, stalls)
        t = self.decode(keep=lambda e: e["cat"] in ("posix", "stdio") and not e.get("nested"))
        # Two processes, the worker's image this program's again.
        self.assertEqual(len({e["pid"] for e in t.events}), 2)
        start, end = stalls[0][0], stalls[-1][0] + stalls[-1][1]
        traced = sorted((e["ts"], e["ts"] + e["dur"]) for e in t.events)
        self.assertAlmostEqual(stall, self.union_within(traced, start, end), delta=300e3)
        self.assertEqual(set(glob.glob("/dev/shm/dlprof-io-*")) - before, set())

    def test_the_data_stall_is_measured_an_interval_late(self):
        """Intervals of 1 s and a run of over 2 s: the stretch up to the
        second interval's start is measured at its end, while the worker
        still reads, the rest at the end; together they hold the calls."""
        calls, stalls = self.run_stall("1s", 60)
        self.assertGreaterEqual(len(stalls), 2)
        stall = self.assert_stall_is_the_calls(calls, stalls)
        _, w = self.whole_run()
        self.assertEqual(w["data_stall_ns"], stall)

    def test_several_processes_read_as_one_job(self):
        p = self.start(4, 2000, {"DLPROF_KEEP": "1s"}, procs=3)
        done = self.finish(p, procs=3)
        self.assertEqual(len(done), 3)
        _, w = self.whole_run()
        self.assertEqual(w["processes"], 3)
        self.assertEqual(w["classes"]["data"]["reads"], sum(done.values()))
        t = self.kept_reads()
        self.assertEqual(t.dump_rc, 0, t.dump_stderr)
        self.assertEqual({e["pid"] for e in t.events}, set(done))

    def test_ranks_read_as_one_job_and_apart(self):
        """Two ranks of one run (RANK 0 and 1, one DLPROF_RUN_ID), rank 1's
        data slow (each batch sleeps 5 ms more in its wait, of the 10 ms a
        batch takes): the whole run per rank from the counters, rank 1's
        sleep its preprocessing; the loop is the ranks' summed, and the
        verdict names rank 1."""
        ranks = []
        for rank, slow in ((0, None), (1, (0, 100, 5))):
            env = {"DLPROF_KEEP": "1s", "RANK": str(rank), "DLPROF_RUN_ID": "two-ranks"}
            ranks.append(self.start(3, 2000, env, slow=slow))
        reads = [self.finish(p) for p in ranks]
        _, w = self.whole_run()
        by_rank = {r["rank"]: r for r in w["ranks"]}
        self.assertEqual(sorted(by_rank), [0, 1])
        for rank, done in enumerate(reads):
            (n,) = done.values()
            r = by_rank[rank]
            self.assertEqual(r["processes"], 1)
            self.assertEqual(r["io"]["reads"], n)
            self.assertEqual(r["batches"], n // 20)
            self.assertEqual(sum(r["causes"][p + "_ns"] for p in
                                 ("reading", "preprocessing", "handover", "worker_startup")),
                             r["batch_wait_ns"])
        self.assertEqual(sum(r["batch_wait_ns"] for r in w["ranks"]), w["batch_wait_ns"])
        slow = by_rank[1]
        self.assertGreaterEqual(slow["causes"]["preprocessing_ns"], slow["batches"] * 5 * 10**6)
        self.assertLess(by_rank[0]["causes"]["preprocessing_ns"],
                        slow["causes"]["preprocessing_ns"])
        # Each rank's loop ran 3 s by its own clock: the job's loop is 6 s
        # (not the 3 s from the first rank's start to the last one's end),
        # and rank 1's 5 ms a batch is a quarter of it.
        self.assertEqual(w["loop_ns"], sum(r["loop_ns"] for r in w["ranks"]))
        self.assertLess(abs(w["loop_ns"] - 6 * 10**9), 0.3 * 10**9, w["loop_ns"])
        v = w["verdict"]
        self.assertEqual(v["loop_ns"], w["loop_ns"])
        self.assertEqual(v["batch_wait"]["loop_ns"], w["loop_ns"])
        self.assertEqual(v["bound"], "data", v)
        self.assertGreaterEqual(v["batch_wait"]["ns"], slow["batches"] * 5 * 10**6)
        slow_rank = [f for f in v["findings"] if f["rule"] == "slow_rank"]
        self.assertEqual(len(slow_rank), 1, v["findings"])
        self.assertTrue(slow_rank[0]["what"].startswith("Rank 1 waited "), slow_rank)
        text = self.summary(text=True)
        self.assertIn("  ranks        2 with batch waits, the most waiting first:\n"
                      "    rank 1     batch wait", text)
        self.assertIn("  verdict      the training loop waited for data ", text)
        self.assertIn("  findings     the whole run's (most costly first):\n    1. ", text)

    def test_bad_values_are_named(self):
        p = self.run_traced([dltest.program("keep_loop"), self.file, "0.2", "1000"],
                            env={"DLPROF_KEEP": "5 parsecs", "DLPROF_KEEP_WHEN": "io>3"},
                            quiet=False)
        self.assertIn("DLPROF_KEEP='5 parsecs'", p.stderr)
        self.assertIn("DLPROF_KEEP_WHEN='io>3'", p.stderr)
        # Without DLPROF_KEEP the trace is a plain one: no counters, no segments.
        names = [n for _, _, ns in os.walk(self.traces) for n in ns]
        self.assertFalse([n for n in names if n.endswith(".dlcount")], names)
        for f in dltest.trace_files(self.traces):
            self.assertEqual(dltest.read_header(f)["flags"] & (1 << 3), 0, f)  # no segment
        self.assertFalse([n for n in names if ".k" in n], names)
        self.assertNotIn("whole_run", self.summary())


if __name__ == "__main__":
    dltest.main()
