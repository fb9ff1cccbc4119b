"""More distinct paths than the string table first held.

The tracer interns each path once; its table used to stop at 2^20 strings,
and every file first seen after that was dropped as if excluded: its open,
reads and writes vanished with no warning and "0 dropped" (ImageNet-1k has
1.28 M files). programs/manypaths.c stats N distinct missing paths, then the
first R again, then opens, writes, seeks, reads and closes three real files,
and three more through stdio, and prints what it did.

At a cap lowered for the test (DLPROF_MAX_STRINGS, every level of the table
filled): what is recorded plus what is counted dropped is what the program
did, paths seen before the table filled are still recorded, and the tracer
says once that it is full. At the default cap: 1.1 M paths, all recorded.
"""

import re

import dltest
import dltest.reliability as rtest

FULL_LINE = "string table full"


class ManyPathsTest(rtest.RelTestCase):

    def run_paths(self, n, again, **env):
        p = self.run_traced([rtest.program("manypaths"), self.data, str(n), str(again)],
                            env=env, quiet=False, timeout=150)
        m = re.search(r"STATS (\d+) MISSING (\d+) IO_CALLS (\d+) READ (\d+)", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        did = dict(zip(("stats", "missing", "io_calls", "read"), map(int, m.groups())))
        self.assertEqual((did["stats"], did["missing"]), (n + again, n + again))
        check = self.check()
        self.assert_clean(check)
        self.assertEqual(len(check["processes"]), 1)
        proc = check["processes"][0]
        exit_line = re.search(r"dlprof: trace .*: (\d+) events written, (\d+) dropped", p.stderr)
        self.assertIsNotNone(exit_line, p.stderr)
        self.assertEqual((int(exit_line.group(1)), int(exit_line.group(2))),
                         (proc["events"], proc["dropped"]))
        return did, proc, p.stderr

    def test_full_table_drops_are_counted_and_said(self):
        n, again = 2000, 100
        # 850 strings: levels of 10, 40, 160 and 640.
        did, proc, stderr = self.run_paths(n, again, DLPROF_MAX_STRINGS="850")
        kinds = proc["kinds"]
        # Every call is either in the trace or counted dropped.
        # (And the record of how the process ended.)
        self.assertEqual(proc["events"] + proc["dropped"], did["stats"] + did["io_calls"] + 1)
        # (stdio's calls too: they were neither recorded nor counted.)
        names = ("stat", "open", "write", "lseek", "read", "close",
                 "fopen", "fwrite", "fseek", "fread", "fclose", "exit")
        self.assertEqual(sum(kinds.get(k, 0) for k in names), proc["events"])
        # The table filled (at most 850 paths kept) ...
        self.assertLessEqual(kinds.get("stat", 0), 850 + again)
        self.assertGreater(proc["dropped"], n - 850)
        # ... the first paths, kept in its first level, are recorded again
        # when stat'ed after it filled; the real files came too late.
        self.assertGreaterEqual(kinds.get("stat", 0), again + 700)
        self.assertEqual(kinds.get("read", 0) + kinds.get("fread", 0), 0)
        lines = [l for l in rtest.tracer_lines(stderr) if FULL_LINE in l]
        self.assertEqual(len(lines), 1, stderr[-2000:])
        trace = self.decode(clean=False, keep=lambda e: False)
        self.assertEqual(list(rtest.dropped_from_warnings(trace.dump_stderr).values()),
                         [proc["dropped"]])

    def test_annotations_the_full_table_drops_are_counted(self):
        # 3,000 regions, each with a mark, of names of their own (through the
        # C API: ctypes on the preloaded library) at a table of 850 strings:
        # those it had no room for were neither recorded nor counted ("0
        # dropped" for 2,300 regions lost).
        n = 3000
        script = ("import ctypes\n"
                  "lib = ctypes.CDLL(None)\n"
                  "for i in range(%d):\n"
                  "    name = b'region-%%d' %% i\n"
                  "    lib.dlprof_region_begin(name)\n"
                  "    lib.dlprof_mark(name)\n"
                  "    lib.dlprof_region_end()\n" % n)
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-S", "-c", script],
                            env={"DLPROF_MAX_STRINGS": "850", "DLPROF_PYTHON": "0"},
                            quiet=False, timeout=60)
        check = self.check()
        (proc,) = check["processes"]
        kinds = proc["kinds"]
        recorded = kinds.get("region", 0) + kinds.get("mark", 0)
        self.assertLess(kinds.get("region", 0), 850)
        # Every annotation is in the trace or counted (the interpreter's own
        # calls on files first seen after the table filled are counted too).
        self.assertGreaterEqual(recorded + proc["dropped"], 2 * n)

    def test_more_than_a_million_paths_at_the_default(self):
        n, again = 1100000, 1000
        did, proc, stderr = self.run_paths(n, again)
        self.assertEqual(proc["dropped"], 0)
        kinds = proc["kinds"]
        self.assertEqual(kinds.get("stat", 0), did["stats"])
        self.assertEqual((kinds.get("open", 0), kinds.get("read", 0), kinds.get("write", 0),
                          kinds.get("close", 0)), (3, 3, 3, 3))
        self.assertEqual(tuple(kinds.get(k, 0) for k in ("fopen", "fwrite", "fseek", "fread",
                                                          "fclose")), (3, 3, 3, 3, 3))
        self.assertNotIn(FULL_LINE, stderr)
        # The last paths (ids past 2^20) decode with their names.
        last = "%s/train/n%05d/img_%08d.JPEG" % (self.data, (n - 1) // 1000, n - 1)
        real = "%s/real_2.bin" % self.data
        trace = self.decode(keep=lambda e: e.get("path") in (last, real))
        self.assertEqual(sorted(e["name"] for e in trace.events if e["path"] == real),
                         ["close", "lseek", "open", "read", "write"])
        self.assertEqual([e["name"] for e in trace.events if e["path"] == last], ["stat"])


if __name__ == "__main__":
    dltest.main()
