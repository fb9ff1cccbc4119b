"""Bounded traces (DLPROF_KEEP) whose disk fills up for a while, and whose
counters go missing.

programs/keep_loop.c reads a file in batches of 20 preads (each in a
"load_batch" region, an "optimizer_step" region pacing it), prints "DONE
PID READS START" and waits for a line on stdin. A disk full for a while
(a small tmpfs, filled up, then freed: where mounting is allowed) loses
the trace blocks of that while, never the whole run's counts: every pread
and batch the program counted itself is in the counters, the loss is said
(how many events, when), and the trace goes on after it, its process
ending cleanly. A bounded trace whose counters file is missing, empty or
cut short says so before figures that then cover the kept events alone.
"""

import os
import re
import shutil
import subprocess
import threading
import time

import dltest

BLOCK = 4096


class KeepFullDiskTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.file = os.path.join(self.data, "data.bin")
        with open(self.file, "wb") as f:
            f.truncate(1 << 30)  # sparse: offsets tell the reads apart

    def start(self, trace_dir, seconds, rate, env):
        return subprocess.Popen(
            [dltest.program("keep_loop"), self.file, str(seconds), str(rate)],
            env=self.traced_env(trace_dir, env, quiet=False), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, p):
        """The process's pid, its reads, the tracer's lines on stderr and
        its loop's start (its clock, ns)."""
        line = dltest.read_line(p.stdout, timeout=120)
        _, pid, reads, start = line.split()
        p.stdin.write("\n")
        p.stdin.close()
        err = p.stderr.read()
        p.stdout.close()
        p.stderr.close()
        self.assertEqual(p.wait(timeout=60), 0, err)
        return int(pid), int(reads), err, int(start)

    def small_tmpfs(self, kib):
        mnt = os.path.join(self.tmp, "small")
        os.mkdir(mnt)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % kib, "tmpfs", mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            self.skipTest("cannot mount a tmpfs here: " + r.stdout.strip())
        self.addCleanup(subprocess.run, ["umount", "-l", mnt])
        return mnt

    @staticmethod
    def fill(mnt):
        """Fills `mnt` to its last byte; the filler's path."""
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        return filler

    def test_full_disk_for_a_while_loses_blocks_not_counts(self):
        mnt = self.small_tmpfs(2048)
        traces = os.path.join(mnt, "traces")
        p = self.start(traces, 7, 4000, {"DLPROF_KEEP": "2s"})
        # Full from about 1 s to 3.5 s of the loop: past a segment's span
        # (DURATION / 4, at least 1 s), so a rotation falls in it too.
        def full_for_a_while():
            time.sleep(1)
            filler = self.fill(mnt)
            time.sleep(2.5)
            os.unlink(filler)
        t = threading.Thread(target=full_for_a_while)
        t.start()
        pid, reads, err, _ = self.finish(p)
        t.join()
        lines = [l for l in err.splitlines() if l.startswith("dlprof:")]
        self.assertTrue(any("No space left on device; its events are lost until there is room"
                            in l for l in lines), lines)
        self.assertTrue(any("trace writing resumes in" in l for l in lines), lines)
        self.assertFalse(any("tracing stops here" in l for l in lines), lines)
        # The whole run: every read and batch the program made, exactly.
        s = self.summary(traces)
        w = s["whole_run"]
        preads = [k for k in w["kinds"] if k["name"] == "pread"]
        self.assertEqual(preads[0]["calls"], reads)
        self.assertEqual(w["classes"]["data"]["reads"], reads)
        self.assertEqual(w["batches"], reads // 20)
        # The loss is said: how many events, when (seconds of the run, inside it).
        lost = [m for m in w["messages"] if "lost to \"No space left on device\"" in m]
        self.assertEqual(len(lost), 1, w["messages"])
        self.assertIn("pid %d " % pid, lost[0])
        m = re.search(r": (\d+) events \((\d+) blocks\) .* between ([0-9.]+) s and ([0-9.]+) s "
                      r"of the run", lost[0])
        self.assertTrue(m, lost[0])
        events = int(m.group(1))
        # Inside the loop's 7 s, from about its first second (the disk was
        # filled then; the first block lost holds the flusher's last
        # DLPROF_FLUSH_MS before it).
        self.assertGreaterEqual(float(m.group(3)), 0.5)
        self.assertLessEqual(float(m.group(4)), 7.5)
        print(lost[0])
        self.assertGreater(events, 0)
        text = self.summary(traces, text=True)
        self.assertIn(lost[0], text)
        # The trace went on after the disk had room again, and ended
        # cleanly: the last DURATION's reads are kept, the last one among them.
        t = self.decode(traces, keep=lambda e: e.get("name") == "pread")
        offsets = {e["offset"] // BLOCK for e in t.events}
        self.assertIn((reads - 1) % ((1 << 30) // BLOCK), offsets)
        print("RESULT keep_full_disk reads=%d lost_events=%d kept_reads=%d"
              % (reads, events, len(t.events)))

    def test_disk_its_first_segment_fills_frees_it_past_duration(self):
        """The first segment fills the disk itself: past DURATION, it makes room."""
        # DURATION 1 s: a segment lasts 1 s. The disk is filled up for good
        # once the first segment holds 32 KiB (a fraction of its second), so
        # that segment fills it, with no other to delete.
        seconds, keep_s = 7, 1
        start, t = self.fill_for_good_at(32768, seconds, keep_s)
        # The kept reads are of the run's last seconds, not its first: the
        # first segment went once all its events were past DURATION (before:
        # the kept reads ended where the disk filled, 0.3 s into the loop).
        # Against the loop's own clock: within DURATION and a fill of its end
        # (the disk holds less than DURATION here), with a second to spare.
        self.assertTrue(t.events)
        newest = max(e["ts"] for e in t.events)
        end = start + seconds * 10 ** 9
        self.assertGreater(newest, end - (keep_s + 1.5) * 10 ** 9)
        self.assertLessEqual(newest, end + 10 ** 9)

    def test_disk_its_small_first_segment_fills_resumes(self):
        """The same, filled once the first segment holds its first block: the
        room its cut frees may be less than the block the disk refused. The
        next segment is begun without that room (before: never, and no
        event was kept past the fill; 1 run in 3 here). It keeps the blocks
        that fit: under load, a pass's block may not (none kept, once in
        the suite), so what it keeps is only checked to be of the last
        seconds."""
        seconds, keep_s = 7, 1
        start, t = self.fill_for_good_at(1, seconds, keep_s)
        if t.events:
            self.assertGreater(min(e["ts"] for e in t.events), start + 10 ** 9)

    def fill_for_good_at(self, segment_bytes, seconds, keep_s):
        """keep_loop.c at 20,000 reads a second for `seconds`, DLPROF_KEEP
        `keep_s`, its disk filled for good once the first segment holds
        `segment_bytes` and a block: the trace resumes, the whole run's
        counts are exact. The loop's start (its clock) and the kept reads."""
        mnt = self.small_tmpfs(2048)
        traces = os.path.join(mnt, "traces")
        p = self.start(traces, seconds, 20000, {"DLPROF_KEEP": "%ds" % keep_s})
        deadline = time.time() + 30
        header = None
        while time.time() < deadline:
            segs = [os.path.join(d, f) for d, _, fs in os.walk(traces) for f in fs
                    if f.endswith(".dlprof")]
            size = os.path.getsize(segs[0]) if segs else 0
            header = size if header is None and size > 0 else header
            if segs and size >= segment_bytes and size > header:
                break
            time.sleep(0.001)
        self.fill(mnt)
        _, reads, err, start = self.finish(p)
        lines = [l for l in err.splitlines() if l.startswith("dlprof:")]
        full = [l for l in lines if "No space left on device; its events are lost" in l]
        self.assertTrue(full, lines)
        # The case: the disk refused the first segment's own block, no .kN yet.
        self.assertRegex(full[0], r"cannot write trace \S+-[0-9a-f]+\.dlprof: ")
        self.assertTrue(any("trace writing resumes in" in l for l in lines), lines)
        self.assertFalse(any("tracing stops here" in l for l in lines), lines)
        # The whole run's counts: every read the program made.
        w = self.summary(traces)["whole_run"]
        preads = [k for k in w["kinds"] if k["name"] == "pread"]
        self.assertEqual(preads[0]["calls"], reads)
        lost = [m for m in w["messages"] if "lost to \"No space left on device\"" in m]
        self.assertTrue(lost, w["messages"])
        t = self.decode(traces, clean=False, keep=lambda e: e.get("name") == "pread")
        kept = [e["ts"] for e in t.events] or [start]
        print("RESULT keep_first_segment_full at=%d reads=%d kept=%d kept_from=%.2f s "
              "kept_to=%.2f s loop_end=%.2f s" % (segment_bytes, reads, len(t.events),
                                                  (min(kept) - start) / 1e9,
                                                  (max(kept) - start) / 1e9, seconds))
        return start, t

    def test_missing_counters_are_said(self):
        p = self.start(self.traces, 1.5, 2000, {"DLPROF_KEEP": "1s"})
        self.finish(p)
        (counters,) = [os.path.join(d, f) for d, _, fs in os.walk(self.traces) for f in fs
                       if f.endswith(".dlcount")]
        for how in ("missing", "empty", "cut at 300 bytes"):
            copy = os.path.join(self.tmp, how.replace(" ", "_"))
            shutil.copytree(self.traces, copy)
            path = copy + counters[len(self.traces):]
            if how == "missing":
                os.unlink(path)
            else:
                os.truncate(path, 0 if how == "empty" else 300)
            text = self.summary(copy, text=True)
            self.assertIn("a bounded trace (DLPROF_KEEP) whose counters files are missing or "
                          "unreadable", text, how)
            # Said first, before any figure of the kept events.
            self.assertLess(text.index("counters files are missing"),
                            text.index("dlprof verdict"), how)
            w = self.summary(copy)["whole_run"]
            self.assertFalse(w["present"], how)
            self.assertTrue(any("counters files are missing or unreadable" in m
                                for m in w["messages"]), (how, w["messages"]))


if __name__ == "__main__":
    dltest.main()
