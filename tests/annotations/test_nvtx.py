"""NVTX ranges and marks recorded through NVTX_INJECTION64_PATH
(programs/nvtx_ranges.c, NVTX 3 header-only; no GPU needed)."""

import json
import os
import unittest

import dltest.annotations as U


@unittest.skipUnless(U.HAVE_NVTX, "the NVTX 3 headers were not found at build time")
class NvtxTest(U.AnnotTestCase):

    def setUp(self):
        super().setUp()
        self.file = U.write_file(os.path.join(self.data, "in.bin"), 4096)

    def test_runs_unchanged_without_dlprof(self):
        p = U.run([U.program("nvtx_ranges"), self.file], U.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("ok depth="), p.stdout)

    def test_ranges_marks_and_io_inside(self):
        p = self.run_traced([U.program("nvtx_ranges"), self.file])
        self.assertEqual(p.stdout, "ok depth=1\n")  # RangePush returns the level
        v = self.inspect("--nvtx", "--innermost")
        ranges = sorted(v.app("nvtx_range"), key=lambda e: e["ts"])
        self.assertEqual([(e["path"], e["aux"]) for e in ranges],
                         [("outer", 0), ("inner", 1), ("async", 0), ("registered", 0),
                          ("wide \u00e9", 0)])
        main_tid = ranges[0]["tid"]
        async_range = ranges[2]
        self.assertNotEqual(async_range["tid"], main_tid)  # ended on another thread
        self.assertEqual([m["path"] for m in v.app("nvtx_mark")], ["checkpoint"])
        reads = sorted((e for e in v.io({"pread", "pread64"}) if e.get("path") == self.file),
                       key=lambda e: e["ts"])
        self.assertEqual([(e["size"], e["region"]) for e in reads],
                         [(100, "outer"), (200, "inner"), (300, "async"), (400, "registered")])
        for r in reads:
            holder = [x for x in ranges if x["path"] == r["region"]][0]
            self.assertTrue(holder["ts"] <= r["ts"] and
                            r["ts"] + r["dur"] <= holder["ts"] + holder["dur"])

    def test_summary_regions_are_the_nvtx_ranges(self):
        # No annotation regions: the summary's rows are the NVTX ranges, the
        # same as the in-memory breakdown's.
        self.run_traced([U.program("nvtx_ranges"), self.file])
        p = U.run([U.DUMP, "--summary", "--format", "json", self.traces], U.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = json.loads(p.stdout)["regions"]
        want = [{k: v for k, v in r.items() if k != "type"} for r in self.inspect().region_stats]
        self.assertEqual(rows, want)
        # The jsonl, streamed, labels each call as the in-memory assignment.
        v = self.inspect()
        want = {(e["pid"], e["tid"], e["ts"], e["name"]): e.get("region") for e in v.io()}
        events, rc = U.dump_jsonl(self.traces)
        self.assertEqual(rc, 0)
        got = {(e["pid"], e["tid"], e["ts"], e["name"]): e.get("region")
               for e in events if e.get("cat") in ("posix", "stdio")}
        self.assertEqual(got, want)
        self.assertIn("registered", got.values())
        # Outermost: the read in "inner" counts in "outer".
        self.assertEqual([(r["name"], r["read_bytes"]) for r in rows if r["read_ops"] > 0],
                         [("outer", 300), ("async", 300), ("registered", 400)])

    def test_the_tracer_sets_the_injection_variable_only_if_unset(self):
        # Another tool's injection stays; the program still runs.
        other = os.path.join(self.tmp, "other-tool.so")
        p = self.run_traced([U.program("nvtx_ranges"), self.file],
                            {"NVTX_INJECTION64_PATH": other, "DLPROF_QUIET": None})
        self.assertIn("NVTX_INJECTION64_PATH is already set", p.stderr)
        v = self.inspect()
        self.assertEqual(v.app("nvtx_range"), [])

    def test_push_pop_nest_per_domain(self):
        # Domain A's pop ends A's range though B pushed since (NVTX nests
        # per domain): a_range 10 ms and b_range 30 ms by the program's
        # clock; one stack for all domains recorded 30 and 10 (the pop of A
        # ended b_range) and returned level 1 for it.
        p = self.run_traced([U.program("nvtx_domains")])
        told = {k: int(v) for k, v in (kv.split("=") for kv in p.stdout.split())}
        self.assertEqual((told["push_b"], told["pop_a"], told["pop_b"]), (0, 0, 0))
        v = self.inspect()
        got = {e["path"]: e for e in v.app("nvtx_range")}
        self.assertEqual(sorted(got), ["a_range", "b_range", "outer"])
        for name, key in (("a_range", "a_ns"), ("b_range", "b_ns")):
            # (Half the program's time, not a few ms less: robust on a loaded
            # machine, and the swapped ranges, 30 ms for 10 and 10 for 30,
            # still fail one bound or the other.)
            self.assertLessEqual(got[name]["dur"], told[key], name)
            self.assertGreater(got[name]["dur"], told[key] // 2, name)
            self.assertEqual(got[name]["aux"], 0, name)  # the first of its domain

    def test_app_module_off(self):
        self.run_traced([U.program("nvtx_ranges"), self.file], {"DLPROF_TRACE": "posix"})
        v = self.inspect()
        self.assertEqual(v.app(), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
