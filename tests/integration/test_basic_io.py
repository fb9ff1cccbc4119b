"""Single-threaded POSIX I/O: every event, count, byte and offset is exact.

programs/basic_io.c prints, for each call it makes on files in its
directory, the event the tracer must record (offsets from the kernel's file
position, read with the raw lseek system call); the trace must hold exactly
those events, in that order, and nothing else for that directory.
"""

import collections
import os
import subprocess

import dltest


class BasicIoTest(dltest.TraceTestCase):

    def run_program(self):
        p = self.run_traced([dltest.program("basic_io"), self.data])
        expected = [dltest.parse_fields(l) for l in p.stdout.splitlines()
                    if l.startswith("EV\t")]
        self.assertGreater(len(expected), 50)
        trace = self.decode()
        events = trace.under(self.data)
        return expected, events, trace

    def test_every_event_exact(self):
        expected, events, trace = self.run_program()
        summary = "\n".join(str(e) for e in events)
        self.assertEqual(len(events), len(expected), summary)
        # Each event carries exactly the values the program stated, in order.
        for i, (want, e) in enumerate(zip(expected, events)):
            self.assertEqual({k: e.get(k) for k in want}, want,
                             "event %d: %s" % (i, e))
            # Calls on a path alone carry no fd; only dups carry newfd.
            for key in ("fd", "newfd"):
                if key not in want:
                    self.assertNotIn(key, e, "event %d: %s" % (i, e))

    def test_counts_and_bytes_per_kind(self):
        expected, events, _ = self.run_program()
        want_count = collections.Counter(e["name"] for e in expected)
        got_count = collections.Counter(e["name"] for e in events)
        self.assertEqual(got_count, want_count)
        want_bytes = collections.Counter()
        for e in expected:
            want_bytes[e["name"]] += e.get("bytes", 0)
        got_bytes = collections.Counter()
        for e in events:
            got_bytes[e["name"]] += e.get("bytes", 0)
        self.assertEqual(+got_bytes, +want_bytes)
        # Per file, the bytes read and written.
        for names in (dltest.READ_NAMES, dltest.WRITE_NAMES):
            self.assertEqual(
                dltest.bytes_by_path(events, names),
                dltest.bytes_by_path(expected, names))

    def test_copies_write_their_destination(self):
        # sendfile and copy_file_range read their source and write their
        # destination: the summary's files say so (the destination's writes
        # were missing, and a copy from a file left out counted as a read
        # of its destination).
        expected, _, _ = self.run_program()
        src, dst = (os.path.join(self.data, n) for n in ("c.dat", "e.dat"))
        copies = [e for e in expected if e["name"] in ("sendfile", "copy_file_range")]
        self.assertEqual(len(copies), 6)
        files = self.summary()["files"]
        read = sum(e["bytes"] for e in expected if e["path"] == src and (
            e["name"] in dltest.READ_NAMES or e["name"] in ("sendfile", "copy_file_range")))
        self.assertEqual(files[src]["read"]["bytes"], read)
        wrote = sum(e["ret"] for e in copies) + sum(
            e["bytes"] for e in expected if e["path"] == dst and e["name"] == "write")
        self.assertEqual((files[dst]["write"]["bytes"], files[dst]["read"]["bytes"]), (wrote, 0))

    def test_memfd_is_no_file(self):
        # The program's memfd (written, read, mapped and closed) is memory:
        # no event and no file of the summary names it.
        _, _, trace = self.run_program()
        self.assertEqual([e for e in trace.events if "/memfd:" in e.get("path", "")], [])
        self.assertEqual([p for p in self.summary()["files"] if "/memfd:" in p], [])

    def test_files_on_disk_match_the_writes(self):
        expected, events, _ = self.run_program()
        self.assertEqual(os.path.getsize(os.path.join(self.data, "a.dat")), 6060)
        self.assertEqual(os.path.getsize(os.path.join(self.data, "b.log")), 34)
        self.assertEqual(os.path.getsize(os.path.join(self.data, "c.dat")), 12345)
        with open(os.path.join(self.data, "b.log")) as f:
            self.assertEqual(f.read(), "first line\nsecond line\nthird line\n")
        # The appends landed one after the other at the end of b.log.
        appends = [e for e in events if e.get("path", "").endswith("/b.log")
                   and e["name"] in ("write", "writev")]
        self.assertEqual([e["offset"] for e in appends], [0, 11, 23])

    def test_dup_copies_name_the_same_file(self):
        expected, events, _ = self.run_program()
        a = os.path.join(self.data, "a.dat")
        dups = [e for e in events if e["name"] in ("dup", "dup2", "dup3", "fcntl")]
        self.assertEqual(len(dups), 4)
        newfds = {e["newfd"] for e in dups}
        self.assertIn(50, newfds)
        self.assertIn(70, newfds)
        for fd in newfds:
            on_fd = [e for e in events if e.get("fd") == fd
                     and e["name"] not in ("open", "openat", "creat")]
            self.assertTrue(on_fd)
            # Until that fd is reused by an open, it names a.dat.
            for e in on_fd:
                if e["name"] == "close":
                    break
                self.assertEqual(e["path"], a, e)


class InheritedFdsTest(dltest.TraceTestCase):
    """Descriptors open before the program starts (stdin, stdout, one passed
    down) are named on first use, with their real positions."""

    def test_inherited_descriptors(self):
        stdin_path = os.path.join(self.data, "stdin.bin")
        extra_path = os.path.join(self.data, "extra.bin")
        stdout_path = os.path.join(self.data, "stdout.txt")
        with open(stdin_path, "wb") as f:
            f.write(os.urandom(1234))
        with open(extra_path, "wb") as f:
            f.write(os.urandom(3000))
        with open(stdin_path, "rb") as stdin, open(extra_path, "rb") as extra, \
                open(stdout_path, "wb") as stdout:
            extra.seek(700)  # already moved when the program starts
            fd = extra.fileno()
            p = subprocess.run(
                [dltest.program("read_fds"), "0", str(fd)],
                env=dltest.traced_env(self.traces), stdin=stdin, stdout=stdout,
                stderr=subprocess.PIPE, pass_fds=(fd,), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(stdout_path) as f:
            out = f.read()
        self.assertEqual(out, "FD 0 0 1234\nFD %d 700 2300\n" % fd)
        trace = self.decode()
        reads = [(e["fd"], e["path"], e["offset"], e["bytes"])
                 for e in trace.under(self.data) if e["name"] == "read"]
        want = [(0, stdin_path, off, min(500, 1234 - off)) for off in range(0, 1234, 500)]
        want += [(0, stdin_path, 1234, 0)]
        want += [(fd, extra_path, off, min(500, 3000 - off)) for off in range(700, 3000, 500)]
        want += [(fd, extra_path, 3000, 0)]
        self.assertEqual(reads, want)


if __name__ == "__main__":
    dltest.main()
