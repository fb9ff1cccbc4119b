"""The reader's C ABI (include/dlprof/reader.h) from C, against dlprof-dump.

A real run (threads reading a file, and forked children reading it) is
traced; reader_capi_check then reads it through the C ABI: every event
(blocks read a few at a time) must be what `dlprof-dump --format jsonl`
lists, and the summary (each group's partial, merged last first) must be
`dlprof-dump --summary --format json` to the byte. A damaged trace decodes up
to the damage with the damage reported; a missing input is an error with a
message."""

import collections
import json
import os
import subprocess

import dltest

CHECK = os.environ.get("DLPROF_READER_CHECK", "")


class ReaderCApiTest(dltest.TraceTestCase):

    def check(self, mode, path):
        p = subprocess.run([CHECK, mode, path], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def make_traces(self):
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(os.urandom(1 << 20))
        # Small rings: many blocks per trace, so block ranges matter; one
        # run for both programs.
        env = {"DLPROF_BUFFER_KB": "64", "DLPROF_RUN_ID": "capi-test"}
        self.run_traced([dltest.program("threads_pread"), blob, "3", "3000"], env)
        self.run_traced([dltest.program("fork_children"), "0", blob, blob], env)
        return blob

    def dump(self, *args):
        p = subprocess.run([dltest.DUMP] + list(args), capture_output=True,
                           text=True, timeout=120, stdin=subprocess.DEVNULL)
        return p

    def test_events_are_dlprof_dumps(self):
        self.make_traces()
        out = self.check("events", self.traces).stdout.splitlines()
        self.assertEqual(out[-1], "status 0")
        got = collections.Counter()
        for line in out[:-1]:
            pid, tid, ts, dur, _kind, off, size, ret, err, path = line.split(" ", 9)
            got[(int(pid), int(tid), int(ts), int(dur), int(off), int(size),
                 int(ret), int(err), path)] += 1
        want = collections.Counter()
        for e in self.decode().events:
            want[(e["pid"], e["tid"], e["ts"], e["dur"], e.get("offset", -1),
                  e.get("size", 0), e["ret"], e.get("errno", 0),
                  e.get("path", "-"))] += 1
        self.assertGreater(sum(want.values()), 9000)
        self.assertEqual(got, want)

    def test_summary_is_dlprof_dumps(self):
        self.make_traces()
        p = self.check("summary", self.traces)
        self.assertIn("status 0 groups 4", p.stderr)  # a group per process
        want = self.dump("--summary", "--format", "json", self.traces)
        self.assertEqual(want.returncode, 0, want.stderr)
        self.assertEqual(p.stdout, want.stdout)
        self.assertEqual(json.loads(p.stdout)["processes"], 4)

    def test_damaged_trace_decodes_up_to_the_damage(self):
        self.make_traces()
        big = max(dltest.trace_files(self.traces), key=os.path.getsize)
        size = os.path.getsize(big)
        with open(big, "r+b") as f:
            f.truncate(size - 100)
        out = self.check("events", self.traces)
        self.assertEqual(out.stdout.splitlines()[-1], "status 3")  # DAMAGED
        self.assertIn(big, out.stderr)
        self.assertIn("byte", out.stderr)
        rows = len(out.stdout.splitlines()) - 1
        jsonl = self.dump("--format", "jsonl", self.traces)
        self.assertEqual(jsonl.returncode, 1)
        self.assertEqual(rows, len(jsonl.stdout.splitlines()))
        s = self.check("summary", self.traces)
        self.assertIn("status 3", s.stderr)
        self.assertEqual(s.stdout, self.dump("--summary", "--format", "json",
                                             self.traces).stdout)

    def test_command_lines_end_every_argument_with_a_nul(self):
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(b"x" * 4096)
        code = "import sys; open(sys.argv[1], 'rb').read()"
        argvs = [[dltest.SYSTEM_PYTHON, "-c", code, blob, "", "two words", "last"],
                 [dltest.SYSTEM_PYTHON, "-c", code, blob, " "],
                 [dltest.SYSTEM_PYTHON, "-c", code, blob, "", ""]]  # empty last ones
        for i, argv in enumerate(argvs):
            d = os.path.join(self.tmp, "t%d" % i)
            self.run_traced(argv, trace_dir=d)
            p = subprocess.run([CHECK, "cmdline", d], capture_output=True, timeout=120,
                               stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 0, p.stderr)
            lines = p.stdout.split(b"\n")
            self.assertEqual(lines[-1], b"")
            want = b"".join(a.encode() + b"\0" for a in argv)
            got = [l.split(b" ", 2) for l in lines[:-1]]
            self.assertEqual(len(got), 1, got)
            self.assertEqual(int(got[0][1]), len(want))
            self.assertEqual(got[0][2], want)

    def test_missing_input_is_an_error_with_a_message(self):
        missing = os.path.join(self.tmp, "nothing-here")
        out = self.check("open", missing).stdout
        # The path is listed (not opened), and the message names it.
        self.assertTrue(out.startswith("status 2 traces 1: "), out)
        self.assertIn("cannot open", out)
        self.assertIn(missing, out)


if __name__ == "__main__":
    import unittest
    unittest.main()
