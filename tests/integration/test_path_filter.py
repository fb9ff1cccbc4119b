"""Path filter: DLPROF_INCLUDE / DLPROF_EXCLUDE prefixes and the default
exclusion of system directories.

programs/read_files.c reads each file it is given to the end; the trace must
hold the reads of exactly the files the filter lets through, with all their
bytes.
"""

import os
import re

import dltest

SYSTEM_FILE = "/etc/passwd"
USR_FILE = "/usr/include/stdio.h"


class PathFilterTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.kept = dltest.write_files(os.path.join(self.data, "kept"), 3,
                                       lambda i: 5000 + i)
        self.skipped = dltest.write_files(os.path.join(self.data, "skipped"), 3,
                                          lambda i: 7000 + i)
        self.usr_file = USR_FILE if os.path.exists(USR_FILE) else "/usr/bin/env"

    def read_and_trace(self, paths, env=None):
        p = self.run_traced([dltest.program("read_files")] + paths, env=env)
        done = {path: int(n) for path, n in re.findall(r"^READ (\S+) (\d+)$",
                                                       p.stdout, re.M)}
        self.assertEqual(set(done), set(paths))
        trace = self.decode()
        return done, dltest.bytes_by_path(trace.events), trace

    def test_default_skips_system_directories(self):
        paths = [SYSTEM_FILE, self.usr_file] + sorted(self.kept)
        done, read, trace = self.read_and_trace(paths)
        self.assertEqual(read, self.kept)
        for e in trace.events:
            for prefix in ("/etc/", "/usr/", "/proc/", "/lib/"):
                self.assertFalse(e.get("path", "").startswith(prefix), e)

    def test_include_root_traces_everything(self):
        paths = [SYSTEM_FILE, self.usr_file] + sorted(self.kept)
        done, read, trace = self.read_and_trace(paths, env={"DLPROF_INCLUDE": "/"})
        self.assertEqual(read[SYSTEM_FILE], done[SYSTEM_FILE])
        self.assertEqual(read[self.usr_file], done[self.usr_file])
        self.assertEqual(read[SYSTEM_FILE], os.path.getsize(SYSTEM_FILE))
        for path, size in self.kept.items():
            self.assertEqual(read[path], size)

    def test_exclude_prefix(self):
        paths = sorted(self.kept) + sorted(self.skipped)
        done, read, trace = self.read_and_trace(
            paths, env={"DLPROF_EXCLUDE": os.path.join(self.data, "skipped")})
        self.assertEqual(read, self.kept)
        self.assertEqual(trace.under(os.path.join(self.data, "skipped")), [])

    def test_prefix_matches_whole_components(self):
        # "…/skip" must not exclude "…/skipped".
        paths = sorted(self.kept) + sorted(self.skipped)
        done, read, _ = self.read_and_trace(
            paths, env={"DLPROF_EXCLUDE": os.path.join(self.data, "skip") + ":/nothing"})
        self.assertEqual(read, dict(self.kept, **self.skipped))

    def test_include_wins_over_exclude(self):
        keep_one = sorted(self.skipped)[0]
        paths = sorted(self.kept) + sorted(self.skipped)
        done, read, _ = self.read_and_trace(paths, env={
            "DLPROF_EXCLUDE": os.path.join(self.data, "skipped"),
            "DLPROF_INCLUDE": keep_one})
        self.assertEqual(read, dict(self.kept, **{keep_one: self.skipped[keep_one]}))

    def test_exclude_of_no_path_keeps_the_default(self):
        # DLPROF_EXCLUDE whose every entry is no absolute path is a bad
        # value: warned about, and the system directories stay excluded (it
        # once emptied the list: /etc and /usr were traced).
        paths = [SYSTEM_FILE, self.usr_file] + sorted(self.kept)
        for n, value in enumerate(("garbage", "relative/dir:data.txt")):
            with self.subTest(value=value):
                traces = os.path.join(self.tmp, "traces%d" % n)
                p = self.run_traced([dltest.program("read_files")] + paths,
                                    env={"DLPROF_EXCLUDE": value}, trace_dir=traces, quiet=False)
                trace = self.decode(traces)
                self.assertEqual(dltest.bytes_by_path(trace.events), self.kept)
                self.assertEqual(trace.under("/etc"), [])
                self.assertEqual(trace.under("/usr"), [])
                self.assertIn("ignoring DLPROF_EXCLUDE='%s'" % value, p.stderr)
                self.assertIn("using the default (/proc", p.stderr)

    def test_trace_directory_is_never_traced(self):
        os.makedirs(self.traces)
        inside = os.path.join(self.traces, "notes.txt")
        with open(inside, "w") as f:
            f.write("not a trace\n")
        paths = [inside] + sorted(self.kept)
        done, read, _ = self.read_and_trace(paths, env={"DLPROF_INCLUDE": "/"})
        self.assertNotIn(inside, read)
        for path, size in self.kept.items():
            self.assertEqual(read[path], size)


if __name__ == "__main__":
    dltest.main()
