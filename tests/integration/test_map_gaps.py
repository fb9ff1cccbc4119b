"""Page faults the tracer could miss, found or said (programs/map_gaps.c).

A Megatron blend maps two files per shard and a Hugging Face data set one
per Arrow file: thousands of maps, past the 8192 the tracer's table of
mappings once held, and the faults on the rest were lost without a word.
Each test counts the program's own major faults (getrusage) against the
trace's major_fault events, exactly. The kernel's locked memory for fault
buffers (kernel.perf_event_mlock_kb per CPU, RLIMIT_MEMLOCK beyond it for a
user without CAP_IPC_LOCK) was spent by idle threads, and a thread that
read through the map then had none: it must take an idle thread's buffer,
and a thread left without one must be named in the trace (a
faults_unwatched record), on the program's stderr and by dlprof-dump.
"""

import os
import shutil

import dltest

NOBODY = 65534
PAGE = 4096


def fields(stdout, tag):
    return [dltest.parse_fields(l.replace(tag + " ", "EV\t", 1).replace(" ", "\t"))
            for l in stdout.splitlines() if l.startswith(tag + " ")]


class MapGapsTest(dltest.TraceTestCase):

    def make_file(self, pages):
        path = os.path.join(self.data, "shards.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(pages * PAGE))
        return path

    def require_fault_events(self):
        files = dltest.trace_files(self.traces)
        modes = {dltest.read_header_strings(f)["faults"].split(";")[0] for f in files}
        if "events" not in modes:
            self.skipTest("no perf_event_open fault events here: %s" % modes)

    def faults(self, trace, path, tid=None):
        return [e for e in trace.events if e["name"] == "major_fault" and e.get("path") == path
                and (tid is None or e["tid"] == tid)]

    def check_maps(self, mode, n, pieces):
        path = self.make_file(4 * n)
        p = self.run_traced([dltest.program("map_gaps"), mode, path, str(n)], timeout=240)
        self.require_fault_events()
        (line,) = fields(p.stdout, "MAPS")
        trace, dropped = self.decode_counting_drops()
        faults = self.faults(trace, path)
        # Every touched page faulted once (the program's own count), and
        # each was recorded, at its page -- or, on a machine so loaded that
        # the kernel's buffer overflowed (1 run in 8 at load 10 on 2 cores),
        # counted as dropped.
        self.assertEqual(line["major"], n * pieces, line)
        want = sorted(4 * i * PAGE + k * 2 * PAGE for i in range(n) for k in range(pieces))
        offsets = sorted(e["offset"] for e in faults)
        if dropped == 0:
            self.assertEqual(offsets, want)
        else:
            self.assertLessEqual(set(offsets), set(want))
            self.assertEqual(len(set(offsets)), len(offsets))  # none twice
            self.assertGreaterEqual(len(offsets) + dropped, len(want))
            self.assertLess(dropped, len(want) // 4, "most of the faults lost")
        self.assertNotIn("map table", p.stderr)

    def test_ten_thousand_maps(self):
        # 10,000 live maps: 8,192 faults recorded before (1,808 lost, unsaid).
        self.check_maps("maps", 10000, 1)

    def test_split_maps(self):
        # 6,000 maps split in two by munmap of their middle page: 12,000
        # pieces, each of whose first page is touched.
        self.check_maps("split", 6000, 2)

    def nobody(self):
        """The command prefix that runs a program as another user (the
        kernel's locked-memory allowance is per user: root's other
        processes, other tests among them, do not share it)."""
        if os.geteuid() != 0:
            self.skipTest("needs root, to run the program as another user")
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            self.skipTest("no setpriv")
        os.chmod(self.tmp, 0o755)
        os.chmod(self.data, 0o755)
        os.makedirs(self.traces, exist_ok=True)
        os.chmod(self.traces, 0o777)
        # The tracer starts as that user (in setpriv, root's, it would make
        # the run's directory the other user cannot write in).
        return [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
                "env", "LD_PRELOAD=" + dltest.LIB]

    def buffers_allowed(self):
        """The fault buffers the kernel allows a user with no RLIMIT_MEMLOCK:
        perf_event_mlock_kb per CPU, 17 pages (68 KiB) each."""
        with open("/proc/sys/kernel/perf_event_mlock_kb") as f:
            kb = int(f.read())
        return kb * os.cpu_count() // (17 * PAGE // 1024)

    def run_nobody(self, mode, n, touches):
        prefix = self.nobody()
        path = self.make_file(8192)
        os.chmod(path, 0o644)
        # (Not quiet: its note on stderr is looked for.)
        p = self.run_traced(prefix + [dltest.program("map_gaps"), mode, path, str(n),
                                      str(touches)], timeout=240, preload=False, quiet=False)
        self.require_fault_events()
        return path, p, fields(p.stdout, "READER")

    def test_reader_takes_an_idle_threads_buffer(self):
        # More idle threads than buffers allowed, started before the map:
        # each was given one in case it read, and the reader, started
        # after, had none (0 of 300 faults recorded before).
        allowed = self.buffers_allowed()
        if allowed > 2000:
            self.skipTest("%d buffers allowed: too many threads to start" % allowed)
        path, p, readers = self.run_nobody("idle", allowed + 16, 300)
        (r,) = readers
        self.assertGreater(r["major"], 250, r)
        trace = self.decode(clean=False)
        self.assertEqual(len(self.faults(trace, path, r["tid"])), r["major"], p.stderr)
        # The idle threads left unwatched are said, as such.
        self.assertNotIn("reading through a map", p.stderr)
        warned = [m for m in trace.messages() if "refused page-fault buffers" in m]
        self.assertTrue(warned, trace.messages())
        self.assertIn(" 0 threads reading through maps", warned[0])

    def test_reader_refused_is_said(self):
        # More threads reading through the map than buffers allowed, none
        # idle: those refused are named in the trace, and said.
        allowed = self.buffers_allowed()
        if allowed > 2000:
            self.skipTest("%d buffers allowed: too many threads to start" % allowed)
        path, p, readers = self.run_nobody("readers", allowed + 8, 4)
        trace = self.decode(clean=False)
        unwatched = {e["tid"]: e for e in trace.events if e["name"] == "faults_unwatched"}
        missed = 0
        for r in readers:
            self.assertEqual(r["major"], 4, r)
            got = len(self.faults(trace, path, r["tid"]))
            if r["tid"] in unwatched:
                self.assertEqual(unwatched[r["tid"]]["size"], 1)  # known to read
                self.assertEqual(got, 0, r)
                missed += 1
            else:
                self.assertEqual(got, r["major"], r)
        self.assertGreaterEqual(missed, 1)
        self.assertIn("refused a page-fault buffer to a thread reading through a map", p.stderr)
        warned = [m for m in trace.messages() if "refused page-fault buffers" in m]
        self.assertTrue(warned, trace.messages())
        self.assertIn(" %d threads reading through maps" % missed, warned[0])


if __name__ == "__main__":
    dltest.main()
