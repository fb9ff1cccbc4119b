"""dlprof-dump --format html of bounded traces (DLPROF_KEEP), in headless
Chromium as test_html_report.py loads every report: the whole run's
section from the counters comes first, its cards the counters' figures, its
findings the whole run's verdict's, its plots drawn (the batch wait by
cause over time with the kept windows marked; the GPU's busy time, where
there was GPU work)."""

import os
import re
import subprocess
import unittest

import dltest
# (The module, not its names: its test case would be run here again.)
import test_html_report as page_checks


class WholeRunReportTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        if not os.access(page_checks.CHROMIUM, os.X_OK):
            self.skipTest("no headless Chromium: install chromium-headless-shell")

    def test_bounded_trace_draws_the_whole_run_first(self):
        """A bounded trace (DLPROF_KEEP=1s, 3 s of programs/keep_loop, each
        batch sleeping 5 ms in its wait): the whole run's section comes
        first, its cards the counters' figures, the largest cause of the
        batch wait among them, then the whole run's findings."""
        data = os.path.join(self.data, "data.bin")
        with open(data, "wb") as f:
            f.truncate(1 << 30)
        p = subprocess.run([dltest.program("keep_loop"), data, "3", "4000", "0", "100", "5"],
                           env=self.traced_env(self.traces, {"DLPROF_KEEP": "1s"}), timeout=60,
                           input="\n", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        summary, page = page_checks.HtmlReportTest.report(self)
        w = summary["whole_run"]
        out, console = page_checks.HtmlReportTest.chromium(self, page, "--window-size=1280,1000", "--dump-dom")
        self.assertEqual(console, [], "console messages")
        dom = page_checks.Dom(out)
        self.assertEqual(dom.body.get("data-report-status"), "ready", dom.body)
        self.assertEqual(dom.sections[0], "whole-run")
        cards = dict((k, v) for v, k in re.findall(
            r'<div class="v">([^<]*)</div><div class="k">([^<]*)</div>', out))
        c = w["causes"]
        parts = {"reading": "reading", "preprocessing": "preprocessing",
                 "handover": "hand-over", "worker_startup": "worker start-up"}
        top = max(parts, key=lambda k: c[k + "_ns"])
        whole = sum(c[k + "_ns"] for k in parts) + c["unsplit_ns"]
        self.assertEqual(whole, w["batch_wait_ns"])
        self.assertEqual(cards["of the batch wait " + parts[top]],
                         page_checks.to_fixed(100 * c[top + "_ns"] / whole, 1) + " %", cards)
        self.assertEqual(cards["I/O calls"], "{:,}".format(w["io"]["calls"]), cards)
        # The whole run's findings, in the verdict's order: the wait (5 ms
        # of sleep a batch) is well over a tenth of the loop.
        rules = [f["rule"] for f in w["verdict"]["findings"]]
        self.assertEqual(rules[:1], ["batch_wait"], w["verdict"])
        self.assertEqual(re.findall(r'data-whole-run-rule="([^"]*)"', out), rules)
        self.assertIn("<h3>Findings, whole run</h3>", out)
        # Over time: the batch wait and each of its causes that occurred, a
        # value per point, beside the kept windows' ends; the worst point as
        # a card.
        pts = w["points"]
        self.assertGreaterEqual(len(pts), 2, pts)
        causes = [k for k in parts if any(q["causes"][k + "_ns"] for q in pts)]
        over_time = [c for c in dom.canvases if c["heading"].startswith("Batch wait by cause")]
        self.assertEqual(len(over_time), 1, dom.canvases)
        self.assertEqual(int(over_time[0]["data-points"]),
                         len(pts) * (1 + len(causes)) + 2 * len(w["kept"]))
        worst = pts[w["worst_point"]]
        label = [k for k in cards if k.startswith("batch wait at its worst")]
        self.assertEqual(len(label), 1, cards)
        self.assertEqual(cards[label[0]],
                         page_checks.to_fixed(100 * worst["batch_wait_ns"] / worst["waiting_ns"], 1) + " %")
        self.assertIn("(mostly " + parts[worst["causes"]["cause"]] + ")", label[0])
        self.assert_whole_run_drawn(dom)

    def assert_whole_run_drawn(self, dom):
        """Every plot of the whole run's section drew values above zero, and
        the page counts it with the others (report_kit.js, markCharts)."""
        self.assertEqual(int(dom.body["data-charts"]), len(dom.canvases))
        drawn = [c for c in dom.canvases if c["section"] == "whole-run"]
        self.assertGreaterEqual(len(drawn), 2, dom.canvases)
        for c in drawn:
            self.assertGreater(int(c["data-colored"]), 100, "a plot with nothing drawn: %s" % c)
            self.assertGreater(int(c["data-nonzero"]), 0, "a plot of zeros: %s" % c)

    def test_bounded_gpu_trace_draws_the_gpus_busy_time(self):
        """A bounded trace (DLPROF_KEEP=1s) of the fake CUDA program's
        "steps" mode (four steps, each a load_batch and two kernels): the
        whole run's section gives the counters' GPU busy time against the
        loop as a card, and over the run as a value per point. So short a
        run is kept whole: the counters' busy time over the run (its
        points') is the kept kernels' union, which the full summary measures
        from the events (the whole run's own figure is the part inside the
        loop)."""
        if not dltest.HAS_FAKE_CUDA:
            self.skipTest("the CUPTI plugin and the fake libcupti are not built")
        self.trace_gpu_steps("html-report-bounded-gpu", ranks=(0,), env={"DLPROF_KEEP": "1s"})
        summary, page = page_checks.HtmlReportTest.report(self)
        w = summary["whole_run"]
        busy = w["verdict"]["gpu_busy"]
        self.assertIsNotNone(busy, w["verdict"])
        self.assertGreater(busy["ns"], 0)
        self.assertEqual(sum(p["gpu_busy_ns"] for p in w["points"]), summary["gpu"]["busy_ns"])
        self.assertLessEqual(w["gpu_busy_ns"], summary["gpu"]["busy_ns"])
        out, console = page_checks.HtmlReportTest.chromium(self, page, "--window-size=1280,1000", "--dump-dom")
        self.assertEqual(console, [], "console messages")
        dom = page_checks.Dom(out)
        self.assertEqual(dom.body.get("data-report-status"), "ready", dom.body)
        self.assertEqual(dom.sections[0], "whole-run")
        # The whole run's cards (its section is first; the full report's
        # verdict has a GPU card of its own further down).
        whole_run = out[out.index('<section id="whole-run">'):]
        whole_run = whole_run[:whole_run.index("</section>")]
        cards = dict((k, v) for v, k in re.findall(
            r'<div class="v">([^<]*)</div><div class="k">([^<]*)</div>', whole_run))
        self.assertEqual(cards.get("of the loop with the GPU busy: " + page_checks.shown_secs(busy["ns"])),
                         page_checks.to_fixed(busy["loop_per_mille"] / 10, 1) + " %", cards)
        # The data stall's card: the program reads while its GPU idles, so
        # the counters hold a data stall (docs/FORMAT_BOUNDED.md, record 8).
        stall = w["verdict"]["data_stall"]
        self.assertIsNotNone(stall, w["verdict"])
        self.assertGreater(stall["ns"], 0)
        shown = page_checks.shown_secs(stall["ns"])
        self.assertEqual(cards.get("of the loop with I/O outstanding and the GPU idle: " + shown),
                         page_checks.to_fixed(stall["loop_per_mille"] / 10, 1) + " %", cards)
        over_time = [c for c in dom.canvases if c["heading"] == "GPU busy time per second, all processes"]
        self.assertEqual(len(over_time), 1, dom.canvases)
        self.assertEqual(int(over_time[0]["data-points"]), len(w["points"]))
        self.assert_whole_run_drawn(dom)

    def test_a_loop_of_steps_whose_wait_is_not_measured_says_so(self):
        """A bounded trace of step_gaps.py's "map" mode (a loop of steps that
        reads through a live map of its data file: its wait not measured,
        test_step_gaps.py): the whole run's section shows no batch wait
        card, whose 0.0 % would read as no wait, and says why instead."""
        p = subprocess.run([dltest.SYSTEM_PYTHON, dltest.script("step_gaps.py"), "map", self.data,
                            os.path.join(self.tmp, "truth.json")],
                           env=self.traced_env(self.traces, {"DLPROF_KEEP": "1h",
                                                             "PYTHONPATH": dltest.PYTHON_DIR}),
                           timeout=60, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        summary, page = page_checks.HtmlReportTest.report(self)
        missing = summary["whole_run"]["verdict"]["batch_wait_missing"]
        self.assertIn("memory map", missing or "", summary["whole_run"]["verdict"])
        out, console = page_checks.HtmlReportTest.chromium(self, page, "--window-size=1280,1000", "--dump-dom")
        self.assertEqual(console, [], "console messages")
        whole_run = out[out.index('<section id="whole-run">'):]
        whole_run = whole_run[:whole_run.index("</section>")]
        self.assertNotIn("batch wait of the loop", whole_run)
        self.assertIn("Batch wait not measured: data read through a memory map", whole_run)


if __name__ == "__main__":
    unittest.main(verbosity=2)
