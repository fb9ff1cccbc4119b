"""The C annotation API: nested regions with known I/O inside each
(programs/regions.c, programs/regions_cpp.cc)."""

import decimal
import json
import os
import struct
import subprocess
import unittest

import dltest.annotations as U
from dltest.perfetto import PerfettoTrace


def contains(region, event):
    return region["ts"] <= event["ts"] and event["ts"] + event["dur"] <= region["ts"] + region["dur"]


class CRegionsTest(U.AnnotTestCase):

    def setUp(self):
        super().setUp()
        for name in ("a.bin", "b.bin", "c.bin"):
            U.write_file(os.path.join(self.data, name), 70000)

    def run_regions(self, extra=None):
        p = self.run_traced([U.program("regions"), self.data], extra)
        return p

    def test_runs_unchanged_without_dlprof(self):
        p = U.run([U.program("regions"), self.data], U.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "ok active=0\n")
        self.assertEqual(p.stderr, "")

    def test_region_events_names_and_nesting(self):
        p = self.run_regions()
        self.assertEqual(p.stdout, "ok active=1\n")
        v = self.inspect()
        regions = sorted(v.app("region"), key=lambda e: (e["ts"], -e["dur"]))
        got = [(e["path"], e["aux"]) for e in regions]
        expected = [("epoch 0", 0), ("load_batch", 1), ("step", 1), ("inner", 2),
                    ("epoch 1", 0), ("load_batch", 1), ("step", 1)]
        expected += [("deep", d) for d in range(64)]  # 70 begun, 64 recorded
        self.assertEqual(got, expected)
        # Nesting by time: each region lies inside the one at depth - 1 before it.
        stack = []
        for e in regions:
            while stack and not contains(stack[-1], e):
                stack.pop()
            self.assertEqual(len(stack), e["aux"], e)
            stack.append(e)
        pid = {e["pid"] for e in v.events}
        self.assertEqual(len(pid), 1)

        marks = v.app("mark")
        self.assertEqual([(m["path"], m["aux"]) for m in marks], [("step-mark", 2)])
        counters = {c["path"]: c for c in v.app("counter")}
        self.assertEqual(counters["samples"]["aux"], 42)
        self.assertEqual(counters["samples"]["ret"], 0)
        self.assertEqual(counters["loss"]["ret"], 1)  # aux holds a double
        bits = counters["loss"]["aux"] & 0xFFFFFFFFFFFFFFFF
        self.assertEqual(struct.unpack("<d", struct.pack("<Q", bits))[0], 0.25)
        step0 = [e for e in regions if e["path"] == "step"][0]
        self.assertTrue(contains(step0, marks[0]))
        for c in counters.values():
            self.assertTrue(contains(step0, c))

    def test_io_falls_inside_the_right_region(self):
        self.run_regions()
        v = self.inspect("--innermost")
        regions = v.app("region")
        reads = v.io({"pread", "pread64"})
        self.assertEqual(len(reads), 3 + 1 + 2 + 5 + 2 + 1 + 1)

        def innermost(e):
            holding = [r for r in regions if contains(r, e) and r["tid"] == e["tid"]]
            return max(holding, key=lambda r: r["aux"]) if holding else None

        for e in reads:
            name = os.path.basename(e["path"])
            r = innermost(e)
            # By time, and the same as the decoder's assignment.
            self.assertEqual(e["region"], r["path"] if r else None, e)
            if name == "a.bin" and e["size"] == 4096:
                self.assertEqual(r["path"], "load_batch")
            elif name == "a.bin":
                self.assertEqual((r["path"], e["size"], r["aux"]), ("deep", 10, 63))
            elif name == "b.bin":
                self.assertEqual(r["path"], "step")
            elif e["size"] == 1000:
                self.assertEqual(r["path"], "inner")
            else:
                self.assertEqual((name, e["size"], r), ("c.bin", 100, None))

    def test_per_region_figures_are_exact(self):
        self.run_regions()
        v = self.inspect()  # outermost regions
        e0, e1, deep = v.stats("epoch 0"), v.stats("epoch 1"), v.stats("deep")
        self.assertEqual((e0["instances"], e0["read_ops"], e0["read_bytes"]),
                         (1, 6, 3 * 4096 + 8192 + 2 * 1000))
        self.assertEqual((e1["instances"], e1["read_ops"], e1["read_bytes"]),
                         (1, 7, 5 * 4096 + 2 * 8192))
        self.assertEqual((deep["instances"], deep["read_ops"], deep["read_bytes"]),
                         (1, 1, 10))
        self.assertIsNone(v.stats("step"))  # never outermost, no I/O of its own
        out = v.outside()
        self.assertEqual((out["read_ops"], out["read_bytes"]), (1, 100))
        # I/O time per region is the sum of its calls' durations.
        for name, row in (("epoch 0", e0), ("epoch 1", e1)):
            calls = [e for e in v.io() if e["region"] == name]
            self.assertEqual(row["io_ns"], sum(e["dur"] for e in calls))
            self.assertEqual(row["io_ops"], len(calls))

        inner = self.inspect("--innermost")
        lb, st, inn = inner.stats("load_batch"), inner.stats("step"), inner.stats("inner")
        self.assertEqual((lb["instances"], lb["read_bytes"]), (2, 8 * 4096))
        self.assertEqual((st["instances"], st["read_bytes"]), (2, 3 * 8192))
        self.assertEqual((inn["instances"], inn["read_bytes"]), (1, 2000))
        self.assertEqual(inner.stats("epoch 0")["read_bytes"], 0)

    def test_summary_streams_the_same_region_rows(self):
        # dlprof-dump --summary measures regions as it streams (RegionMeter);
        # its rows must be those of the in-memory breakdown, row for row.
        self.run_regions()
        p = subprocess.run([U.DUMP, "--summary", "--format", "json", self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = json.loads(p.stdout)["regions"]
        want = [{k: v for k, v in r.items() if k != "type"} for r in self.inspect().region_stats]
        self.assertEqual(rows, want)
        by_name = {r["name"]: r for r in rows}
        self.assertEqual((by_name["epoch 0"]["read_ops"], by_name["epoch 0"]["read_bytes"]),
                         (6, 3 * 4096 + 8192 + 2 * 1000))
        self.assertEqual(rows[-1]["outside"], True)
        self.assertEqual(rows[-1]["read_bytes"], 100)
        # The same through a filter that keeps only this process's calls.
        pid = str(self.inspect().io()[0]["pid"])
        p = subprocess.run([U.DUMP, "--summary", "--format", "json", "--pid", pid, self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["regions"], want)

    def test_exporters_label_each_call_as_they_stream(self):
        # dlprof-dump --format jsonl names each call's region as it streams
        # (EventLabels); the in-memory assignment must agree call by call.
        self.run_regions()
        v = self.inspect()
        want = {(e["pid"], e["tid"], e["ts"], e["name"]): e.get("region") for e in v.io()}
        events, rc = U.dump_jsonl(self.traces)
        self.assertEqual(rc, 0)
        got = {(e["pid"], e["tid"], e["ts"], e["name"]): e.get("region")
               for e in events if e.get("cat") in ("posix", "stdio", "mpiio")}
        self.assertEqual(got, want)
        self.assertEqual(sum(1 for r in got.values() if r == "epoch 1"),
                         v.stats("epoch 1")["io_ops"])

    def test_app_module_off_records_no_annotation(self):
        p = self.run_regions({"DLPROF_TRACE": "posix"})
        self.assertEqual(p.stdout, "ok active=0\n")
        v = self.inspect()
        self.assertEqual(v.app(), [])
        self.assertEqual(len(v.io({"pread", "pread64"})), 15)

    def test_dump_prints_app_events(self):
        self.run_regions()
        events, rc = U.dump_jsonl(self.traces)
        self.assertEqual(rc, 0)
        app = [e for e in events if e["cat"] == "app"]
        # dlprof-dump prints the catalogue name as `kind` and the region,
        # mark or counter name as `name` (docs/FORMAT.md).
        self.assertEqual(sorted({e["kind"] for e in app}), ["counter", "mark", "region"])
        regions = [e for e in app if e["kind"] == "region"]
        self.assertEqual(len(regions), 71)
        self.assertEqual(sorted({e["name"] for e in regions}),
                         ["deep", "epoch 0", "epoch 1", "inner", "load_batch", "step"])
        depth = {e["name"]: e.get("depth") for e in regions if e["name"] != "deep"}
        self.assertEqual(depth, {"epoch 0": 0, "epoch 1": 0, "load_batch": 1, "step": 1,
                                 "inner": 2})
        samples = [e for e in app if e["kind"] == "counter" and e["name"] == "samples"]
        self.assertEqual([e.get("value") for e in samples], [42])
        # dlprof_counter_double("loss", 0.25): the number, not its bits.
        loss = [e for e in app if e["kind"] == "counter" and e["name"] == "loss"]
        self.assertEqual([(e.get("value"), e["ret"]) for e in loss], [(0.25, 1)])
        text = subprocess.run([U.DUMP, self.traces], capture_output=True, text=True,
                              timeout=300)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn('counter("loss", 0.25)', text.stdout)
        self.assertIn('counter("samples", 42)', text.stdout)

    def test_timelines_draw_counters(self):
        # Each counter a counter track of its process, its samples at their
        # times with the program's values (they were slices of no length,
        # the value lost: args {"ret": 1}).
        self.run_regions()
        events, rc = U.dump_jsonl(self.traces)
        self.assertEqual(rc, 0)
        (pid,) = {e["pid"] for e in events}
        want = sorted((e["name"], e["ts"]) for e in events if e.get("kind") == "counter")
        self.assertEqual([name for name, _ in want], ["loss", "samples"])
        values = {"loss": 0.25, "samples": 42}  # what regions.c gives them

        chrome_file = os.path.join(self.tmp, "t.json")
        p = subprocess.run([U.DUMP, "--format", "chrome", "-o", chrome_file, self.traces],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(chrome_file) as f:
            doc = json.load(f, parse_float=decimal.Decimal)
        chrome = doc["traceEvents"]
        self.assertFalse([e for e in chrome if e["ph"] == "X" and e["name"] in values])
        got = sorted((e["name"], int(decimal.Decimal(e["ts"]) * 1000), e["args"]["value"])
                     for e in chrome if e["ph"] == "C" and e["name"] in values)
        self.assertEqual(got, [(n, ts, values[n]) for n, ts in want])
        self.assertEqual({e["pid"] for e in chrome if e["ph"] == "C" and e["name"] in values},
                         {pid})

        perfetto_file = os.path.join(self.tmp, "t.pftrace")
        p = subprocess.run([U.DUMP, "--format", "perfetto", "-o", perfetto_file, self.traces],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(perfetto_file, "rb") as f:
            trace = PerfettoTrace(f.read())
        self.assertFalse([s for s in trace.slices if s["name"] in values])
        got = []
        for uuid, samples in trace.counters.items():
            t = trace.tracks[uuid]
            if t["name"] in values:
                self.assertEqual(trace.tracks[trace.process_of(uuid)].get("pid"), pid)
                got += [(t["name"], ts, v) for ts, v in samples]
        self.assertEqual(sorted(got), [(n, ts, values[n]) for n, ts in want])

    def test_cpp_scopes(self):
        path = U.write_file(os.path.join(self.data, "x.bin"), 4096)
        p = self.run_traced([U.program("regions_cpp"), path])
        self.assertEqual(p.stdout, "ok active=1\n")
        v = self.inspect("--innermost")
        got = sorted((e["ts"], e["path"], e["aux"]) for e in v.app("region"))
        self.assertEqual([(n, d) for _, n, d in got], [("outer", 0), ("inner", 1)])
        self.assertEqual([(m["path"], m["aux"]) for m in v.app("mark")], [("after inner", 1)])
        reads = sorted(v.io({"pread", "pread64"}), key=lambda e: e["ts"])
        self.assertEqual([(e["size"], e["region"]) for e in reads],
                         [(100, "outer"), (200, "inner")])
        p = U.run([U.program("regions_cpp"), path], U.base_env())
        self.assertEqual((p.returncode, p.stdout), (0, "ok active=0\n"))

    def fork_exit_run(self, mode):
        path = U.write_file(os.path.join(self.data, "f.bin"), 65536)
        p = self.run_traced([U.program("region_fork_exit"), mode, path])
        told = dict(kv.split("=") for kv in p.stdout.split())
        return {k: int(v) for k, v in told.items()}, self.inspect()

    def test_region_open_across_fork_is_the_parents_once(self):
        # The child ends its copy of "work" (begun in the parent before the
        # child existed): recorded once, the parent's, as long as the parent
        # measured it; it was twice (the child's copy from the parent's begin).
        told, v = self.fork_exit_run("fork")
        work = [e for e in v.app("region") if e["path"] == "work"]
        self.assertEqual(len(work), 1, work)
        self.assertLessEqual(told["work_in"], work[0]["dur"])
        self.assertLessEqual(work[0]["dur"], told["work_out"])
        own = [e for e in v.app("region") if e["path"] == "child_own"]
        self.assertEqual(len(own), 1, own)  # the child's begins and ends still match
        self.assertNotEqual(own[0]["pid"], work[0]["pid"])
        self.assertLessEqual(told["child_in"], own[0]["dur"])
        self.assertLessEqual(own[0]["dur"], told["child_out"])
        # The child works for its parent: its reads fall in the parent's region.
        reads = v.io({"pread", "pread64"})
        self.assertEqual(sorted((e["pid"] == own[0]["pid"], e["region"]) for e in reads),
                         [(False, "work")] * 2 + [(True, "work")] * 4)

    def test_region_open_at_exit_ends_there(self):
        # exit() inside "train_open": the region ends at the exit, holding
        # its reads; it was dropped and its reads outside every region.
        told, v = self.fork_exit_run("exit")
        got = [e for e in v.app("region") if e["path"] == "train_open"]
        self.assertEqual(len(got), 1, v.app("region"))
        self.assertGreaterEqual(got[0]["dur"], told["open_in"])
        self.assertLess(got[0]["dur"], told["open_in"] + 200_000_000)
        reads = v.io({"pread", "pread64"})
        self.assertEqual([e["region"] for e in reads], ["train_open"] * 8)


if __name__ == "__main__":
    unittest.main(verbosity=2)
