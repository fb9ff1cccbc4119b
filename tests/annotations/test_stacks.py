"""DLPROF_STACKS=1: the native call stack of each I/O call, deduplicated in
the trace and symbolised offline (programs/two_callers.c)."""

import json
import os
import sys
import unittest

import dltest.annotations as U


class StacksTest(U.AnnotTestCase):

    def setUp(self):
        super().setUp()
        self.file = U.write_file(os.path.join(self.data, "in.bin"), 65536)

    def reads(self, v):
        return sorted((e for e in v.io({"read"}) if e.get("path") == self.file),
                      key=lambda e: e["ts"])

    def check_two_callers(self, v, expect_pids=1):
        reads = self.reads(v)
        self.assertEqual(len(reads), 8)
        for e in reads:
            self.assertIn("stack", e, e)
        alpha = [e for e in reads if e["size"] == 4096]
        beta = [e for e in reads if e["size"] == 1000]
        self.assertEqual((len(alpha), len(beta)), (3, 5))
        for group, caller, loader in ((alpha, "reader_alpha", "load_alpha"),
                                      (beta, "reader_beta", "load_beta")):
            stacks = {tuple(e["stack"]) for e in group}
            self.assertEqual(len(stacks), 1, stacks)  # one call site, one stack
            stack = stacks.pop()
            self.assertTrue(stack[0].startswith(caller + " (two_callers+0x"), stack)
            self.assertTrue(stack[1].startswith(loader + " (two_callers+0x"), stack)
            self.assertTrue(any(f.startswith("main (two_callers+0x") for f in stack), stack)
            self.assertTrue(any("libc.so" in f for f in stack), stack)
            self.assertFalse(any("libdlprof" in f for f in stack), stack)
            self.assertEqual({e["site"] for e in group}, {caller + " (two_callers)"})
        self.assertNotEqual(alpha[0]["stack"], beta[0]["stack"])
        self.assertEqual(len({e["pid"] for e in reads}), expect_pids)
        # The summary's call sites: exact bytes per caller.
        sites = {c["site"]: c for c in v.call_sites if c["by"] == "function"}
        self.assertEqual((sites["reader_alpha (two_callers)"]["bytes"],
                          sites["reader_alpha (two_callers)"]["ops"]), (3 * 4096, 3))
        self.assertEqual((sites["reader_beta (two_callers)"]["bytes"],
                          sites["reader_beta (two_callers)"]["ops"]), (5 * 1000, 5))
        modules = {c["site"]: c for c in v.call_sites if c["by"] == "module"}
        self.assertEqual(modules["two_callers"]["bytes"], 3 * 4096 + 5 * 1000)

    def check_summary_sites(self, v):
        # dlprof-dump --summary streams (CallSiteMeter): its call sites must
        # be the in-memory ones, row for row.
        p = U.run([U.DUMP, "--summary", "--format", "json", self.traces], U.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout)["call_sites"]
        def rows(by, key):
            r = [{k: c[k] for k in ("site", "ops", "bytes", "time_ns", "read_bytes",
                                    "write_bytes")} for c in v.call_sites if c["by"] == by]
            r.sort(key=lambda c: (-c[key], c["site"]))
            return r[:10]
        self.assertEqual(got["by_bytes"], rows("function", "bytes"))
        self.assertEqual(got["by_time"], rows("function", "time_ns"))
        self.assertEqual(got["by_module"], rows("module", "bytes"))
        self.assertIn("reader_alpha (two_callers)", [c["site"] for c in got["by_bytes"]])

    def check_exported_stacks(self, v):
        # dlprof-dump --format jsonl attaches stacks as it streams
        # (EventLabels over a first pass that symbolises each distinct
        # stack): the same stack on every event as the in-memory index.
        want = {(e["pid"], e["tid"], e["ts"], e["name"]): e["stack"]
                for e in v.events if "stack" in e}
        events, rc = U.dump_jsonl(self.traces)
        self.assertEqual(rc, 0)
        got = {(e["pid"], e["tid"], e["ts"], e["name"]): e["stack"]
               for e in events if "stack" in e}
        self.assertEqual(got, want)
        self.assertGreaterEqual(len(got), 10)

    def test_two_call_paths(self):
        self.run_traced([U.program("two_callers"), self.file], {"DLPROF_STACKS": "1"})
        self.check_two_callers(self.inspect())
        self.check_summary_sites(self.inspect())
        self.check_exported_stacks(self.inspect())
        # The ELF symbol tables alone are enough for these names.
        self.check_two_callers(self.inspect("--no-addr2line"))

    def test_repeated_stacks_are_stored_once(self):
        self.run_traced([U.program("two_callers"), self.file], {"DLPROF_STACKS": "1"})
        v = self.inspect()
        with_stack = [e for e in v.events if "stack" in e]
        self.assertGreaterEqual(len(with_stack), 10)  # open, 8 reads, close
        distinct = {tuple(e["stack"]) for e in with_stack}
        self.assertLessEqual(v.totals["stacks"], len(distinct))
        self.assertLessEqual(len(distinct), 4)

    def test_forked_child_describes_its_modules_again(self):
        self.run_traced([U.program("two_callers"), self.file, "fork"], {"DLPROF_STACKS": "1"})
        self.assertEqual(len(U.trace_files(self.traces)), 2)
        self.check_two_callers(self.inspect(), expect_pids=2)
        self.check_summary_sites(self.inspect())
        self.check_exported_stacks(self.inspect())

    def test_off_by_default(self):
        self.run_traced([U.program("two_callers"), self.file])
        v = self.inspect()
        self.assertEqual(v.totals["stacks"], 0)
        self.assertFalse(any("stack" in e for e in v.events))
        events, rc = U.dump_jsonl(self.traces)
        self.assertEqual(rc, 0)
        kinds = {e.get("kind", e["name"]) for e in events}
        self.assertNotIn("call_stack", kinds)
        self.assertNotIn("module", kinds)

    def test_python_reads_have_native_stacks(self):
        script = os.path.join(self.tmp, "r.py")
        with open(script, "w") as f:
            f.write("import os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
                    "for i in range(3):\n    os.pread(fd, 100, 0)\n")
        self.run_traced([sys.executable, script, self.file], {"DLPROF_STACKS": "1"})
        v = self.inspect()
        reads = [e for e in v.io({"pread", "pread64"}) if e.get("path") == self.file]
        self.assertEqual(len(reads), 3)
        for e in reads:
            self.assertTrue(e.get("stack"), e)
            self.assertTrue(any("python" in f for f in e["stack"]), e["stack"])
        self.assertEqual(len({tuple(e["stack"]) for e in reads}), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
