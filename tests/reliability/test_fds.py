"""Programs that sweep the descriptor table, close every descriptor or take
the tracer's, and what a program sees of its own descriptors.

- programs/close_fds.c (tests/integration) closes every fd from 3 up (a
  close() loop to 1024, close_range, closefrom, or the fds listed in
  /proc/self/fd), or dup2()s one file onto every fd number up to 1023 -- or
  up to a lowered RLIMIT_NOFILE, so that no number is left for the tracer --
  and then does I/O.
- programs/fdsweep.c closes every descriptor or takes the tracer's;
  programs/lifecycle.c lists its own descriptors (issue 38).

Each run must print and exit exactly as without the tracer, leave its files
exactly as without the tracer (the trace file is invisible to it and never
written into its files), and tracing must go on after the sweep (the
after.dat calls are in the trace, and the trace ends cleanly). The tracer
holds no descriptor between two writes of its trace: a program lists the
same descriptors in /proc/self/fd, fstat(100) fails alike, and it can open
as many files up to its RLIMIT_NOFILE; at that limit the tracer keeps its
events until a descriptor is free.
"""

import collections
import glob
import os
import re
import subprocess
import sys

import dltest
import dltest.reliability as rtest


class FdSweepTest(rtest.RelTestCase):

    def sweep(self, mode, env=None, compare_stderr=True):
        # Untraced first, in its own directory: the files it leaves are the
        # reference for the traced run's.
        ref = os.path.join(self.tmp, "ref")
        os.mkdir(ref)
        plain = self.run_untraced([rtest.program("fdsweep"), mode, ref])
        traced = self.run_traced([rtest.program("fdsweep"), mode, self.data], env=env,
                                 expect_rc=None)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(traced.returncode, 0, traced.stderr)
        self.assertEqual(traced.stdout, plain.stdout)
        if compare_stderr:
            self.assertEqual(traced.stderr, plain.stderr)
        self.assertIn("AFTER ok=1\n", traced.stdout)
        for name in sorted(os.listdir(ref)):
            with open(os.path.join(ref, name), "rb") as a, \
                    open(os.path.join(self.data, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)
        self.assertEqual(sorted(os.listdir(ref)), sorted(os.listdir(self.data)))
        trace = self.decode()
        after = os.path.join(self.data, "after.dat")
        self.assertEqual([(e["name"], e.get("offset"), e.get("bytes")) for e in trace.on(after)],
                         [("open", None, None), ("write", 0, 4096), ("pread", 0, 4096),
                          ("close", None, None)])
        return traced, trace

    def test_close_to_the_fd_limit(self):
        out, _ = self.sweep("limit")
        self.assertIn("SWEEP limit closed=1\n", out.stdout)  # before.dat only

    def test_close_range(self):
        out, _ = self.sweep("range")
        self.assertIn("SWEEP range ret=0\n", out.stdout)

    def test_close_the_tracers_fd(self):
        out, _ = self.sweep("findclose")
        self.assertIn("SWEEP findclose ret=-1 errno=9\n", out.stdout)

    def test_dup2_onto_the_tracers_fd(self):
        out, trace = self.sweep("finddup2")
        self.assertIn("READBACK ok=1\n", out.stdout)
        dup = os.path.join(self.data, "dup.dat")
        self.assertEqual(os.path.getsize(dup), 2000)  # no trace bytes in it
        writes = [e for e in trace.on(dup) if e["name"] == "write"]
        self.assertEqual([e["offset"] for e in writes], list(range(0, 2000, 20)))

    def test_program_reuses_fd_2_for_data(self):
        # The tracer's exit line goes to fd 2: with DLPROF_QUIET=0 and fd 2
        # now the program's data file, it must not land in that file.
        self.sweep("stderr", env={"DLPROF_QUIET": "0"}, compare_stderr=False)



class CloseFdsTest(dltest.TraceTestCase):
    """programs/close_fds.c."""

    def setUp(self):
        super().setUp()
        # scripts/sanitize.sh has left these out under TSan since they were
        # integration.fds: the forking sweep (TSan's "dup thread" in the
        # child) and calls TSan's interceptors make under other names.
        rtest.skip_forks_under_tsan(self)

    def check_sweep(self, mode, env=None):
        traced, _ = self.assert_same_as_untraced(
            [dltest.program("close_fds"), mode, self.data], env=env)
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

    def test_closefrom_without_close_range(self):
        # glibc's closefrom closes each fd itself where close_range fails
        # (ENOSYS); the tracer's own closefrom left every fd open.
        out, _ = self.check_sweep("closefrom_enosys")
        self.assertIn("BEFORE_FD write=-1 errno=9", out.stdout)

    def test_close_range_paused_before_its_call(self):
        """close_range that pauses 50 us between the tracer's look for a
        descriptor of its own and the system call (shim/slow_fd_sweeps.c:
        a thread preempted there on a busy machine), while the tracer
        writes every millisecond: the flusher must not open the trace in
        that moment. (It did: the sweep closed the trace under its write,
        tracing stopped with 8,197 of 150,003 events, no end marker: 3 runs
        in 3, and once in a clean-clone CI run without the pause.)"""
        if not rtest.SLOW_FD_SWEEPS:
            self.skipTest("DLPROF_SLOW_FD_SWEEPS is not set")
        preload = " ".join(([dltest.PRELOAD_PREFIX] if dltest.PRELOAD_PREFIX else [])
                           + [dltest.LIB_PATH, rtest.SLOW_FD_SWEEPS])
        p = self.run_traced([dltest.program("close_fds"), "close_range_loop", self.data],
                            env={"DLPROF_FLUSH_MS": "1", "LD_PRELOAD": preload}, quiet=False)
        self.assertIn("CLOSE_RANGE_LOOP size=50000 failed=0", p.stdout)
        self.assertNotIn("tracing stops here", p.stderr)
        trace = self.decode()  # no note: an end marker, no rings sidecar
        writes = [e for e in trace.on(os.path.join(self.data, "victim.dat"))
                  if e["name"] == "write"]
        self.assertEqual(len(writes), 50000)

    def test_close_range_while_the_trace_is_written(self):
        """close_range(3, ~0U) 50000 times, each followed by an open and a
        one-byte write, while the tracer writes its trace every millisecond:
        every write lands, as untraced, and every event is in the trace. (The
        sweep closed the tracer's descriptor under its write, whose close
        then closed the program's file: its write failed, and tracing
        stopped.)"""
        out, trace = self.check_sweep("close_range_loop", env={"DLPROF_FLUSH_MS": "1"})
        self.assertIn("CLOSE_RANGE_LOOP size=50000 failed=0", out.stdout)
        writes = [e for e in trace.on(os.path.join(self.data, "victim.dat"))
                  if e["name"] == "write"]
        self.assertEqual(len(writes), 50000)

    def test_close_loop_while_the_trace_is_written(self):
        """A daemon's close() loop over every number from 3 to 1023, again
        and again while a thread makes 400000 preads and the tracer writes
        its trace every millisecond: the loop closes the tracer's descriptor
        under a write now and then (it cannot know the number is not the
        program's). Every pread is in the trace. (The write failed with
        EBADF and tracing stopped: 1 run in 6 lost the rest of the trace.)"""
        out, trace = self.check_sweep("close_loop_while_reading",
                                      env={"DLPROF_FLUSH_MS": "1"})
        self.assertIn("CLOSE_LOOP_WHILE_READING reads=400000\n", out.stdout)
        reads = [e for e in trace.on(os.path.join(self.data, "victim.dat"))
                 if e["name"] == "pread"]
        self.assertEqual(len(reads), 400000)
        self.assertEqual({(e["offset"], e["bytes"]) for e in reads}, {(0, 64)})

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


# A subprocess child given three descriptors (pass_fds, like CPython's
# test_subprocess.test_pass_fds_redirected) lists what it has.
PASS_FDS = r"""
import os, subprocess, sys
child = ("import os\n"
         "fds = sorted(int(n) for n in os.listdir('/proc/self/fd'))\n"
         "def ok(fd):\n"
         "    try:\n"
         "        os.fstat(fd)\n"
         "        return True\n"
         "    except OSError:\n"
         "        return False\n"
         "os.write(1, repr((fds, [fd for fd in range(256) if ok(fd)])).encode())\n")
null = [os.open(os.devnull, os.O_RDWR) for _ in range(2)]
r, w = os.pipe()
pass_fds = [null[0], w, null[1]]
with subprocess.Popen([sys.executable, "-c", child], stdin=pass_fds[0], stdout=pass_fds[1],
                      stderr=pass_fds[2], close_fds=True, pass_fds=pass_fds):
    out = os.read(r, 4096)
listed, fstat_ok = eval(out)
print("PASS", sorted(pass_fds))
print("LISTED", listed)  # with listdir's own descriptor
print("FSTAT", fstat_ok)
"""


class OwnDescriptorsTest(rtest.RelTestCase):

    def test_descriptors_and_limit_as_untraced(self):
        # 256: above fd 100, where the tracer used to keep its trace open.
        cmd = [rtest.program("lifecycle"), "fds", "256"]
        # DLPROF_FLUSH_MS: no write of the trace while the program counts.
        traced, plain = self.assert_same_as_untraced(cmd, env={"DLPROF_FLUSH_MS": "10000"})
        self.assertIn("FDS 0 1 2\n", plain.stdout)
        self.assertIn("FSTAT100 9\n", plain.stdout)
        self.assertIn("OPENED 253 errno=24\n", plain.stdout)
        self.assert_clean(self.check())

    def test_pass_fds_child_sees_only_its_descriptors(self):
        cmd = [sys.executable, "-c", PASS_FDS]
        traced, plain = self.assert_same_as_untraced(cmd)
        self.assertEqual(len(dltest.trace_files(self.traces)), 2)  # parent and child

    def test_events_wait_at_the_descriptor_limit(self):
        # The flusher tries to write 1 s in and again 1 s later, while the
        # program holds every descriptor below its limit (from a few ms in
        # to 2.5 s): it keeps the events, says so once, and writes them
        # once the program has closed its files.
        p = self.run_traced([rtest.program("lifecycle"), "atlimit", self.make_file("in.bin", 300),
                             "64", "2500"], env={"DLPROF_FLUSH_MS": "1000"}, timeout=60,
                                quiet=False)  # DLPROF_QUIET=1 would silence the message
        self.assertEqual(p.stdout, "FILLED 60\n")
        lines = rtest.tracer_lines(p.stderr)
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertRegex(lines[0], r"^dlprof: cannot open trace .*\.dlprof: Too many open files; "
                                   r"its events wait in memory until a descriptor is free$")
        trace = self.decode()
        path = os.path.join(self.data, "in.bin")
        self.assertEqual([(e["name"], e.get("offset")) for e in trace.on(path)],
                         [("open", None)] + [("pread", i) for i in range(300)]
                         + [("close", None)])
        self.assert_clean(self.check())

    def test_exit_holding_every_descriptor(self):
        # The program ends holding every descriptor it may have, its soft
        # limit lowered to 64 with the hard limit far above: the final
        # write raises the soft limit for its open alone, and every event is
        # in the trace (before, the sidecar kept a ring's worth of the
        # 40,000 reads, and the tracer said the rest were not in it).
        path = self.make_file("f.bin", 10)
        p = self.run_traced([rtest.program("lifecycle"), "exitatlimit", path, "64", "40000",
                             "0"], timeout=60, quiet=False)
        m = re.fullmatch(r"OPENED (\d+) READS (\d+)\n", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        opened, reads = int(m.group(1)), int(m.group(2))
        self.assertEqual(reads, opened + 40000)
        # At most the one line of a write during the run that found no
        # descriptor (the flusher's, as the rings filled), and the exit line.
        lines = rtest.tracer_lines(p.stderr)
        self.assertLessEqual(len(lines), 1, p.stderr)
        for line in lines:
            self.assertRegex(line, r"^dlprof: cannot open trace .*: Too many open files; its "
                                   r"events wait in memory until a descriptor is free$")
        self.assertRegex(p.stderr, r"dlprof: trace .*: \d+ events written, 0 dropped\n")
        self.assertEqual(glob.glob(os.path.join(self.traces, "**", "*.rings"), recursive=True),
                         [])
        trace = self.decode()
        names = collections.Counter(e["name"] for e in trace.on(path))
        # Every open (the last one failed: EMFILE) and every read.
        self.assertEqual((names["open"], names["pread"]), (opened + 1, reads))

    def test_child_forked_holding_every_descriptor(self):
        # A child forked at its soft limit, the hard one far above: it ran
        # untraced ("cannot create ...: Too many open files; this child runs
        # untraced"), none of its reads in any trace. Its trace is created
        # in the slot above the soft limit, as its parent's last write is.
        path = self.make_file("f.bin", 10)
        reads = 500
        p = self.run_traced([rtest.program("lifecycle"), "forkatlimit", path, "64",
                             str(reads)], timeout=60, quiet=False)
        m = re.fullmatch(r"OPENED (\d+) CHILD 0\n", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        self.assertGreater(int(m.group(1)), 50)
        self.assertNotIn("untraced", p.stderr)
        for line in rtest.tracer_lines(p.stderr):
            self.assertRegex(line, r"^dlprof: (cannot open trace .*: Too many open files; its "
                                   r"events wait in memory until a descriptor is free|"
                                   r"trace .*: \d+ events written, 0 dropped)$")
        self.assertEqual(len(dltest.trace_files(self.traces)), 2)
        trace = self.decode()
        child = [pid for pid in trace.pids() if trace.ppid_of(pid) in trace.pids()]
        preads = collections.Counter((e["pid"], e.get("size")) for e in trace.on(path)
                                     if e["name"] == "pread")
        self.assertEqual(preads, {(child[0], 3): reads}, child)
        self.assert_clean(self.check())

    def test_exit_holding_every_descriptor_at_the_hard_limit(self):
        # As above with the hard limit lowered too: no descriptor can be had,
        # and the blocks that waited for one never reach the trace. The rings
        # sidecar still has their events: it stays, dlprof-dump reads it, the
        # tracer says so, and its exit line counts as written only what is on
        # disk (it said "507 events written", removed the sidecar, and not one
        # of the program's reads could be decoded).
        path = self.make_file("f.bin", 10)
        p = self.run_traced([rtest.program("lifecycle"), "exitatlimit", path, "64", "0", "1"],
                            timeout=60, quiet=False)
        m = re.fullmatch(r"OPENED (\d+) READS (\d+)\n", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        opened, reads = int(m.group(1)), int(m.group(2))
        self.assertGreater(opened, 50)
        lines = rtest.tracer_lines(p.stderr)
        self.assertEqual(len(lines), 2, p.stderr)
        held = re.fullmatch(r"dlprof: cannot open trace (.*\.dlprof): no descriptor is free; its "
                            r"last (\d+) events are not in it; its rings sidecar \1\.rings "
                            r"keeps the newest of them \(a ring's worth a thread\), which "
                            r"dlprof-dump reads with it", lines[1])
        self.assertIsNotNone(held, lines[1])
        written = re.search(r"dlprof: trace .*: (\d+) events written, (\d+) dropped", p.stderr)
        self.assertIsNotNone(written, p.stderr)
        # What the trace and its sidecar hold together: the events written
        # and those said to be held.
        check = self.check()
        self.assertEqual(int(written.group(1)) + int(held.group(2)),
                         check["processes"][0]["events"])
        trace = self.decode(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        names = collections.Counter(e["name"] for e in trace.on(path))
        # Every open (the last one failed: EMFILE) and every read.
        self.assertEqual((names["open"], names["pread"]), (opened + 1, reads), trace.dump_stderr)

    def test_pipe_on_a_number_close_just_freed(self):
        # Thread A opens and closes a file, never reading it; thread B's
        # pipes take the numbers A's close frees. The fd table forgot A's fd
        # only after close() returned: B's reads and writes in between were
        # recorded as A's file's (about 100 in 200 000 rounds; at 100 000
        # rounds, 5 to 14 reads or closes in each of 6 runs of 6 before).
        path = self.make_file("A.txt", 1)
        n = 100000
        p = self.run_traced([rtest.program("fdreuse"), path, str(n)], timeout=100)
        self.assertEqual(p.stdout, "OPENS %d PIPE_READS %d\n" % (n, n))
        check = self.check()
        self.assert_clean(check)
        kinds = check["processes"][0]["kinds"]
        # Pipes are not traced: every event is A's open or close (and the
        # record of the process's exit).
        self.assertEqual(kinds, {"open": n, "close": n, "exit": 1})


if __name__ == "__main__":
    dltest.main()
