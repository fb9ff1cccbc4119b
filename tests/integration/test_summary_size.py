"""The summary of a run that imports torch (issue 31, items 3 and 4), and of
a job of more processes than --top (issue 37).

One data loop (scripts/import_heavy.py: 64 files of 16 KiB, each read in
four 4 KiB preads by two forked workers, two epochs) is traced twice: in a
torch DataLoader, with the imports traced as a virtual environment's are
(thousands of code files: Debian's torch lives under /usr, which the tracer
leaves out by default, so the test includes it), and in a plain
multiprocessing pool. Checked:

- the summary JSON is at most 256 KiB and the HTML report at most 1.5 MiB
  with the default --top (before: every code file and directory, several
  MiB); each list holds its top entries and "left_out" counts the rest, so
  that listed + left out = every file; --details lists every file; no
  directory of other paths is a file row;
- the report of that run loads in headless Chromium: its file table leads
  with the data set, and its bandwidth plot is binned to the loop's length
  (bins of milliseconds, not one bar per second);
- the classes: the data class is exactly the data set (torch's shared
  memory /dev/shm/torch_*, multiprocessing's /tmp/pymp-* are system files),
  and the figures the data-set rules count (files, opens, lookups, reads,
  bytes, small reads) are the same with and without the imports; the
  imports are the "startup" finding, with its time, and no metadata finding
  (the torch run's imports wait 2 ms an open, as on a parallel file system).
"""

import json
import os
import re
import shutil
import tempfile
import unittest

import dltest
import test_html_report
from dltest.pytorch import TorchTestCase

SCRIPT = dltest.script("import_heavy.py")
FILES, SIZE, EPOCHS = 64, 16384, 2
# Debian's python3-torch and the standard library: a venv or conda
# environment elsewhere is traced by default.
IMPORTS = "/usr/lib/python3:/usr/lib/python3.11"
KIB = 1024
# Each open under IMPORTS waits 2 ms (preload/slow_imports.c), as on a
# parallel file system: the imports' I/O is then a good part of the
# start-up however loaded the machine, as it is for a job at scale.
SLOW_IMPORTS = dltest.program("libslow_imports.so")
SLOW_OPEN_US = 2000


