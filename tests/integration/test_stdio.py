"""STDIO streams: every wrapped function, each call one exact stdio event.

programs/stdio_all.c prints, for each call it makes on streams in its
directory, the event the tracer must record (positions from libc's own
ftello, which the tracer does not see); the trace must hold exactly those
events, in that order, and no posix read/write underneath them. The same
source built with -O2 -D_FORTIFY_SOURCE=2 (stdio_all_fortify) calls the
__fread_chk/__fgets_chk/__fprintf_chk/__vfprintf_chk forms.
"""

import collections
import os
import shutil
import subprocess
import unittest

import dltest

# Every function the STDIO wrappers cover and the program calls (fopen64 and
# fseeko64 included; the _chk forms come from the fortified build).
PLAIN_NAMES = {
    "fopen", "fopen64", "fdopen", "freopen", "fclose", "fread",
    "fread_unlocked", "fwrite", "fwrite_unlocked", "fgets", "fputs", "fgetc",
    "getc", "fputc", "putc", "getline", "getdelim", "fprintf", "vfprintf",
    "fscanf", "fseek", "fseeko", "fseeko64", "ftell", "ftello", "rewind",
    "fgetpos", "fsetpos", "fflush"}
CHK_NAMES = {"__fread_chk", "__fgets_chk", "__fprintf_chk", "__vfprintf_chk"}
STDIO_READS = {"fread", "fread_unlocked", "__fread_chk", "fgets", "__fgets_chk",
               "fgetc", "getc", "getline", "getdelim", "fscanf"}
STDIO_WRITES = {"fwrite", "fwrite_unlocked", "fputs", "fputc", "putc",
                "fprintf", "vfprintf", "__fprintf_chk", "__vfprintf_chk"}
OPTIONAL_KEYS = ("fd", "offset", "size", "bytes")


