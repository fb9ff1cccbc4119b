"""Asynchronous I/O (issue 52), Linux AIO and POSIX AIO: each request an
event from its submission to its completion, recorded once, as the program
(programs/async/linux_aio.c, posix_aio.c) reaped it; its calls return and
set errno as untraced. (test_async_io.py: io_uring, and fio.)
"""

import errno

import dltest
import test_async_io
from test_async_io import expected_lines


class LinuxPosixAioTest(test_async_io.AsyncTestCase):

    def test_linux_aio_writes_that_append(self):
        """A pwrite at aio_offset 5 on an O_APPEND fd lands at the file's
        end (1000), as one with RWF_APPEND at 0 on another fd (1100): both
        recorded with no offset (where is not known at submission); a
        pwritev at 0 on that fd lands at 0. (They were recorded at 5 and
        0: the offsets asked.)"""
        p = self.run_program(["linux_aio", self.data, "append"])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 3)
        self.assert_events(want, self.requests(self.decode()))

    def test_linux_aio_submissions_whose_pointers_are_bad(self):
        """io_submit of a preadv whose iovec array is bad, of an iocb array
        or an iocb whose pointer is bad, of a good pread before a bad iocb,
        of 2^32 - 1 iocbs (four good preads before an unreadable page), of
        -1: each returns what it returns untraced (EFAULT, the count the
        kernel took, EINVAL), and each pread the kernel took is recorded as
        the program reaped it. (The tracer read the array and every iocb
        in it before the kernel, all `nr` of them: SIGSEGV at the array,
        the iocb, and past the page.)"""
        cmd = [dltest.program("linux_aio"), self.data, "badptr"]
        untraced = dltest.run(cmd, dltest.base_env())
        self.assertEqual(untraced.returncode, 0, untraced.stderr)
        p = self.run_program(["linux_aio", self.data, "badptr"])
        calls = lambda out: [dltest.parse_fields(l) for l in out.splitlines()
                             if l.startswith("CALL\t")]
        self.assertEqual(calls(p.stdout), calls(untraced.stdout))
        self.assertEqual([(c["what"], c["ret"], c["errno"]) for c in calls(p.stdout)],
                         [("iovec", -1, errno.EFAULT), ("array", -1, errno.EFAULT),
                          ("iocb", -1, errno.EFAULT), ("second", 1, 0), ("huge", 4, 0),
                          ("negative", -1, errno.EINVAL)])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 6)
        self.assert_events(want, self.requests(self.decode()))

    def test_linux_aio(self):
        p = self.run_program(["linux_aio", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 7)
        # The request its program never reaped ends with the context, unseen.
        never = expected_lines(p.stdout, "UNREAPED\t")[0]
        never.update({"ret": -errno.EINPROGRESS, "errno": errno.EINPROGRESS})
        never["name"] = "linux_aio_pread"
        self.assert_events(want + [never], self.requests(self.decode()))

    def test_an_iocb_reaped_unseen_then_submitted_again(self):
        """fio's userspace_reap: an iocb's completion taken from the
        kernel's ring by the program itself (no call the tracer sees), then
        the iocb submitted again at another offset and reaped by
        io_getevents. That completion is the second request's; the first is
        recorded as the tracer knew it, in flight. (The completion was
        matched to the first, and the second left in flight.)"""
        p = self.run_program(["linux_aio", self.data, "reused"])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 1)
        unseen = expected_lines(p.stdout, "UNSEEN\t")[0]
        unseen.update({"ret": -errno.EINPROGRESS, "errno": errno.EINPROGRESS})
        self.assert_events([unseen] + want, self.requests(self.decode()))

    def test_linux_aio_calls_on_a_context_that_is_none(self):
        """io_submit and io_getevents on a destroyed context, and on an
        address that never was one: each fails with EINVAL, as untraced, and
        nothing is recorded as a request. (The tracer followed the context
        from the io_submit and read its ring in io_getevents: a crash.)"""
        p = self.run_program(["linux_aio", self.data, "nocontext"])
        calls = [dltest.parse_fields(l) for l in p.stdout.splitlines() if l.startswith("CALL\t")]
        self.assertEqual([(c["name"], c["ret"], c["errno"]) for c in calls],
                         [("io_submit", -1, errno.EINVAL), ("io_getevents", -1, errno.EINVAL)] * 2)
        self.assertEqual(self.requests(self.decode()), [])

    def test_linux_aio_reaped_by_another_thread_after_the_first(self):
        """64 preads submitted and reaped by one thread (registered after
        io_submit, read directly: no copy), then 2,000 submitted by it and
        reaped at once by a second thread: each recorded, none lost to the
        reaper taking a completion before its request was registered."""
        p = self.run_program(["linux_aio", self.data, "handover"])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 2064)
        got = self.requests(self.decode())
        key = lambda e: (e["tid"], e["submit_tid"], e["offset"], e["ret"])
        self.assertEqual(sorted(key(w) for w in want), sorted(key(e) for e in got))
        self.assert_events(want[:64], got[:64])

    def test_linux_aio_first_reaper_while_a_submission_blocks(self):
        """A thread's first io_getevents on a context while its reaper is
        blocked in io_submit (a pipe's read, which waits for that thread's
        write), and one after a timer's siglongjmp left io_submit: each
        returns as untraced, and the preads after are recorded. (The first
        waited for the submission to register: a deadlock, and a hang.)"""
        p = self.run_program(["linux_aio", self.data, "blocked"], timeout=30)
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 2)
        self.assert_events(want, self.requests(self.decode()))

    def test_linux_aio_contexts_alive_at_once(self):
        """80 contexts alive at once, a pread on each: each recorded as
        reaped. (The tracer followed 64 contexts: 64 of the 80 reads.)"""
        p = self.run_program(["linux_aio", self.data, "contexts"])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 80)
        self.assert_events(want, self.requests(self.decode()))

    def test_posix_aio(self):
        p = self.run_program(["posix_aio", self.data])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 10)
        self.assertEqual(len({w["submit_tid"] for w in want}), 2)
        trace = self.decode()
        self.assert_events(want, self.requests(trace))
        # glibc serves them with preads on threads of its own: not traced
        # twice.
        self.assertEqual([e["name"] for e in trace.under(self.data) if e["cat"] != "aio"
                          and e["name"] not in ("open", "pwrite", "close")], [])

    def test_posix_aio_never_reaped(self):
        """aiocbs reused without aio_return, done checked with aio_error: one
        for 5000 reads, then an array of three for two lio_listio(LIO_WAIT).
        Each request is recorded once, with its result (unreaped), when its
        aiocb is submitted again or at the end. (Each resubmission took a
        slot of its own: 4096 events, 4095 of them -EINPROGRESS, the rest
        lost; the second lio_listio's reads in flight till the end.)"""
        p = self.run_program(["posix_aio", self.data, "reused"], timeout=120)
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 5006)
        got = sorted(self.requests(self.decode()), key=lambda e: (e["ts"], e["offset"]))
        self.assert_events(want, got)
        self.assertEqual(sum(e["bytes"] for e in got), 5000 * 512 + 6 * 1024)

    def test_posix_aio_writes_that_append(self):
        """Three aio_writes at aio_offset 0 on an O_APPEND fd land at 0,
        1000 and 2000: recorded with no offset (where is not known). (They
        were recorded at 0, each.)"""
        p = self.run_program(["posix_aio", self.data, "append"])
        want = expected_lines(p.stdout)
        self.assertEqual(len(want), 3)
        self.assert_events(want, self.requests(self.decode()))


if __name__ == "__main__":
    dltest.main()
