"""Bounded traces (DLPROF_KEEP) over a whole run whose processes come and go,
and what the outputs say about the stretch they show.

programs/keep_epochs.c forks its workers anew each epoch (a DataLoader
without persistent_workers): each makes a known number of preads and exits,
and the parent prints what they did (counted in shared memory, untraced)
and its first epoch's start and last epoch's end on the tracer's clock.
Each process's own bound never deletes anything of a worker that lives
less than a segment; the run's bound (lib/core/trace_segments_run.h) must.
"""

import json
import os
import re
import shutil
import subprocess
import time

import dltest

BLOCK = 4096
DURATION_NS = 1_000_000_000


class KeepRunCase(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.file = os.path.join(self.data, "data.bin")
        with open(self.file, "wb") as f:
            f.write(os.urandom(256 * BLOCK))

    def run_epochs(self, epochs, workers, reads, gap_us, keep="1s"):
        p = self.run_traced([dltest.program("keep_epochs"), self.file, str(epochs),
                             str(workers), str(reads), str(gap_us)],
                            env={"DLPROF_KEEP": keep}, timeout=60)
        return self.parse(p.stdout)[0]

    @staticmethod
    def parse(stdout):
        """(preads, bytes, processes, start, end) and each epoch's (start, end)."""
        lines = stdout.splitlines()
        _, preads, nbytes, processes, start, end = lines[0].split()
        epochs = [tuple(int(x) for x in l.split()[2:]) for l in lines[1:]]
        return (int(preads), int(nbytes), int(processes), int(start), int(end)), epochs

    def event_files(self):
        """The segments on disk that hold events (block headers say so), and
        those that hold none."""
        full, empty = [], []
        for f in dltest.trace_files(self.traces):
            blocks = dltest.block_headers(f)
            (full if any(b["events"] for b in blocks) else empty).append(f)
        return full, empty


class KeepRunTest(KeepRunCase):

    def test_workers_forked_each_epoch_keep_the_run_last_duration(self):
        epochs, workers, reads = 20, 2, 60
        preads, nbytes, processes, start, end = self.run_epochs(epochs, workers, reads, 4000)
        self.assertEqual(preads, epochs * workers * reads)
        self.assertEqual(processes, 1 + epochs * workers)
        self.assertGreater(end - start, 4 * DURATION_NS, "the run must outlast the bound")
        t = self.decode(keep=lambda e: e["name"] == "pread")
        ts = [e["ts"] for e in t.events]
        ends = [e["ts"] + e["dur"] for e in t.events]
        # Bounded by the run: the kept reads span DURATION and at most one
        # epoch more (a worker whose events straddle the horizon stays
        # whole), not the run's 4+ s. Before the run's bound: all of it.
        span = max(ends) - min(ts)
        self.assertLess(span, DURATION_NS + 0.6e9, "kept %.2f s of a %.2f s run"
                        % (span / 1e9, (end - start) / 1e9))
        # And the last DURATION is all there: nothing deleted too soon. (The
        # last sweep's horizon is DURATION before the main process's end,
        # a moment after the last read: 5.6 ms later once in 3 runs on a
        # loaded machine. An epoch, what a sweep deletes too soon at once,
        # is 240 ms.)
        self.assertLessEqual(min(ts), max(ends) - DURATION_NS + 0.1e9)
        self.assertLess(len(t.events), preads // 2)
        # On disk: the live segments of the last second's workers, and an
        # empty end segment for each worker swept (its counters' name).
        full, empty = self.event_files()
        self.assertLessEqual(len(full), 2 * workers * 4 + 2, full)
        for f in empty:
            self.assertLess(os.path.getsize(f), 4096, f)
        # Whole-run figures: every pread the workers made, every byte.
        w = self.summary()["whole_run"]
        kinds = {k["name"]: k for k in w["kinds"]}
        self.assertEqual(kinds["pread"]["calls"], preads)
        self.assertEqual(kinds["pread"]["bytes"], nbytes)
        self.assertEqual(w["processes"], processes)
        counters = [n for _, _, ns in os.walk(self.traces) for n in ns
                    if n.endswith(".dlcount")]
        self.assertEqual(len(counters), processes)

    def test_dlprof_keep_keeps_the_ended_workers_in_its_window(self):
        """A worker lives 0.3 s, less than the half second between its
        flusher's looks at the request: the main process keeps the window,
        and the workers' events in it, which they never kept themselves,
        stay once they end."""
        workers, reads = 2, 60
        p = subprocess.Popen([dltest.program("keep_epochs"), self.file, "24", str(workers),
                              str(reads), "4000"],
                             env=self.traced_env(self.traces, {"DLPROF_KEEP": "1s"}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        dltest.wait_until(lambda: os.path.isdir(self.traces) and os.listdir(self.traces), 30,
                          "no run directory")
        time.sleep(1.5)
        run_dir = os.path.join(self.traces, os.listdir(self.traces)[0])
        r = subprocess.run([dltest.LAUNCHER, "keep", run_dir], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        (preads, _, _, _, end), epochs = self.parse(out)
        asks = [k for k in self.summary()["whole_run"]["kept"]
                if k["reason"] == "dlprof keep" and k["pid"] == p.pid]
        self.assertEqual(len(asks), 1, asks)
        window = (asks[0]["from_ns"], asks[0]["to_ns"])
        self.assertLess(window[1], end - DURATION_NS, "the window must be past by the end")
        t = self.decode(keep=lambda e: e["name"] == "pread")
        inside = [e for e in epochs if window[0] <= e[0] and e[1] <= window[1]]
        self.assertGreaterEqual(len(inside), 3, (window, epochs))
        # Every read of every epoch inside the window, on the program's clock.
        for first, last in inside:
            kept = [e for e in t.events if first <= e["ts"] <= last]
            self.assertEqual(len(kept), workers * reads, (first, last))
        # And the run is still bounded around it: most reads are gone.
        self.assertLess(len(t.events), preads * 0.75)


class SweepCostTest(KeepRunCase):
    """What a process's end costs beside the run's ended processes: it
    must not grow with how many ended before (a run forking 4 workers an
    epoch for 500 epochs spent 0.04-0.27 s, 28,500 system calls, at each
    exec'd process's end beside its 2,000 ended workers, reading each one's
    files again). Counted in system calls on their files, not in time."""

    def touched(self, run_id, stems, name):
        """The system calls that the end of a process of run `run_id`
        (keep_epochs with no epoch) made on the files of `stems`."""
        log = os.path.join(self.tmp, name)
        env = self.traced_env(self.traces, {"DLPROF_KEEP": "1s", "DLPROF_RUN_ID": run_id})
        preload = env.pop("LD_PRELOAD")
        r = subprocess.run(["strace", "-f", "-qq", "-o", log, "-E", "LD_PRELOAD=" + preload,
                            dltest.program("keep_epochs"), self.file, "0", "0", "0", "0"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(log) as f:
            return [l for l in f if any(s in l for s in stems)]

    def test_an_end_reads_no_file_of_the_processes_settled_before(self):
        if shutil.which("strace") is None:
            self.skipTest("strace is not installed")
        epochs, workers = 30, 2
        _, _, processes, _, _ = self.run_epochs(epochs, workers, 20, 4000)
        (run_id,) = os.listdir(self.traces)
        (host,) = os.listdir(os.path.join(self.traces, run_id))
        host_dir = os.path.join(self.traces, run_id, host)
        stems = [n[:-len(".dlcount")] for n in os.listdir(host_dir) if n.endswith(".dlcount")]
        self.assertEqual(len(stems), processes)
        # Past DURATION (and a flusher's tick): every worker's events lie
        # before the horizon of a process that ends now.
        time.sleep(1.5)
        # The first to end deletes what is left of the last second's
        # workers (the main process's last sweep was before their horizon)...
        self.assertTrue(self.touched(run_id, stems, "first"))
        # ... and then every ended process is settled: the next end does
        # not look at them again (before: it opened each one's end segment).
        calls = self.touched(run_id, stems, "second")
        self.assertEqual(calls, [], "%d calls on %d settled processes' files"
                         % (len(calls), len(stems)))
        # What is left of each: its counters and one empty end segment.
        for stem in stems:
            files = [n for n in os.listdir(host_dir) if n.startswith(stem + ".")]
            self.assertEqual(len(files), 2, files)
            segment = [n for n in files if n.endswith(".dlprof")]
            self.assertEqual(len(segment), 1, files)
            self.assertFalse(any(b["events"] for b in dltest.block_headers(
                os.path.join(host_dir, segment[0]))), segment)
        # And readers still find every process's counters.
        self.assertEqual(self.summary()["whole_run"]["processes"], processes + 2)


class BoundedNoteTest(KeepRunCase):
    """What the event outputs and the summary say of the stretch they show."""

    def dump(self, *args):
        r = dltest.run([dltest.DUMP] + list(args) + [self.traces], dltest.base_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_outputs_name_the_stretch_they_show(self):
        epochs, workers = 16, 2
        _, _, processes, start, end = self.run_epochs(epochs, workers, 60, 4000)
        run_s = (end - start) / 1e9
        t = self.decode()  # (clean: the note is no problem)
        note = t.bounded_note()
        self.assertTrue(note, t.dump_stderr)
        m = re.search(r"the events cover ([\d.]+) s - ([\d.]+) s of the run", note[0])
        self.assertTrue(m, note[0])
        first, last = float(m.group(1)), float(m.group(2))
        # It ends at the run's end on the program's own clock (the tracer
        # starts a moment before main: up to 0.5 s; the parent prints after
        # its END), and spans what the events shown span: the last DURATION
        # at least, not the whole run.
        self.assertGreaterEqual(last, run_s - 0.1, note)
        self.assertLessEqual(last, run_s + 0.5, note)
        shown = (max(e["ts"] + e["dur"] for e in t.events)
                 - min(e["ts"] for e in t.events)) / 1e9
        self.assertAlmostEqual(last - first, shown, delta=0.011)
        self.assertGreaterEqual(last - first, DURATION_NS / 1e9 - 0.01, note)
        self.assertLess(last - first, run_s - 0.5, note)
        # Each process's stretch, and the ended processes with counters alone.
        pids = {e["pid"] for e in t.events}
        rows = [l for l in note[1:] if re.match(r"  pid \d+ on ", l)]
        more = [int(x) for l in note[1:] for x in re.findall(r"\(and (\d+) more", l)]
        self.assertEqual(len(rows) + sum(more), len(pids), note)
        ended = [int(x) for l in note[1:] for x in re.findall(r"(\d+) ended process", l)]
        self.assertEqual(ended, [processes - len(pids)], note)
        # The same line for text and Chrome, and in the Chrome JSON.
        for fmt in ("text", "chrome"):
            r = self.dump("--format", fmt)
            self.assertEqual(r.stderr.splitlines()[0], note[0], fmt)
        doc = json.loads(self.dump("--format", "chrome").stdout)
        # (all of it: the line says "each process's below")
        self.assertEqual(doc["otherData"]["dlprof_bounded_trace"],
                         "\n".join(note)[len("dlprof-dump: note: "):])
        # The summary names the stretch with its kept length.
        text = self.summary(text=True)
        kept = re.search(r"Kept windows .*: [\d.]+ \w+ of the run, ([\d.]+) s - ([\d.]+) s",
                         text)
        self.assertTrue(kept, text)
        self.assertAlmostEqual(float(kept.group(1)), first, delta=0.06)
        self.assertAlmostEqual(float(kept.group(2)), last, delta=0.06)
        # A run without DLPROF_KEEP: no note.
        plain = os.path.join(self.tmp, "plain")
        self.run_traced([dltest.program("keep_epochs"), self.file, "1", "1", "5", "0"],
                        trace_dir=plain)
        r = dltest.run([dltest.DUMP, plain], dltest.base_env())
        self.assertEqual(r.stderr, "")


if __name__ == "__main__":
    dltest.main()
