"""Asynchronous I/O (issue 52): io_uring, Linux AIO and POSIX AIO requests,
each an event from its submission to its completion, recorded once.

The programs (programs/async/) print, for each completion they reap and in
that order, the event the tracer must record (name, path, offset, size,
bytes, result, errno, the thread that submitted it and the one that reaped
it, fixed file or buffer, linked); the trace's asynchronous events on the
program's files must be exactly those, in that order (requests submitted
together share their start and are recorded in the order they were
reaped). fio's io_uring, libaio and posixaio engines are checked against
fio's own log of what it did (--write_iolog). The programs' Linux AIO and
POSIX AIO requests: test_async_aio.py.
"""

import collections
import errno
import json
import os
import re
import shutil
import unittest

import dltest

ASYNC_FIELDS = ("name", "path", "offset", "size", "bytes", "ret", "errno", "fd", "submit_tid",
                "tid")
FLAG_KEYS = ("fixed_file", "fixed_buffer", "linked", "unreaped")


def expected_lines(stdout, tag="EV\t"):
    return [dltest.parse_fields(l) for l in stdout.splitlines() if l.startswith(tag)]


class AsyncTestCase(dltest.TraceTestCase):
    """What the asynchronous I/O tests share (test_async_aio.py's too)."""

    def requests(self, trace, pid=None):
        return [e for e in trace.under(self.data)
                if e["cat"] == "aio" and (pid is None or e["pid"] == pid)]

    def assert_events(self, want, got):
        """Each event carries exactly what the program stated, in order; keys
        it did not state (a FIFO's offset, the fd of a direct descriptor,
        flags) are absent."""
        listing = "\n".join(str(e) for e in got)
        self.assertEqual(len(got), len(want), listing)
        for i, (w, e) in enumerate(zip(want, got)):
            flags = {k: True for k in FLAG_KEYS if w.pop(k, 0)}
            # (dlprof-dump leaves a size of 0 out but for reads and writes.)
            got = {k: e.get(k, 0 if k == "size" else None) for k in w}
            self.assertEqual(got, w, "event %d: %s" % (i, e))
            self.assertEqual({k: True for k in FLAG_KEYS if e.get(k)}, flags,
                             "event %d: %s" % (i, e))
            for key in ("fd", "offset"):
                if key not in w:
                    self.assertNotIn(key, e, "event %d: %s" % (i, e))
            # Submitted, completed, reaped: in that order.
            self.assertGreaterEqual(e["reaped"], e["ts"] + e["dur"], e)

    def need_liburing(self):
        if not os.path.exists(dltest.program("uring_liburing")):
            self.skipTest("uring_liburing not built: liburing (liburing-dev) not found")

    def run_program(self, args, **kw):
        p = self.run_traced([dltest.program(args[0])] + args[1:], **kw)
        if p.stdout.startswith("SKIP\t"):
            self.skipTest(p.stdout.split("\t", 1)[1].strip())
        return p


