"""dlprof-dump --compare BEFORE AFTER and dlprof.compare (issue 35): two runs
of one loop with a known change, side by side.

- The same annotated loop (scripts/compare_loop.py) on a fast and on a
  slowed file system (the data set's opens wait 30 ms: preload/
  slow_imports.c), two runs of one trace directory: the loop's batch wait
  grows, as it measured itself; the batch_wait finding appears (and goes
  away the other way round); the HTML report draws both runs.
- A PyTorch DataLoader loop (scripts/torch_workers.py, storage with a
  latency) with 2 workers against 4, and with a fast data set against a
  slowed one: the batch wait changes the way the loop's own time in next()
  did.

Every change is checked against the two runs' own `--summary --format json`
(each figure read from there independently of lib/analysis/compare): after
minus before, and "before"/"after" are those summaries to the key. A
missing directory and an unknown run are clear errors."""

import json
import os
import re
import shutil
import tempfile
import unittest

import dltest
import test_html_report
from dltest.pytorch import TorchTestCase, bootstrap_env

LOOP = dltest.script("compare_loop.py")
TORCH_LOOP = dltest.script("torch_workers.py")
SLOW_OPENS = dltest.program("libslow_imports.so")
SLOW_OPEN_US = 30000
MS = 1000000


def per_rank_steps(r):
    return r["optimizer_steps"] or sum(1 for s in r["steps"] if s["request"] == "batch")


# Each figure of the comparison, read from a run's summary JSON as the JSON
# has it (docs/ANALYSIS.md): None where the run lacks it.
def verdict_figure(s, key):
    v = s["verdict"]
    loop, wait, stall, busy = v["loop"], v["batch_wait"], v["data_stall"], v["gpu_busy"]
    lockstep = v["lockstep"]
    split = wait is not None and "reading_ns" in wait
    return {
        "step_ns": loop["ns"] // loop["steps"] if loop["steps"] else None,
        "loop_ns": loop["ns"], "loop_steps": loop["steps"], "startup_ns": loop["startup_ns"],
        "batch_wait_ns": wait and wait["ns"], "batch_wait_per_mille": wait and wait["per_mille"],
        "judged_wait_per_mille": wait and (lockstep["wait_per_mille"] if lockstep else wait["per_mille"]),
        "judged_checkpoint_per_mille": v["checkpoint"] and (
            lockstep["save_per_mille"] if lockstep else v["checkpoint"]["per_mille"]),
        "reading_ns": wait["reading_ns"] if split else None,
        "preprocessing_ns": wait["preprocessing_ns"] if split else None,
        "handover_ns": wait["handover_ns"] if split else None,
        "worker_startup_ns": wait["worker_startup_ns"] if split else None,
        "checkpoint_ns": v["checkpoint"] and v["checkpoint"]["blocking_ns"],
        "data_stall_ns": stall and stall["ns"], "data_stall_per_mille": stall and stall["loop_per_mille"],
        "gpu_busy_ns": busy and busy["ns"], "gpu_busy_per_mille": busy and busy["loop_per_mille"],
    }[key]


def data_set_figure(s, key):
    d = s["file_classes"]["data"]
    return {
        "files": d["files"], "read_bytes": d["read"]["bytes"], "read_ops": d["read"]["ops"],
        "read_time_ns": d["read"]["time_ns"],
        "read_bytes_per_s": d["read"]["bytes"] * 10**9 // d["read"]["time_ns"] if d["read"]["time_ns"] else None,
    }[key]


def rank_figure(r, key):
    if key == "step_ns":
        return r["loop_ns"] // per_rank_steps(r) if r["loop_ns"] and per_rank_steps(r) else None
    if key in ("data_stall_ns", "gpu_busy_ns") and not r["devices"]:
        return None
    if key == "loop_ns" and not r["loop_ns"]:
        return None
    return r[key]