class StdioTest(dltest.TraceTestCase):

    def run_program(self, name):
        p = self.run_traced([dltest.program(name), self.data])
        lines = p.stdout.splitlines()
        expected = [dltest.parse_fields(l) for l in lines if l.startswith("EV\t")]
        self.assertIn("FORT\t%d" % (name.endswith("_fortify")), lines)
        trace = self.decode()
        return expected, trace.under(self.data), trace

    def check_exact(self, name, names):
        expected, events, trace = self.run_program(name)
        self.assertEqual({e["name"] for e in expected if e["name"] != "open"},
                         names)
        summary = "\n".join(str(e) for e in events)
        self.assertEqual([e["name"] for e in events],
                         [e["name"] for e in expected], summary)
        for i, (want, e) in enumerate(zip(expected, events)):
            self.assertEqual({k: e.get(k) for k in want}, want,
                             "event %d: %s" % (i, e))
            for key in OPTIONAL_KEYS:
                if key not in want:
                    self.assertNotIn(key, e, "event %d: %s" % (i, e))
            self.assertEqual(e["cat"], "posix" if want["name"] == "open"
                             else "stdio", e)
            self.assertNotIn("nested", e)
        # One fread is one event: glibc's own read/write/lseek system calls
        # inside the streams leave no posix event; the only posix event on
        # these files is the program's open() before fdopen.
        posix = [e for e in events if e["cat"] == "posix"]
        self.assertEqual([e["name"] for e in posix], ["open"], posix)
        return expected, events, trace

    def test_every_call_exact(self):
        expected, events, _ = self.check_exact("stdio_all", PLAIN_NAMES)
        # A few values stated independently of the program's own reckoning.
        a = os.path.join(self.data, "a.bin")
        b = os.path.join(self.data, "b.txt")
        reads = [(e["name"], e["offset"], e["size"], e["bytes"], e["ret"])
                 for e in events if e["path"] == a and e["name"] in
                 ("fread", "fread_unlocked")]
        self.assertEqual(reads, [
            ("fread", 0, 500, 500, 500),
            ("fread", 500, 64, 64, 64),
            ("fread_unlocked", 1000, 2000, 300, 3),   # 3 whole items
            ("fread", 1300, 100, 0, 0),               # end of file
            ("fread", 1250, 60, 50, 2),               # 2 items + 10 bytes
            ("fread", 0, 777, 777, 777),
            ("fread", 0, 10, 10, 1)])
        text = [(e["name"], e["offset"], e["bytes"]) for e in events
                if e["path"] == b and e["name"] in STDIO_READS]
        self.assertEqual(text, [
            ("fgets", 0, 11), ("fgets", 11, 1), ("fgetc", 12, 1),
            ("getc", 13, 1), ("getline", 14, 13), ("getdelim", 27, 2),
            ("getdelim", 29, 6), ("fscanf", 35, 4), ("fgets", 39, 12),
            ("fgets", 51, 1), ("fgets", 52, 0), ("fgetc", 52, 0)])
        e_txt = os.path.join(self.data, "e.txt")
        tail = [(e["name"], e["offset"], e["size"], e["bytes"]) for e in events
                if e["path"] == e_txt and e["name"] in ("fwrite", "fputs", "fgets")]
        self.assertEqual(tail, [
            ("fwrite", 0, 100, 100), ("fwrite", 100, 6, 6),
            ("fwrite", 106, 5, 5), ("fputs", 111, 3, 3),   # "a+": at the end
            ("fgets", 100, 100, 6)])                       # "ab\0cd\n"
        self.assertEqual(os.path.getsize(e_txt), 114)
        self.assertEqual(os.path.getsize(a), 1300)
        self.assertEqual(os.path.getsize(os.path.join(self.data, "d.bin")), 4096)

    def test_fortified_calls(self):
        exe = dltest.program("stdio_all_fortify")
        nm = shutil.which("nm")
        if nm:
            undefined = subprocess.run([nm, "-u", exe], stdout=subprocess.PIPE,
                                       text=True, check=True).stdout
            for fn in CHK_NAMES:
                self.assertIn(" %s@" % fn, undefined)
        names = (PLAIN_NAMES - {"fprintf", "vfprintf"}) | CHK_NAMES
        self.check_exact("stdio_all_fortify", names)

    def check_stdout_calls(self, name, printf):
        p = self.run_traced([dltest.program(name), self.data])
        lines = p.stderr.splitlines()
        self.assertIn("FORT\t%d" % (name.endswith("_fortify")), lines)
        expected = [dltest.parse_fields(l) for l in lines if l.startswith("EV\t")]
        events = self.decode().under(self.data)
        self.assertEqual([e["name"] for e in events], [e["name"] for e in expected])
        for i, (want, e) in enumerate(zip(expected, events)):
            self.assertEqual({k: e.get(k) for k in want}, want, "event %d: %s" % (i, e))
        self.assertIn(printf, [e["name"] for e in events])
        with open(os.path.join(self.data, "out.txt")) as f:
            self.assertEqual(f.read(), "3 lines of text\nx=42\nhello\n!abc")
        with open(os.path.join(self.data, "fd.txt")) as f:
            self.assertEqual(f.read(), "step 1 of 10\nloss 0.25\ntail\n")

    def test_stdout_printf_scanf_dprintf(self):
        # printf, vprintf, puts, putchar and the unlocked character writes on
        # a stdout reopened onto a file; scanf, vscanf, getchar and the
        # unlocked character reads on a stdin reopened onto one;
        # dprintf and vdprintf (a write() after them lands where they left
        # the fd); vfscanf, fgets_unlocked, fputs_unlocked.
        self.check_stdout_calls("stdio_stdout", "printf")

    def test_stdout_printf_fortified(self):
        self.check_stdout_calls("stdio_stdout_fortify", "__printf_chk")
        # Sizes known only at run time: the fortified unlocked reads.
        names = {e["name"] for e in self.decode().under(self.data)}
        self.assertLessEqual({"__fread_unlocked_chk", "__fgets_unlocked_chk"}, names)

    def test_streams_over_append_fds(self):
        # `prog >> log` and fdopen(fd, "w") of an O_APPEND fd: the writes
        # land at the file's end, whatever the stream's position says.
        p = self.run_traced([dltest.program("stdio_append"), self.data])
        want = [dltest.parse_fields(l) for l in p.stderr.splitlines() if l.startswith("EV\t")]
        self.assertEqual(len(want), 4, p.stderr)
        got = [e for e in self.decode().under(self.data)
               if e["cat"] == "stdio" and e["name"] in ("fputs", "fprintf", "fwrite")]
        self.assertEqual([{k: e.get(k) for k in w} for e, w in zip(got, want)], want, got)
        self.assertEqual(len(got), len(want), got)
        with open(os.path.join(self.data, "out.log")) as f:
            self.assertEqual(f.read(), "." * 10 + "abc\ndefg5\n")

    def test_threads_on_one_stream(self):
        # Each call's offset is read under the stream's lock, with the call:
        # another thread's call cannot come between them.
        path = os.path.join(self.data, "shared.bin")
        p = self.run_traced([dltest.program("stdio_threads"), path])
        self.assertEqual(p.stdout.split(), ["SIZE", "400000"])
        trace = self.decode()
        offsets = sorted(e["offset"] for e in trace.on(path) if e["name"] == "fwrite")
        self.assertEqual(offsets, list(range(0, 400000, 4)))

    def test_errno_only_when_the_call_set_it(self):
        # A stream's error flag stays set until clearerr: a later call that
        # failed or came up short without setting errno was recorded with
        # whatever errno the program had ("errno":1234). The program sets
        # errno to 1234 before each call and says what the call left.
        path = os.path.join(self.data, "lines.txt")
        with open(path, "w") as f:
            f.write("0123456789\n" * 2)
        p = self.run_traced([dltest.program("stdio_errno"), path])
        untraced = dltest.run([dltest.program("stdio_errno"), path], dltest.base_env())
        # The program's errno after each call as untraced (the tracer starts
        # a stream's call from errno 0 and puts the program's back).
        self.assertEqual(p.stdout, untraced.stdout)
        calls = [l.split()[1:] for l in p.stdout.splitlines() if l.startswith("CALL ")]
        self.assertEqual(len(calls), 8, p.stdout)
        events = [e for e in self.decode().on(path) if e["name"] not in ("fopen", "fclose")]
        self.assertEqual([e["name"] for e in events], [c[0] for c in calls])
        for (name, ret, err), e in zip(calls, events):
            failed = (int(ret) == -1 if name in ("getline", "fgetc", "fgets")
                      else e.get("bytes", 0) < e["size"])
            want = int(err) if failed and int(err) != 1234 else 0
            self.assertEqual(e.get("errno", 0), want, (name, ret, err, e))
        # The first fwrite set the flag (EBADF); the second one failed anew,
        # and the third, with errno EBADF already (a retry failing as before:
        # recorded with none when errno was taken as the call's only where it
        # changed).
        self.assertEqual([e.get("errno", 0) for e in events if e["name"] == "fwrite"],
                         [9, 9, 9])

    def test_streams_name_their_fds_files(self):
        expected, events, _ = self.run_program("stdio_all")
        c = os.path.join(self.data, "c.txt")
        b = os.path.join(self.data, "b.txt")
        d = os.path.join(self.data, "d.bin")
        # freopen moves the stream (and its fd) to b.txt: every later event
        # on that stream names b.txt, not c.txt.
        on_c = [e["name"] for e in events if e["path"] == c]
        self.assertEqual(on_c, ["fopen"])
        # freopen(NULL, "r", g) reopens g.bin on the same fd.
        reopen = [e for e in events if e["name"] == "freopen"]
        self.assertEqual([e["path"] for e in reopen], [b, os.path.join(self.data, "g.bin")])
        # A failed freopen closed f.txt's fd, which a pipe then got: its 10
        # writes and reads are no events of f.txt's.
        on_f = [e["name"] for e in events if e["path"] == os.path.join(self.data, "f.txt")]
        self.assertEqual(on_f, ["fopen"])
        # fdopen: the stream's events carry the fd's path and number.
        opened = [e for e in events if e["name"] == "open"][0]
        on_d = [e for e in events if e["path"] == d]
        self.assertEqual([e["name"] for e in on_d],
                         ["open", "fdopen", "fwrite", "fseek", "fread",
                          "fseek", "fprintf", "fflush", "fclose"])
        self.assertEqual({e["fd"] for e in on_d}, {opened["fd"]})

    def test_summary_counts_stdio_bytes_once(self):
        expected, events, trace = self.run_program("stdio_all")
        want = collections.Counter()
        for e in expected:
            if e["name"] in STDIO_READS:
                want["read"] += e["bytes"]
            elif e["name"] in STDIO_WRITES:
                want["write"] += e["bytes"]
        got = collections.Counter()
        for e in events:
            if e["name"] in STDIO_READS:
                got["read"] += e["bytes"]
            elif e["name"] in STDIO_WRITES:
                got["write"] += e["bytes"]
        self.assertEqual(got, want)
        self.assertEqual(sum(e.get("bytes", 0) for e in events
                             if e["cat"] == "posix"), 0)

    def test_text_output(self):
        self.run_program("stdio_all")
        p = subprocess.run([dltest.DUMP, self.traces], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        a = os.path.join(self.data, "a.bin")
        lines = [l for l in p.stdout.splitlines()
                 if "fread(" in l and a in l]
        self.assertTrue(lines, p.stdout[-3000:])
        # The first fread: 500 bytes asked at offset 0, 500 moved.
        fd = [e for e in self.decode().events if e.get("path") == a][0]["fd"]
        self.assertIn("fread(%d<%s>, 500, moved 500, @0) = 500" % (fd, a),
                      lines[0])
        fwrites = [l for l in p.stdout.splitlines() if "fwrite(" in l and a in l]
        self.assertTrue(fwrites)


if __name__ == "__main__":
    dltest.main()