class AsyncIoTest(AsyncTestCase):

    # --- io_uring through liburing ---------------------------------------

    def test_liburing_requests(self):
        self.need_liburing()
        p = self.run_program(["uring_liburing", "basic", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 18)
        trace = self.decode()
        got = self.requests(trace)
        self.assert_events(want, got)
        names = collections.Counter(e["name"] for e in got)
        self.assertEqual(names["io_uring_read"], 9)
        self.assertEqual((names["io_uring_openat"], names["io_uring_close"],
                          names["io_uring_statx"], names["io_uring_fsync"]), (2, 2, 1, 1))
        # The linked chain's failure: the write's -EBADF and the read it cancelled.
        failed = [(e["name"], e["ret"], e["errno"]) for e in got if e["ret"] < 0]
        self.assertEqual(failed, [("io_uring_write", -errno.EBADF, errno.EBADF),
                                  ("io_uring_read", -errno.ECANCELED, errno.ECANCELED)])
        # The fd the openat request returned is the file's from then on: the
        # read of it names c.dat, and so would any call on it.
        opened = [e for e in got if e["name"] == "io_uring_openat" and "fd" in e]
        self.assertEqual(len(opened), 1)
        self.assertTrue(any(e["name"] == "io_uring_read" and e.get("fd") == opened[0]["fd"]
                            and e["path"].endswith("/c.dat") for e in got))

    def test_completions_reaped_by_another_thread(self):
        self.need_liburing()
        p = self.run_program(["uring_liburing", "reaper", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 8)
        self.assertEqual(len({w["submit_tid"] for w in want}), 1)
        self.assertEqual(len({w["tid"] for w in want}), 1)
        self.assertNotEqual(want[0]["submit_tid"], want[0]["tid"])
        self.assert_events(want, self.requests(self.decode()))

    def test_fork_while_requests_are_in_flight(self):
        self.need_liburing()
        p = self.run_program(["uring_liburing", "fork", self.data])
        want = expected_lines(p.stdout)
        child = int([l for l in p.stdout.splitlines() if l.startswith("CHILD\t")][0].split()[1])
        trace = self.decode()
        parent = [h["pid"] for h in trace.headers if h["pid"] != child]
        self.assertEqual(len(parent), 1)
        # The parent's three requests, once, in the parent's trace; the FIFO
        # read completed by what the child wrote.
        self.assert_events(want, self.requests(trace, parent[0]))
        self.assertEqual(self.requests(trace, child), [])
        child_events = [(e["name"], e["path"], e["ret"]) for e in trace.under(self.data)
                        if e["pid"] == child]
        self.assertEqual(child_events, [("write", os.path.join(self.data, "f.fifo"), 16)])

    def test_sqpoll_ring_through_liburing(self):
        """Reads on an SQPOLL ring; then one prepared before a wait that
        submits nothing (io_uring_wait_cqe_timeout with IORING_FEAT_EXT_ARG)
        and submitted after a marker pread: submitted after the marker.
        (It was dated from the wait, and held the wait's timeout.)"""
        self.need_liburing()
        p = self.run_program(["uring_liburing", "sqpoll", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 5)
        trace = self.decode()
        got = self.requests(trace)
        self.assert_events(want, got)
        if "EXT_ARG\t1" in p.stdout.splitlines():
            marker = [e for e in trace.under(self.data) if e["name"] == "pread"]
            self.assertEqual(len(marker), 1)
            self.assertGreaterEqual(got[-1]["ts"], marker[0]["ts"] + marker[0]["dur"], got[-1])

    def test_requests_that_post_no_completion_when_they_succeed(self):
        """175 writes with IOSQE_CQE_SKIP_SUCCESS on a ring of 8 (the
        tracer's table holds 64 requests in flight): each is recorded once,
        as done (no failure posted: its 512 bytes, unreaped) with no
        duration (when it completed nobody knows), and none crowds out what
        comes after it -- the fsyncs that end their chains, a failing
        write's posted -EBADF, a read. (They were -EINPROGRESS, 0 bytes,
        each lasting till the table or the ring let it go: the summary's
        I/O time was 30 times the run.)"""
        self.need_liburing()
        p = self.run_program(["uring_liburing", "skip", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 175 + 25 + 2)
        # A round's requests share their submission's time, and events of
        # one time come in the order recorded: the writes, recorded when
        # they make room (in the table's order), after their fsync. Put
        # them as submitted.
        got = sorted(self.requests(self.decode()),
                     key=lambda e: (e["ts"], e["name"] != "io_uring_write", e.get("offset", 0)))
        self.assert_events(want, got)
        quiet = [e for e in got if e.get("unreaped")]
        self.assertEqual(len(quiet), 175)
        self.assertEqual({(e["dur"], e["reaped"] - e["ts"]) for e in quiet}, {(0, 0)})

    def test_requests_that_share_a_user_data(self):
        """liburing leaves a request's user_data 0: a NOP (not recorded)
        beside a read, and writes that post nothing when they succeed, each
        linked to a read, all with user_data 0. Each completion is the
        request's that posted it: the reads' results are the reads'. (The
        NOP's result went to the read, and a read's to a silent write.)"""
        self.need_liburing()
        p = self.run_program(["uring_liburing", "shared", self.data])
        want = expected_lines(p.stdout)
        self.assertIn(len(want), (3, 9))
        got = self.requests(self.decode())
        # The silent writes are recorded when the ring goes, in no set order.
        reads = [e for e in got if e["name"] == "io_uring_read"]
        writes = sorted((e for e in got if e["name"] != "io_uring_read"),
                        key=lambda e: e.get("offset", 0))
        self.assert_events(want, reads + writes)

    def test_requests_not_recorded_make_room_for_those_that_are(self):
        """80 reads of a pipe (not a traced file, so not recorded, but
        followed to be matched) wait on a ring whose requests the tracer's
        table holds 64 of; then four reads of a file: each is recorded."""
        self.need_liburing()
        p = self.run_program(["uring_liburing", "crowded", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 4)
        self.assert_events(want, self.requests(self.decode()))

    def test_rings_whose_fd_goes_without_the_c_library(self):
        """liburing >= 2.4 closes a ring's fd with its own system call
        (io_uring_close_ring_fd) and sets ring_fd to -1. A ring let go so by
        io_uring_queue_exit is gone in the kernel, as untraced: the pipe
        writer registered in it is closed ("EOF 1"; the tracer's mapping of
        the ring kept it alive). A ring whose fd went so and was never let
        go: the next ring gets its fd number, and its reads are recorded
        (they were taken for the old ring's and lost)."""
        self.need_liburing()
        p = self.run_program(["uring_liburing", "closed", self.data])
        self.assertIn("EOF\t1", p.stdout.splitlines())
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 4)
        self.assert_events(want, self.requests(self.decode()))

    def test_a_handler_that_exits_while_the_tracer_looks_at_the_ring(self):
        """Children read in a loop, 64 requests a call, until a timer's
        handler calls _exit(3), at whatever point of the loop: in the
        tracer's look at the completion ring too. Each exits at once, as
        untraced. (The exit's teardown of the ring waited for the look it
        had interrupted: the child hung.)"""
        self.need_liburing()
        p = self.run_program(["uring_liburing", "sigexit", self.data], timeout=300)
        self.assertEqual(p.stdout.splitlines(), ["EXITED\t24 of 24"])

    # --- io_uring completion rings that fill ------------------------------

    def run_cq(self, mode):
        if not os.path.exists(dltest.program("uring_cq")):
            self.skipTest("uring_cq not built: liburing (liburing-dev) not found")
        traces = os.path.join(self.tmp, "traces-" + mode)
        p = self.run_program(["uring_cq", mode, self.data], trace_dir=traces)
        return expected_lines(p.stdout), self.requests(self.decode(traces))

    def test_a_completion_ring_exactly_full(self):
        """A ring whose completions fill it exactly when the tracer looks:
        16 preads a round on a ring of 16 (60 rounds), 8 reads of a FIFO
        on liburing's default ring of 8, 48 preads overflowing a ring of 16
        (flushed into it full). Each request as the program reaped it. (The
        first of each full ring was taken as written over: -EINPROGRESS,
        its request held the tracer's table for ever, which filled: 894 of
        the 960 preads recorded; 1 of 8 FIFO reads and 2 of 48 wrong.)"""
        for mode, count in (("batch", 960), ("fifo", 16), ("overflow", 48)):
            with self.subTest(mode=mode):
                want, got = self.run_cq(mode)
                self.assertEqual(len(want), count)
                # (A FIFO completes the reads submitted last first: the
                # trace has them as submitted. Each offset is one read's.)
                order = lambda e: (e.get("offset", -1), e["ret"])
                self.assert_events(sorted(want, key=order), sorted(got, key=order))

    def test_completions_written_over_before_the_tracer_looks(self):
        """16 FIFO reads a round on a ring of 8 completions, all reaped by
        peeking (no call the tracer sees), 10 rounds: 9 of each round's go
        unseen (8 written over, and one the tracer cannot tell from them),
        recorded as never seen complete; the rest as they completed. Then
        16 preads, each recorded. (The unseen ones filled the tracer's table
        of 64 requests in flight for ever: 124 of the 160 FIFO reads
        recorded.)"""
        want, got = self.run_cq("lost")
        self.assertEqual(len(want), 10 * 16 + 16)
        # The unseen ones are recorded when they make room, or at the end,
        # in no set order; the preads after them as reaped. (The FIFO's
        # offsets, a running count of its bytes, miss the bytes unseen.)
        fifo = [{k: v for k, v in e.items() if k != "offset"} for e in want[:-16] + got[:-16]]
        order = lambda e: e["ret"]
        self.assert_events(sorted(fifo[:160], key=order), sorted(fifo[160:], key=order))
        self.assert_events(want[-16:], got[-16:])

    def test_more_requests_in_flight_than_the_ring_holds(self):
        """20 rounds of 64 preads on a ring of 64, then 40 rounds of 4 on a
        ring of 4, each ring's all submitted before any is reaped: the
        kernel holds them all in flight (completions beyond the ring in its
        overflow list), and each is recorded as the program reaped it, its
        bytes the bytes it read. (The tracer's table of a ring held twice
        its entries, 256 and 64 requests, and the rest were lost: 512 of
        1280 reads recorded, and 64 of 160.)"""
        want, got = self.run_cq("backlog")
        self.assertEqual(len(want), 1280 + 160)
        self.assertEqual(sum(e["bytes"] for e in got), sum(w["bytes"] for w in want))
        # (Rounds submitted apart are in the trace as submitted; reads of one
        # offset, of either ring, are alike.)
        order = lambda e: e["offset"]
        self.assert_events(sorted(want, key=order), sorted(got, key=order))

    # --- io_uring requests that change what an fd or fixed slot is -------

    def run_files(self, mode, env=None):
        if not os.path.exists(dltest.program("uring_files")):
            self.skipTest("uring_files not built: liburing (liburing-dev) not found")
        p = self.run_program(["uring_files", mode, self.data], env=env)
        trace = self.decode()
        calls = [dltest.parse_fields(l) for l in p.stdout.splitlines() if l.startswith("CALL\t")]
        return expected_lines(p.stdout), calls, trace

    def test_an_openat_whose_completion_the_tracer_sees_late(self):
        """An openat request taken with io_uring_peek_cqe (no call the
        tracer sees): the program writes its fd before the tracer sees the
        completion (at the next ring call), and another closes it and gets
        the fd number again from open(). The writes are at the offsets they
        landed at, the close is the opened file's, the fsync request and
        the preads are the second open's; so for an fd that a dup2 made
        another's, whose reads are at the position the two fds share. (The
        late completion set the fd to the openat's file at position 0:
        writes at 0, 1000, 2000, 0, 1000; the close of the first file
        missing, the second file's fsync and preads named the first.)"""
        # (The tracer writes its trace only at the end: the openat request
        # runs on the kernel's thread, where no wait can keep it from the
        # number the flusher holds for a moment as it opens the trace, and
        # the program checks that its open() gets that number again: 1 run
        # in 250 at load 10 got the next one. USER_GUIDE_TRACING.md.)
        want, calls, trace = self.run_files("late", env={"DLPROF_FLUSH_MS": "600000"})
        self.assertEqual(len(want), 6)
        self.assert_events(want, self.requests(trace))
        got = [(e["name"], e["path"], e.get("offset")) for e in trace.under(self.data)
               if e["cat"] != "aio" and e["name"] in ("write", "close", "pread", "read")]
        self.assertEqual(got, [(c["name"], c["path"], c.get("offset")) for c in calls])

    def test_a_direct_descriptor_opened_read_and_closed_in_one_submit(self):
        """openat into fixed slot 1, linked to a read of slot 1, linked to
        its close, all in one submit: each is recorded, the read and the
        close as the opened file's. (The slot was filled only when the
        openat's completion was seen, after the read and close had been
        described as of an empty slot: both lost.)"""
        want, _, trace = self.run_files("direct")
        self.assertEqual(len(want), 3)
        self.assert_events(want, self.requests(trace))

    def test_file_position_reads_of_a_slot_whose_fd_was_closed(self):
        """Reads at the file position of a registered file whose fd was
        closed and its number reused by another file's open; of another
        slot whose fd is open, read by read() between. Each at the offset
        it read (100, 1100, 2100; 0, 1010), the other file's read() at 0.
        (They were at the reused fd's position: 0, 1000, 2000, and the
        other file's read() at 3000.)"""
        want, calls, trace = self.run_files("reused")
        self.assertEqual(len(want), 5)
        self.assert_events(want, self.requests(trace))
        got = [(e["name"], e["path"], e.get("offset")) for e in trace.under(self.data)
               if e["name"] == "read"]
        self.assertEqual(got, [(c["name"], c["path"], c.get("offset")) for c in calls])

    # --- io_uring through syscall() ---------------------------------------

    def test_raw_system_calls(self):
        p = self.run_program(["uring_raw", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 8)
        got = self.requests(self.decode())
        self.assert_events(want, got)
        # An opcode without a kind of its own says which it was.
        self.assertEqual([e.get("opcode") for e in got if e["name"] == "io_uring_op"], [24])

    def test_writes_that_append(self):
        """A write at offset 7 on an O_APPEND fd and one with RWF_APPEND at
        offset 0 land at the file's end (1000, 1100): recorded with no
        offset; the fd's position, which neither moved, takes the next
        write at the position to 0. (They were recorded at 7 and 0.) One
        with RWF_APPEND at the fd's position moves it to the end: a write()
        after it is recorded there (review: at 100, the position the
        tracer kept, the kernel's at 1300)."""
        p = self.run_program(["uring_raw", self.data, "append"])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 4)
        trace = self.decode()
        self.assert_events(want, self.requests(trace))
        # RWF_APPEND at the fd's position moved it to the file's end, where
        # the program's write() then landed (recorded at 100 before).
        writes = [e for e in trace.under(self.data) if e["name"] == "write"
                  and e["path"].endswith("c.dat")]
        self.assertEqual([e["offset"] for e in writes],
                         [int(l.split("offset=")[1]) for l in p.stdout.splitlines()
                          if l.startswith("WRITE\t")])

    def test_requests_whose_pointers_are_bad(self):
        """io_uring requests with a bad path (openat, statx), iovec array
        (readv) or open_how (openat2): the kernel answers -EFAULT, as
        untraced, and the program goes on. The readv is recorded with its size unknown (0),
        the openat2 with its path; the others open or name nothing. (The
        tracer read them before the kernel: SIGSEGV.)"""
        p = self.run_program(["uring_raw", self.data, "badptr"])
        results = [dltest.parse_fields(l) for l in p.stdout.splitlines()
                   if l.startswith("RES\t")]
        self.assertEqual(sorted((r["ud"], r["res"]) for r in results),
                         [(ud, -errno.EFAULT) for ud in (1, 2, 3, 4)])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 2)
        self.assert_events(want, self.requests(self.decode()))
        # A files update whose fd array ends after its first fd: the kernel
        # updated one slot; the tracer read that one only. (It read both,
        # past the page: SIGSEGV.)
        calls = [dltest.parse_fields(l) for l in p.stdout.splitlines()
                 if l.startswith("CALL\t")]
        self.assertEqual([(c["name"], c["ret"], c["errno"]) for c in calls],
                         [("files_update", 1, 0)])

    def test_a_ring_shared_with_a_forked_child_is_said_to_be(self):
        """A ring on which a forked child submits: the parent's tracer no
        longer follows it, and says why naming a ring shared with another
        process first (it named only the syscall instruction, fio's)."""
        p = self.run_program(["uring_raw", self.data, "shared"], quiet=False)
        notes = [l for l in p.stderr.splitlines() if "io_uring:" in l]
        self.assertEqual(len(notes), 1, p.stderr)
        self.assertIn("shared with another process", notes[0])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 1)

    def test_ring_closed_while_a_thread_waits_in_it(self):
        """A thread waits in io_uring_enter for a read of a FIFO while the
        main thread closes the ring's fd (the ring lives on in the
        program's own mappings) and then writes the FIFO: the waiting call
        returns and the thread reaps the read, as untraced. (The tracer let
        its own mapping of the ring go at the close, under the waiting
        thread, which crashed on its way out.) The read is recorded once,
        as in flight when the ring was closed: the tracer follows a ring no
        more once its fd is closed."""
        p = self.run_program(["uring_raw", self.data, "closed"])
        self.assertEqual(p.stdout.splitlines(), ["REAPED\tres=1"])
        got = self.requests(self.decode())
        self.assertEqual([(e["name"], e["path"], e["ret"]) for e in got],
                         [("io_uring_read", os.path.join(self.data, "w.fifo"), -errno.EINPROGRESS)])

    def test_a_ring_whose_fd_goes_otherwise_than_by_close_is_freed(self):
        """A ring holding a pipe's only writer (a registered file), unmapped
        by the program and its fd gone by dup2 onto it, close_range or
        syscall(SYS_close): the kernel frees the ring, and the pipe's
        reader sees the hang-up, as untraced. (The tracer's own mapping of
        the ring kept it alive: the reader waited.)"""
        for how in ("dup2", "close_range", "syscall"):
            with self.subTest(how=how):
                p = self.run_program(["uring_raw", self.data, "gone", how])
                self.assertEqual(p.stdout.splitlines(), ["HANGUP\t1"])

    def test_sqpoll_ring_by_system_calls_is_said_to_be_uncovered(self):
        p = self.run_program(["uring_raw", self.data, "sqpoll"], quiet=False)
        notes = [l for l in p.stderr.splitlines() if "SQPOLL" in l]
        self.assertEqual(len(notes), 1, p.stderr)
        trace = self.decode()
        events = [e for e in trace.events if e["cat"] == "aio"]
        self.assertEqual([e for e in events if e["name"] not in ("io_uring_ring",
                                                                 "io_uring_enter")], [])
        rings = [e for e in events if e["name"] == "io_uring_ring"]
        self.assertEqual([(r["size"], r["ret"]) for r in rings], [(7, 7)])
        self.assertEqual(len(expected_lines(p.stdout)), 7)

    def test_timelines(self):
        """The Chrome timeline: each request from its submission to its
        completion on its file's track, requests in flight together on lanes
        of their own (none across another), with the threads that submitted
        and reaped it."""
        self.need_liburing()
        p = self.run_program(["uring_liburing", "reaper", self.data])
        want = expected_lines(p.stdout)
        out = os.path.join(self.tmp, "t.json")
        r = dltest.run([dltest.DUMP, "--format", "chrome", "-o", out, self.traces],
                       dltest.base_env())
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            events = json.load(f)["traceEvents"]
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        requests = [e for e in events if e["ph"] == "X" and e["cat"] == "aio"]
        self.assertEqual(len(requests), 8)
        path = os.path.join(self.data, "a.dat")
        lanes = collections.defaultdict(list)
        for e in requests:
            self.assertRegex(names[(e["pid"], e["tid"])],
                             r"^async I/O %s( \(overlap \d+\))?$" % re.escape(path))
            self.assertEqual((e["args"]["submit_tid"], e["args"]["reaped_by"]),
                             (want[0]["submit_tid"], want[0]["tid"]))
            lanes[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
        for slices in lanes.values():
            slices.sort()
            self.assertTrue(all(a[1] <= b[0] for a, b in zip(slices, slices[1:])), slices)
        self.assertEqual(sorted((e["args"]["offset"], e["args"]["size"]) for e in requests),
                         sorted((w["offset"], w["size"]) for w in want))

    def test_module_off(self):
        """DLPROF_TRACE without aio: the same program, its POSIX calls traced,
        no request."""
        p = self.run_program(["uring_raw", self.data], env={"DLPROF_TRACE": "posix"})
        self.assertEqual(len(expected_lines(p.stdout)), 8)
        trace = self.decode()
        self.assertEqual([e for e in trace.events if e["cat"] == "aio"], [])
        self.assertEqual(sorted({e["name"] for e in trace.under(self.data)}),
                         ["close", "open", "pwrite"])


def fio_direct_ok(directory):
    """Whether `directory` takes O_DIRECT (tmpfs does not)."""
    path = os.path.join(directory, ".direct")
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
    except OSError:
        return False
    os.close(fd)
    os.unlink(path)
    return True


def iolog_reads(path):
    """(offset, length) of each read in fio's --write_iolog (version 2 or 3:
    "[time] file action offset length")."""
    out = collections.Counter()
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[-3] == "read":
                out[(int(parts[-2]), int(parts[-1]))] += 1
    return out


@unittest.skipUnless(shutil.which("fio"), "fio not installed (scripts/install-deps.sh)")
class FioTest(dltest.TraceTestCase):
    """fio's random reads of 256 blocks of 4 KiB, at iodepth 8 and 64, with
    O_DIRECT where the file system takes it."""

    ENGINE_KIND = {"libaio": "linux_aio_pread", "posixaio": "aio_read"}

    def run_fio(self, engine, depth):
        data = os.path.join(self.data, "fio.dat")
        iolog = os.path.join(self.tmp, "iolog-%s-%d" % (engine, depth))
        traces = os.path.join(self.tmp, "traces-%s-%d" % (engine, depth))
        direct = "1" if fio_direct_ok(self.data) else "0"
        cmd = ["fio", "--name=job", "--filename=" + data, "--ioengine=" + engine,
               "--rw=randread", "--bs=4k", "--size=1M", "--iodepth=%d" % depth,
               "--direct=" + direct, "--write_iolog=" + iolog, "--output=/dev/null"]
        p = self.run_traced(cmd, quiet=False, timeout=300, trace_dir=traces)
        want = iolog_reads(iolog)
        self.assertEqual(sum(want.values()), 256)
        trace = self.decode(traces)
        return want, trace, [e for e in trace.on(data)], p

    def check_engine(self, engine, depth):
        want, _, events, _ = self.run_fio(engine, depth)
        kind = self.ENGINE_KIND[engine]
        got = collections.Counter((e["offset"], e["size"]) for e in events if e["name"] == kind)
        self.assertEqual(got, want)
        reads = [e for e in events if e["name"] == kind]
        self.assertTrue(all(e["bytes"] == 4096 and e["ret"] == 4096 for e in reads))

    def test_libaio(self):
        for depth in (8, 64):
            with self.subTest(depth=depth):
                self.check_engine("libaio", depth)

    def test_posixaio(self):
        for depth in (8, 64):
            with self.subTest(depth=depth):
                self.check_engine("posixaio", depth)

    def test_io_uring(self):
        """fio >= 3.27 enters io_uring with its own syscall instruction on
        x86-64 and arm64 (FIO_ARCH_HAS_SYSCALL), where no preloaded library
        sees it: the tracer says so once and records the ring's life with
        the requests the kernel took from it. A fio that enters through
        syscall() has each request recorded."""
        for depth in (8, 64):
            with self.subTest(depth=depth):
                want, trace, events, p = self.run_fio("io_uring", depth)
                reads = collections.Counter((e["offset"], e["size"]) for e in events
                                            if e["name"] == "io_uring_read")
                rings = [e for e in trace.events if e["name"] == "io_uring_ring"]
                if rings:
                    self.assertEqual(reads, collections.Counter())
                    self.assertEqual([(r["size"], r["ret"]) for r in rings], [(256, 256)])
                    self.assertEqual(len([l for l in p.stderr.splitlines()
                                          if "syscall instruction" in l]), 1, p.stderr)
                else:
                    self.assertEqual(reads, want)


if __name__ == "__main__":
    dltest.main()