class CompareChecks:
    """What every comparison must satisfy, against its runs' summaries."""

    def check_change(self, c, before, after):
        self.assertEqual(set(c), {"before", "after", "change"})
        self.assertEqual(c["before"], before)
        self.assertEqual(c["after"], after)
        ch = c["change"]

        def check(f, b, a, where):
            self.assertEqual((f["before"], f["after"]), (b, a), where)
            self.assertEqual(f["change"], a - b if a is not None and b is not None else None, where)

        for key, f in ch["verdict"].items():
            check(f, verdict_figure(before, key), verdict_figure(after, key), key)
        self.assertIn("batch_wait_ns", ch["verdict"])
        for key, f in ch["data_set"].items():
            check(f, data_set_figure(before, key), data_set_figure(after, key), "data_set " + key)
        self.assertEqual(ch["bound"], {"before": before["verdict"]["bound"], "after": after["verdict"]["bound"]})
        # Per rank, by the key of the summaries' "ranks".
        keys = sorted(set(before["ranks"]) | set(after["ranks"]), key=lambda k: (int(k.split()[0]), k))
        self.assertEqual([r["key"] for r in ch["ranks"]], keys)
        for r in ch["ranks"]:
            b, a = before["ranks"].get(r["key"]), after["ranks"].get(r["key"])
            self.assertEqual(r["in"], "both" if b and a else "before" if b else "after")
            for key, f in r.items():
                if isinstance(f, dict):
                    check(f, b and rank_figure(b, key), a and rank_figure(a, key), "rank %s %s" % (r["key"], key))
        hosts_b = {h["host"]: h for h in before.get("rank_hosts", [])}
        hosts_a = {h["host"]: h for h in after.get("rank_hosts", [])}
        self.assertEqual([h["host"] for h in ch["hosts"]], sorted(set(hosts_b) | set(hosts_a)))
        for h in ch["hosts"]:
            b, a = hosts_b.get(h["host"]), hosts_a.get(h["host"])
            for key in ("ranks", "batch_wait_ns", "io_ns", "read_bytes"):
                check(h[key], b and b[key], a and a[key], "host " + key)
        # The findings that appeared, went away and stayed, by rule, in
        # each run's order.
        rules_b = [f["rule"] for f in before["verdict"]["findings"]]
        rules_a = [f["rule"] for f in after["verdict"]["findings"]]
        found = ch["findings"]
        self.assertEqual([f["rule"] for f in found["appeared"]], [r for r in rules_a if r not in rules_b])
        self.assertEqual([f["rule"] for f in found["went_away"]], [r for r in rules_b if r not in rules_a])
        self.assertEqual([f["rule"] for f in found["stayed"]], [r for r in rules_a if r in rules_b])
        for f in found["stayed"]:
            cost = lambda s: next(x["cost_ns"] for x in s["verdict"]["findings"] if x["rule"] == f["rule"])
            check(f["cost_ns"], cost(before), cost(after), "finding " + f["rule"])
        return ch

    def check_direction(self, ch, truth_before, truth_after):
        """The batch wait moved the way the loop's own measure did, where that
        moved by more than a fifth (a loaded machine can blur a smaller one)."""
        wait = ch["verdict"]["batch_wait_ns"]
        moved = truth_after["batch_wait_ns"] - truth_before["batch_wait_ns"]
        if abs(moved) * 5 > max(truth_before["batch_wait_ns"], truth_after["batch_wait_ns"]):
            self.assertEqual(wait["change"] > 0, moved > 0, (wait, truth_before, truth_after))

    def compare(self, *args, fmt="json"):
        p = dltest.run([dltest.DUMP, "--compare"] + list(args) + ["--format", fmt], dltest.base_env(), timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout) if fmt == "json" else p.stdout

    def summary_of(self, *args):
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json"] + list(args), dltest.base_env(), timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)