class SummarySizeTest(TorchTestCase):

    # The report checks of test_html_report (headless Chromium).
    chromium = test_html_report.HtmlReportTest.chromium
    load = test_html_report.HtmlReportTest.load

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = os.path.realpath(tempfile.mkdtemp(prefix="dlprof-size-"))
        cls.set = os.path.join(cls.root, "set")
        os.mkdir(cls.set)
        for i in range(FILES):  # made here, untraced: the runs only read it
            with open(os.path.join(cls.set, "s%03d.bin" % i), "wb") as f:
                f.write(bytes([i]) * SIZE)
        cls.runs = {}
        for mode in ("torch", "plain"):
            traces = os.path.join(cls.root, "traces-" + mode)
            env = dltest.traced_env(traces, {"DLPROF_INCLUDE": IMPORTS,
                                             "PYTHONPATH": dltest.BOOTSTRAP})
            if mode == "torch":  # the imports on a slow file system
                env.update(LD_PRELOAD=dltest.LIB + ":" + SLOW_IMPORTS, SLOW_IMPORTS_PREFIX=IMPORTS,
                           SLOW_IMPORTS_US=str(SLOW_OPEN_US))
            p = dltest.run([dltest.SYSTEM_PYTHON, SCRIPT, mode, cls.set, str(FILES), str(EPOCHS)],
                           env, timeout=240)
            if p.returncode != 0 or "read %d samples %d times" % (FILES, EPOCHS) not in p.stdout:
                shutil.rmtree(cls.root, ignore_errors=True)
                raise AssertionError("%s run failed:\n%s" % (mode, p.stderr[-4000:]))
            dltest.wait_gone({dltest.read_header(f)["pid"] for f in dltest.trace_files(traces)})
            cls.runs[mode] = traces

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def dump(self, mode, *args):
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json"] + list(args) + [self.runs[mode]],
                       dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def check_lists(self, s, details):
        """Listed + left out = every file of the classes; no directory row."""
        classes = s["file_classes"]
        every = sum(c["files"] for c in classes.values())
        self.assertEqual(len(s["files"]) + s["left_out"]["files"], every)
        self.assertEqual(s["left_out"]["files"] == 0, details or len(s["files"]) == every)
        for name, c in classes.items():
            listed = sum(1 for f in s["files"].values() if f["class"] == name)
            self.assertLessEqual(listed, c["files"], name)
            if details:
                self.assertEqual(listed, c["files"], name)
            else:
                self.assertLessEqual(listed, 40, name)  # top 20 by bytes, top 20 by time
        paths = sorted(s["files"])
        for a, b in zip(paths, paths[1:]):
            self.assertFalse(b.startswith(a + "/"), "directory row %s (of %s)" % (a, b))
        calls = sum(s["run"]["ops"].values())
        self.assertEqual(len(s["slowest"]) + s["left_out"]["slowest"], calls)

    def test_summary_and_report_of_a_torch_run_stay_small(self):
        text = self.dump("torch")
        s = json.loads(text)
        code = s["file_classes"]["code"]
        self.assertGreater(code["files"], 1000, "the imports were not traced")
        self.assertLessEqual(len(text.encode()), 256 * KIB)
        self.check_lists(s, details=False)
        self.assertGreater(s["left_out"]["files"], 1000)
        # The data set's own top rows are there, whatever the imports did.
        data_rows = [p for p, f in s["files"].items() if f["class"] == "data"]
        self.assertGreaterEqual(len(data_rows), 20)
        self.assertTrue(all(p.startswith(self.set + "/") for p in data_rows), data_rows)

        # --details: every file, each once; the class totals are the same.
        full = json.loads(self.dump("torch", "--details"))
        self.check_lists(full, details=True)
        self.assertEqual(full["file_classes"], s["file_classes"])
        self.assertEqual(len(full["files"]), sum(c["files"] for c in s["file_classes"].values()))
        self.assertLessEqual(set(s["files"]), set(full["files"]))
        self.assertEqual(s["left_out"]["never_read"] + len(s["never_read"]), len(full["never_read"]))
        self.assertEqual(s["left_out"]["rereads"] + len(s["rereads"]), len(full["rereads"]))
        # --top 5: fewer rows, the same sums.
        top5 = json.loads(self.dump("torch", "--top", "5"))
        self.check_lists(top5, details=False)
        self.assertLess(len(top5["files"]), len(s["files"]))

        # The report: at most 1.5 MiB, drawn in Chromium.
        page = os.path.join(self.tmp, "report.html")
        p = dltest.run([dltest.DUMP, "--format", "html", "-o", page, self.runs["torch"]], dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLessEqual(os.path.getsize(page), 1536 * KIB)
        if not os.access(test_html_report.CHROMIUM, os.X_OK):
            self.skipTest("no headless Chromium: install chromium-headless-shell")
        dom = self.load(page, s)
        # The file table: the data set first, every listed row, its class.
        files = dom.table("files", "file")
        self.assertEqual(files[0][1], "class")
        self.assertEqual(len(files) - 1, min(50, len(s["files"])))
        shown = [r[1] for r in files[1:]]
        self.assertEqual(shown[:len(data_rows)], ["data"] * len(data_rows))
        self.assertIn("Top data files by time in I/O calls",
                      [c["heading"] for c in dom.canvases if c["section"] == "files"])
        # The bandwidth plot over the loop (the DataLoader's batches), in
        # bins of milliseconds: the loop lasts about a second, far less than
        # the run's start-up.
        lt = s["loop_timeline"]
        self.assertEqual(lt["window"], "loop")
        loop = lt["end_ns"] - lt["start_ns"]
        self.assertGreater(lt["start_ns"], s["run_start_ns"])
        self.assertLessEqual(len(lt["read_bytes"]), 240)
        self.assertGreaterEqual(lt["bin_ns"] * len(lt["read_bytes"]), loop)
        # Bins of the loop's 240th, in whole bins of the summary's finest
        # (1 ms, doubled for each time the run outgrows 8,192 of them:
        # intervals.h), not of the run's seconds.
        fine = max(1000000, 2 * (s["run_end_ns"] - s["run_start_ns"]) // 8192)
        self.assertLessEqual(lt["bin_ns"], loop // 240 + fine, lt)
        self.assertGreater(len(lt["read_bytes"]), 1)
        self.assertGreater(sum(lt["read_bytes"]), 0)
        self.assertLessEqual(sum(lt["read_bytes"]), s["run"]["read"]["bytes"])
        timeline = [c for c in dom.canvases if c["section"] == "timeline"][0]
        self.assertEqual(int(timeline["data-points"]), 2 * len(lt["read_bytes"]))
        self.assertIn("over the training loop", timeline["heading"])

    def test_data_findings_unchanged_by_the_imports(self):
        full = {m: json.loads(self.dump(m, "--details")) for m in ("torch", "plain")}
        data_paths = {os.path.join(self.set, "s%03d.bin" % i) for i in range(FILES)}
        for mode, s in full.items():
            # The data class is the data set: nothing of torch, its caches,
            # its shared memory or multiprocessing's scratch files.
            self.assertEqual({p for p, f in s["files"].items() if f["class"] == "data"}, data_paths, mode)
            for path, f in s["files"].items():
                if path.startswith("/dev/shm/torch_") or "/pymp-" in path:
                    self.assertEqual(f["class"], "system", path)
        self.assertTrue(any(p.startswith("/dev/shm/torch_") or "/pymp-" in p for p in full["torch"]["files"]),
                        "no shared-memory or multiprocessing file in the torch run")
        # What the data-set rules count: the same calls on the same files.
        def counted(s):
            d = s["file_classes"]["data"]
            return (d["files"], d["directories"], d["ops"], d["read"]["ops"], d["read"]["bytes"],
                    d["read"]["small_ops"], d["read"]["histogram"], d["write"]["ops"])
        self.assertEqual(counted(full["torch"]), counted(full["plain"]))
        data = full["plain"]["file_classes"]["data"]
        self.assertEqual(data["read"]["ops"], FILES * EPOCHS * 4)
        self.assertEqual(data["read"]["bytes"], FILES * EPOCHS * SIZE)
        self.assertEqual(data["ops"]["open"], FILES * EPOCHS)
        # The findings about the data name those counts, not the imports'.
        findings = {m: {f["rule"]: f for f in s["verdict"]["findings"]} for m, s in full.items()}
        torch = findings["torch"]
        self.assertNotIn("metadata", torch)
        for rule in ("small_reads", "reread", "few_files"):
            if rule in torch and rule in findings["plain"]:
                # Less the times and the slowest file, which are the two
                # runs' own (a busy machine slows one file or another).
                strip = lambda w: re.sub(r"[\d.]+ (?:[mun]?s|%)|the slowest to read is \S+", "", w)
                self.assertEqual(strip(torch[rule]["what"]), strip(findings["plain"][rule]["what"]))
        if "small_reads" in torch:
            self.assertIn("of the %d data reads" % (FILES * EPOCHS * 4), torch["small_reads"]["what"])
        # Python's start-up: the code files' time, and its own finding where
        # that is a tenth of the start-up or more (the slow opens are:
        # 2 s against a start-up of a few seconds; a busy machine stretches
        # the start-up's work, not the opens' waits, and may leave them
        # under the tenth).
        v = full["torch"]["verdict"]
        self.assertEqual(v["loop"]["basis"], "dataloader")
        self.assertGreater(v["loop"]["startup_ns"], 0)
        code_ns = sum(full["torch"]["file_classes"]["code"]["time_ns"].values())
        # Importing torch opens about a thousand files under IMPORTS (fewer
        # where more .pyc files are at hand): 500 slow opens at least.
        self.assertGreaterEqual(code_ns, 500 * SLOW_OPEN_US * 1000)
        if code_ns * 1000 // v["loop"]["startup_ns"] < 100:
            self.assertNotIn("startup", torch)
            return
        self.assertIn("startup", torch, [f["what"] for f in v["findings"]])
        startup = torch["startup"]
        self.assertEqual(startup["cost_ns"], code_ns)
        self.assertIn("on %d code files" % full["torch"]["file_classes"]["code"]["files"], startup["what"])
        self.assertIn("passed before the first batch", startup["what"])


READER = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for k in range(int(sys.argv[2])):
    os.pread(fd, 4096, 4096 * k)
os.close(fd)
"""


class ProcessRowsTest(dltest.TraceTestCase):
    """A job of more processes than --top (issue 37): the JSON lists the top
    processes by I/O time and by bytes, `left_out` counts the rest, and
    --details lists each one. Process k of 25 reads k x 4 KiB: the top by
    bytes is known."""

    def test_the_top_processes_and_the_rest_counted(self):
        data = os.path.join(self.data, "items.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 4096 * 25)
        for k in range(1, 26):
            self.run_traced([dltest.SYSTEM_PYTHON, "-c", READER, data, str(k)],
                            env={"DLPROF_RUN_ID": "process-rows"})  # one job
        self.decode()
        s = self.summary()
        rows = s["processes_stats"]
        self.assertEqual(s["processes"], 25)
        self.assertEqual(len(rows) + s["left_out"]["processes_stats"], 25)
        self.assertLessEqual(len(rows), 40)  # the top 20 by I/O time, the top 20 by bytes
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json", "--top", "3", self.traces],
                       dltest.base_env())
        top3 = json.loads(p.stdout)
        rows = top3["processes_stats"]
        self.assertLessEqual(len(rows), 6)
        self.assertEqual(len(rows) + top3["left_out"]["processes_stats"], 25)
        full = json.loads(dltest.run([dltest.DUMP, "--summary", "--format", "json", "--details",
                                      self.traces], dltest.base_env()).stdout)
        self.assertEqual(len(full["processes_stats"]), 25)
        self.assertEqual(full["left_out"]["processes_stats"], 0)
        # Each process read k x 4 KiB of the file, and the interpreter's own
        # start-up the same bytes in each.
        every = sorted(r["read"]["bytes"] for r in full["processes_stats"].values())
        start = every[0] - 4096
        self.assertEqual(every, [start + k * 4096 for k in range(1, 26)])
        # The three that read the most (25, 24 and 23 preads) are listed.
        by_bytes = sorted(r["read"]["bytes"] for r in rows.values())
        self.assertEqual(by_bytes[-3:], [start + k * 4096 for k in (23, 24, 25)])
        # The text's --details lists each process too, as its help says (it
        # cut them at 20, "... and 5 more"); --top N cuts it at N by I/O
        # time and N by bytes.
        for top, listed in (([], 25), (["--top", "3"], None)):
            text = dltest.run([dltest.DUMP, "--summary", "--details"] + top + [self.traces],
                              dltest.base_env()).stdout
            table = text.split("\nPer process\n", 1)[1].split("\nPer file", 1)[0]
            rows = [line for line in table.splitlines() if line.startswith("  pid ")]
            if listed:
                self.assertEqual(len(rows), listed, table)
                self.assertNotIn(" more", table)
            else:
                self.assertLessEqual(len(rows), 6, table)
                self.assertIn("  ... and %d more (--top N)\n" % (25 - len(rows)), table)


if __name__ == "__main__":
    unittest.main(verbosity=2)