class CompareLoopTest(dltest.TraceTestCase, CompareChecks):
    """The annotated loop on a fast and a slowed file system, both runs in
    one trace directory (runs "fast" and "slow")."""

    def setUp(self):
        super().setUp()
        for i in range(4):
            with open(os.path.join(self.data, "s%02d.bin" % i), "wb") as f:
                f.write(bytes([i]) * 65536)
        self.truth = {}
        for run in ("fast", "slow"):
            out = os.path.join(self.tmp, run + ".json")
            env = dltest.traced_env(self.traces, {"DLPROF_RUN_ID": run, "RANK": "0",
                                                  "PYTHONPATH": dltest.PYTHON_DIR})
            if run == "slow":
                env.update(LD_PRELOAD=dltest.LIB + ":" + SLOW_OPENS, SLOW_IMPORTS_PREFIX=self.data,
                           SLOW_IMPORTS_US=str(SLOW_OPEN_US))
            p = dltest.run([dltest.SYSTEM_PYTHON, LOOP, self.data, out, "12", "20"], env, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                self.truth[run] = json.load(f)

    def test_a_slowed_data_set(self):
        c = self.compare("fast", "slow", self.traces)
        ch = self.check_change(c, self.summary_of("--run", "fast", self.traces),
                               self.summary_of("--run", "slow", self.traces))
        # 12 opens of 30 ms more, inside the slowed run's waits: the loop
        # measured them, and so does its wait. (Not the difference of the
        # two runs' waits: the rest of each wait is noise, and a loaded
        # machine once made the fast run's 1.1 ms longer than the slow
        # run's rest, the difference 358.9 ms; a CI run.)
        slowed = 12 * SLOW_OPEN_US * 1000
        self.assertGreaterEqual(self.truth["slow"]["batch_wait_ns"], slowed)
        self.check_direction(ch, self.truth["fast"], self.truth["slow"])
        self.assertGreaterEqual(ch["verdict"]["batch_wait_ns"]["after"], slowed)
        self.assertGreater(ch["verdict"]["batch_wait_ns"]["change"], 0)
        self.assertGreater(ch["verdict"]["reading_ns"]["change"], 0)
        self.assertEqual(ch["data_set"]["read_bytes"]["change"], 0)  # the same 12 samples
        self.assertEqual(ch["data_set"]["read_bytes"]["after"], 12 * 65536)
        self.assertEqual(ch["bound"], {"before": "neither", "after": "data"})
        self.assertEqual([r["key"] for r in ch["ranks"]], ["0"])
        # Waiting 30 ms a step against 20 ms of compute: data-bound, where
        # the fast run was not.
        self.assertIn("batch_wait", [f["rule"] for f in ch["findings"]["appeared"]])
        # The other way round, it went away; every change the opposite.
        back = self.compare("slow", "fast", self.traces)["change"]
        self.assertIn("batch_wait", [f["rule"] for f in back["findings"]["went_away"]])
        self.assertEqual(back["verdict"]["batch_wait_ns"]["change"], -ch["verdict"]["batch_wait_ns"]["change"])
        # The text shows the same figures.
        text = self.compare("fast", "slow", self.traces, fmt="text")
        self.assertIn("dlprof compare: before fast, after slow", text)
        self.assertRegex(text, r"bound +neither -> data")
        self.assertIn("appeared:  batch_wait:", text)
        self.assertIn("rank 0 (", text)

    def test_python_compare_is_dlprof_dumps(self):
        import dlprof
        self.assertEqual(dlprof.compare("fast", "slow", path=self.traces),
                         self.compare("fast", "slow", self.traces))
        with self.assertRaisesRegex(FileNotFoundError, r"after \(nope\): no run 'nope' in the input"):
            dlprof.compare("fast", "nope", path=self.traces)
        with self.assertRaisesRegex(FileNotFoundError, r"before \(.*missing\)"):
            dlprof.compare(os.path.join(self.tmp, "missing"), self.traces)

    def test_bad_input(self):
        missing = os.path.join(self.tmp, "missing")
        for args, message in (
                ([self.traces, missing], "dlprof-dump: --compare: after (%s): no readable dlprof trace" % missing),
                ([missing, self.traces], "dlprof-dump: --compare: before (%s): no readable dlprof trace" % missing),
                (["fast", "nope", self.traces], "dlprof-dump: --compare: after (nope): no run 'nope' in the input (runs: "),
        ):
            p = dltest.run([dltest.DUMP, "--compare"] + args, dltest.base_env())
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn(message, p.stderr)
            self.assertEqual(p.stdout, "")
        p = dltest.run([dltest.DUMP, "--compare", self.traces], dltest.base_env())
        self.assertEqual(p.returncode, 2)
        self.assertIn("option --compare needs BEFORE and AFTER", p.stderr)

    def test_html_report_draws_both_runs(self):
        if not os.access(test_html_report.CHROMIUM, os.X_OK):
            self.skipTest("no headless Chromium: install chromium-headless-shell")
        c = self.compare("fast", "slow", self.traces)
        page = os.path.join(self.tmp, "compare.html")
        p = dltest.run([dltest.DUMP, "--compare", "fast", "slow", self.traces, "--format", "html", "-o", page],
                       dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        m = re.search(r'<script type="application/json" id="dlprof-summary">(.*?)</script>', text, re.S)
        self.assertEqual(json.loads(m.group(1)), c)  # one analysis, two renderings
        out, console = test_html_report.HtmlReportTest.chromium(self, page, "--window-size=1280,1000", "--dump-dom")
        self.assertEqual(console, [])
        dom = test_html_report.Dom(out)
        self.assertEqual(dom.body.get("data-report-status"), "ready", dom.body)
        self.assertEqual(int(dom.body["data-charts"]), len(dom.canvases))
        for s in ("compare", "timeline", "findings", "data", "ranks", "hosts"):
            self.assertIn(s, dom.sections)
        # Both plots hold both runs, each drawn with values above zero.
        self.assertEqual(len(dom.canvases), 2)
        for canvas in dom.canvases:
            self.assertEqual([x.split(" ")[0] for x in canvas["data-series"].split("|")], ["before", "after"], canvas)
            self.assertTrue(all(int(n) > 0 for n in canvas["data-series-nonzero"].split("|")), canvas)
            self.assertGreater(int(canvas["data-colored"]), 100, canvas)
        # The figures table: each row's before and after as the JSON has them.
        rows = dom.table("compare", "figure")
        shown = {r[0]: r for r in rows[1:]}
        wait = c["change"]["verdict"]["batch_wait_ns"]
        self.assertEqual(shown["batch wait"][1:3], [test_html_report.shown_secs(wait["before"]),
                                                   test_html_report.shown_secs(wait["after"])])
        ch = c["change"]["findings"]
        self.assertEqual(dom.findings, [f["rule"] for k in ("appeared", "went_away", "stayed") for f in ch[k]])


class CompareGpuTest(dltest.TraceTestCase, CompareChecks):
    """Two ranks against one, with GPU work (the fake CUDA program's steps:
    a load_batch around a read while the GPU idles, then kernels): data
    stall and GPU busy side by side, and a rank of one run only."""

    def test_a_rank_less_with_gpu_work(self):
        if not dltest.HAS_FAKE_CUDA:
            self.skipTest("the CUPTI plugin and the fake libcupti are not built")
        self.trace_gpu_steps("two", ranks=(0, 1))
        self.trace_gpu_steps("one", ranks=(0,))
        ch = self.check_change(self.compare("two", "one", self.traces),
                               self.summary_of("--run", "two", self.traces),
                               self.summary_of("--run", "one", self.traces))
        self.assertEqual([(r["key"], r["in"]) for r in ch["ranks"]], [("0", "both"), ("1", "before")])
        self.assertIsNone(ch["ranks"][1]["batch_wait_ns"]["change"])
        # GPU figures in both runs (the reads take microseconds: their
        # change is noise, and only its arithmetic is checked above).
        for key in ("data_stall_ns", "gpu_busy_ns", "batch_wait_ns"):
            f = ch["verdict"][key]
            self.assertIsNotNone(f["change"], key)
            self.assertIsNotNone(ch["ranks"][0][key]["change"], key)
        self.assertGreater(ch["verdict"]["gpu_busy_ns"]["after"], 0)
        self.assertEqual(ch["hosts"][0]["ranks"]["change"], -1)


class CompareTorchTest(TorchTestCase, CompareChecks):
    """A DataLoader loop over storage with a latency (torch_workers.py
    latency mode, 16 batches of 4 samples): 2 workers against 4 at 20 ms a
    sample, and 2 workers with a fast (1 ms) data set against the slowed
    one (20 ms). Three runs, made once."""

    RUNS = {"w2": (2, 20), "w4": (4, 20), "fast": (2, 1)}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.root = os.path.realpath(tempfile.mkdtemp(prefix="dlprof-compare-"))
        cls.truth = {}
        try:
            for run, (workers, ms) in cls.RUNS.items():
                data = os.path.join(cls.root, "data-" + run)
                os.mkdir(data)
                out = os.path.join(cls.root, run + ".json")
                env = dltest.traced_env(os.path.join(cls.root, run), bootstrap_env({"RANK": "0"}))
                p = dltest.run([dltest.SYSTEM_PYTHON, TORCH_LOOP, "latency", data, out, str(workers), "16",
                                str(ms), "2"], env, timeout=240)
                if p.returncode != 0:
                    raise AssertionError("%s run failed:\n%s" % (run, p.stderr[-4000:]))
                with open(out) as f:
                    cls.truth[run] = json.load(f)
                traces = os.path.join(cls.root, run)
                dltest.wait_gone({dltest.read_header(f)["pid"] for f in dltest.trace_files(traces)})
        except BaseException:
            shutil.rmtree(cls.root, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)
        super().tearDownClass()

    def side_by_side(self, before, after):
        b, a = (os.path.join(self.root, r) for r in (before, after))
        ch = self.check_change(self.compare(b, a), self.summary_of(b), self.summary_of(a))
        self.check_direction(ch, self.truth[before], self.truth[after])
        self.assertEqual(ch["data_set"]["read_bytes"]["change"], 0, ch["data_set"])  # the same samples
        self.assertEqual(ch["verdict"]["loop_steps"]["change"], 0)
        return ch

    def test_two_workers_against_four(self):
        ch = self.side_by_side("w2", "w4")
        # Four workers overlap twice the storage's waits: the loop's own
        # measure says how much less it waited (start-up aside).
        self.assertEqual([r["key"] for r in ch["ranks"]], ["0"])
        rank = ch["ranks"][0]["batch_wait_ns"]["change"]
        self.assertEqual(rank, ch["verdict"]["batch_wait_ns"]["change"])  # one rank: the job's

    def test_a_fast_data_set_against_a_slowed_one(self):
        ch = self.side_by_side("fast", "w2")
        # 16 batches of 4 samples, 19 ms more each, over 2 workers: the
        # loop waited longer, and what it waited for was the storage.
        self.assertGreater(ch["verdict"]["reading_ns"]["change"], 0)
        self.assertGreater(ch["data_set"]["read_time_ns"]["change"], 0)


if __name__ == "__main__":
    dltest.main()
