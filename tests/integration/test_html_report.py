"""dlprof-dump --format html, in a real browser: the report of real traces
(examples/mini_loader.py's forked workers and epochs; twelve ranks with
batch-wait steps; a GPU trace from the fake libcupti) loads in headless
Chromium with no console message, carries the same JSON as `--summary
--format json`, builds every section, plot and table from it (checked in the
DOM Chromium dumps after the page script ran), draws its plots (coloured
pixels in each canvas, and in a screenshot), and requests nothing."""

import fractions
import html.parser
import json
import math
import os
import re
import shutil
import struct
import subprocess
import unittest
import zlib

import dltest

EXAMPLE = os.path.join(dltest.ROOT, "examples", "mini_loader.py")
CHROMIUM = shutil.which("chromium-headless-shell") or "/usr/bin/chromium-headless-shell"

# Twelve ranks (more than the eight past which the report draws a heat map),
# each reading its file in six load_batch regions; rank 3 reads more, and
# waits 30 ms in each (nine reads from the page cache alone are a fraction
# of a millisecond, which twelve processes on two CPUs bury in noise: rank 3
# once missed the top four).
RANKS_PROGRAM = r"""
import os, sys, time
from dlprof import region  # the build's package, on its PYTHONPATH
rank = int(os.environ["RANK"])
path = os.path.join(sys.argv[1], "rank%d.bin" % rank)
with open(path, "wb") as f:
    f.write(b"x" * 65536)
for step in range(6):
    with region("load_batch"):
        with open(path, "rb", buffering=0) as f:
            for _ in range(1 + 8 * (rank == 3)):
                f.seek(0)
                f.read(65536)
        if rank == 3:
            time.sleep(0.03)
"""


class Dom(html.parser.HTMLParser):
    """What the dumped DOM holds: <body>'s attributes, every canvas's (with
    its section and the heading above it), the sections' ids, each table's
    cell texts by section, the rules of the findings shown, and the text of
    the box that says what of the input is missing (None: no box)."""

    def __init__(self, text):
        super().__init__()
        self.text = text
        self.body, self.canvases, self.sections, self.tables, self.findings = {}, [], [], {}, []
        self._section, self._cell, self._row = None, None, None
        self._heading, self._in_heading = "", False
        self.input_loss, self._in_loss = None, False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-rule" in a:
            self.findings.append(a["data-rule"])
        if a.get("id") == "input-loss":
            self.input_loss, self._in_loss = "", True
        if tag == "body":
            self.body = a
        elif tag == "canvas":
            self.canvases.append(dict(a, section=self._section, heading=self._heading))
        elif tag in ("h2", "h3"):
            self._heading, self._in_heading = "", True
        elif tag == "section":
            self._section = a.get("id")
            self.sections.append(self._section)
        elif tag == "table":
            self.tables.setdefault(self._section, []).append([])
        elif tag == "tr":
            self._row = []
            self.tables[self._section][-1].append(self._row)
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "div":
            self._in_loss = False
        if tag in ("h2", "h3"):
            self._in_heading = False
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._in_loss:
            self.input_loss += data
        if self._in_heading:
            self._heading += data
        if self._cell is not None:
            self._cell += data

    def table(self, section, first_column):
        """The rows of the table of `section` whose first column is named
        `first_column`, its header first."""
        for t in self.tables.get(section, []):
            if t and t[0] and t[0][0] == first_column:
                return t
        raise AssertionError("no table '%s' in section %s" % (first_column, section))


def to_fixed(x, digits):
    """JavaScript's Number.prototype.toFixed: the decimal nearest the
    double, a tie going away from zero (ECMA-262). Python's "%.1f" sends a
    tie to the even digit: 68250 ns, exactly 68.25 µs, shows as 68.3 µs in
    the report and was 68.2 here."""
    scaled = abs(fractions.Fraction(x)) * 10 ** digits
    n = str(math.floor(scaled + fractions.Fraction(1, 2))).rjust(digits + 1, "0")
    return ("-" if x < 0 else "") + n[:-digits] + "." + n[-digits:]


def shown_bytes(b):
    """A byte count as the report shows it (report_kit.js, bytes())."""
    v, unit = float(b), 0
    while v >= 1024 and unit < 5:
        v, unit = v / 1024, unit + 1
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    return "%d B" % b if unit == 0 else "%s %s" % (to_fixed(v, 1), units[unit])


def shown_secs(ns):
    """A duration as the report shows it (report_kit.js, secs())."""
    if ns >= 1e9:
        return to_fixed(ns / 1e9, 3) + " s"
    if ns >= 1e6:
        return to_fixed(ns / 1e6, 2) + " ms"
    if ns >= 1e3:
        return to_fixed(ns / 1e3, 1) + " µs"
    return "%d ns" % ns


def png_pixels(path):
    """(width, height, rows of RGBA bytes) of an 8-bit RGB(A) PNG: zlib and
    the five row filters, no imaging library."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat = 8, b""
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    assert depth == 8 and color in (2, 6), "PNG of depth %d, colour type %d" % (depth, color)
    bpp = 4 if color == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line if bpp == 4 else bytearray(
            v for k in range(width) for v in line[k * 3:k * 3 + 3] + b"\xff"))
        prev = line
    return width, height, rows


class HtmlReportTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        if not os.access(CHROMIUM, os.X_OK):
            self.skipTest("no headless Chromium: install chromium-headless-shell")

    def chromium(self, page, *args):
        """Runs headless Chromium on `page`; returns (stdout, console lines)."""
        profile = os.path.join(self.tmp, "chromium-profile")
        cmd = [CHROMIUM, "--disable-gpu", "--no-first-run", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--hide-scrollbars",
               "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"]
        if os.geteuid() == 0:
            cmd.append("--no-sandbox")
        p = subprocess.run(cmd + list(args) + ["file://" + page], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=90,
                           stdin=subprocess.DEVNULL, env=dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        shutil.rmtree(profile, ignore_errors=True)
        return p.stdout, [l for l in p.stderr.splitlines() if ":CONSOLE" in l]

    def report(self, extra=()):
        """The summary JSON and the HTML report of self.traces."""
        args = [dltest.DUMP] + list(extra)
        p = dltest.run(args + ["--summary", "--format", "json", self.traces], dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        summary = json.loads(p.stdout)
        page = os.path.join(self.tmp, "report.html")
        p = dltest.run(args + ["--format", "html", "-o", page, self.traces], dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(page, encoding="utf-8") as f:
            text = f.read()
        # One analysis, two renderings: the page carries the JSON itself.
        m = re.search(r'<script type="application/json" id="dlprof-summary">(.*?)</script>', text, re.S)
        self.assertIsNotNone(m)
        self.assertEqual(json.loads(m.group(1)), summary)
        # Nothing from the network: no URL outside the libraries' licence
        # comments, and a policy that forbids every request.
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        self.assertEqual(re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", code, re.I), [])
        self.assertEqual(re.findall(r"https?://", code), [])
        self.assertIn("default-src 'none'", text)
        return summary, page

    def load(self, page, summary):
        """The page's DOM once its script ran; checks what every report has."""
        out, console = self.chromium(page, "--window-size=1280,1000", "--dump-dom")
        self.assertEqual(console, [], "console messages")
        dom = Dom(out)
        self.assertEqual(dom.body.get("data-report-status"), "ready", dom.body)
        self.assertEqual(int(dom.body["data-charts"]), len(dom.canvases))
        for c in dom.canvases:
            self.assertGreater(int(c["data-points"]), 0, c)
            self.assertGreater(int(c["data-colored"]), 100, "a plot with nothing drawn: %s" % c)
            # Drawn data, not zeros; an axis over seconds or steps starts at
            # the data, not before 0.
            self.assertGreater(int(c["data-nonzero"]), 0, "a plot of zeros: %s" % c)
            if c["data-kind"] in ("bar", "line") and re.fullmatch(r"-?\d+(\|-?\d+)*", c["data-x-ticks"]):
                self.assertGreaterEqual(int(c["data-x-ticks"].split("|")[0]), 0, c)
        for s in ("overview", "timeline", "ranks", "sizes", "files", "gpu", "tables", "lists"):
            self.assertIn(s, dom.sections)
        # The verdict and its findings, in their order, where the JSON has them.
        verdict = summary.get("verdict")
        self.assertEqual("verdict" in dom.sections, bool(verdict))
        self.assertEqual(dom.findings, [f["rule"] for f in verdict["findings"]] if verdict else [])
        # The level table: the run's row and one per rank and process.
        levels = dom.table("tables", "level")
        head = levels[0]
        run = dict(zip(head, levels[1]))
        self.assertEqual(run["level"], "run")
        self.assertEqual(run["read"], "{:,}".format(summary["run"]["ops"]["read"]))
        self.assertEqual(run["bytes read"], shown_bytes(summary["run"]["read"]["bytes"]))
        self.assertEqual(len(levels) - 1, min(50, 1 + len(summary["ranks"]) + len(summary["processes_stats"])))
        # The access-size plot has a bar per bin for reads (and writes).
        sizes = [c for c in dom.canvases if c["section"] == "sizes"]
        bins = len(summary["run"]["read"]["histogram"])
        self.assertEqual(int(sizes[0]["data-points"]),
                         bins * ((summary["run"]["read"]["ops"] > 0) + (summary["run"]["write"]["ops"] > 0)))
        return dom

    def test_mini_loader(self):
        """Forked workers reading 64 files in two epochs: the regions table
        holds each epoch's reads, the files table every file, and the
        screenshot shows the bandwidth plot drawn."""
        self.run_traced([dltest.SYSTEM_PYTHON, EXAMPLE, os.path.join(self.data, "set")], timeout=120)
        self.decode()
        summary, page = self.report()
        dom = self.load(page, summary)
        regions = dom.table("regions", "region")
        rows = {r[0]: dict(zip(regions[0], r)) for r in regions[1:]}
        for r in summary["regions"]:
            if not r["outside"]:
                self.assertEqual(rows[r["name"]]["I/O ops"], "{:,}".format(r["io_ops"]))
                self.assertEqual(rows[r["name"]]["read"], "4.0 MiB")  # 64 files x 64 KiB
        files = dom.table("files", "file")
        self.assertEqual(len(files) - 1, min(50, len(summary["files"])))
        paths = {r[0] for r in files[1:]}
        self.assertIn(os.path.join(self.data, "set", "sample_0000.bin"), paths)
        # The data set first (issue 31): its rows, then the others'.
        self.assertEqual(files[0][1], "class")
        classes = [r[1] for r in files[1:]]
        data_rows = sum(1 for f in summary["files"].values() if f["class"] == "data")
        self.assertGreater(data_rows, 0)
        self.assertEqual(classes[:data_rows], ["data"] * data_rows)
        self.assertNotIn("data", classes[data_rows:])
        # The bandwidth over the run (no batch region here), binned to its
        # length: the run lasts about a second, its bins are milliseconds.
        lt = summary["loop_timeline"]
        self.assertEqual(lt["window"], "run")
        self.assertLess(lt["bin_ns"], 100 * 1000 * 1000, lt)
        self.assertEqual(sum(lt["read_bytes"]), summary["run"]["read"]["bytes"])
        timeline = [c for c in dom.canvases if c["section"] == "timeline"][0]
        self.assertEqual(int(timeline["data-points"]), 2 * len(lt["read_bytes"]))

        # The screenshot of the top of the page, down to the bandwidth plot:
        # its box holds the colours of the read and write bars.
        x, y, w, h = (int(v) for v in timeline["data-box"].split(","))
        shot = os.path.join(self.tmp, "shot.png")
        self.chromium(page, "--window-size=1280,%d" % (y + h + 10), "--force-device-scale-factor=0.5",
                      "--screenshot=" + shot)
        width, height, rows = png_pixels(shot)
        scale = width / 1280.0
        colours = set()
        for py in range(int(y * scale), min(height, int((y + h) * scale))):
            line = rows[py]
            for px in range(int(x * scale), min(width, int((x + w) * scale))):
                r, g, b = line[px * 4:px * 4 + 3]
                if max(r, g, b) - min(r, g, b) > 48:
                    colours.add((r >> 5, g >> 5, b >> 5))
        self.assertGreaterEqual(len(colours), 2, "the bandwidth plot's bars are not on the screenshot")

    def run_twelve_ranks(self, run_id):
        """RANKS_PROGRAM as ranks 0-11 of one run, side by side."""
        procs = []
        for rank in range(12):
            e = dltest.traced_env(self.traces, {"DLPROF_RUN_ID": run_id, "RANK": str(rank),
                                                "PYTHONPATH": dltest.PYTHON_DIR})
            procs.append(subprocess.Popen([dltest.SYSTEM_PYTHON, "-c", RANKS_PROGRAM, self.data],
                                          env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for p in procs:
            _, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)

    def test_twelve_ranks(self):
        """Per rank: batch wait per rank and a heat map of rank x step with a
        cell per (rank, step) of the JSON, and a row per rank."""
        self.run_twelve_ranks("html-report-ranks")
        summary, page = self.report()
        dom = self.load(page, summary)
        ranks = [r for r in summary["ranks"].values()]
        self.assertEqual(len(ranks), 12)
        cells = sum(len(r.get("steps", [])) for r in ranks)
        heat = [c for c in dom.canvases if c["data-kind"] == "matrix"]
        if cells:
            # Rank x step (batch wait), then rank x time (bytes read): a cell
            # per step and per second a rank read in.
            read_cells = sum(1 for r in ranks for v in r["timeline"]["read_bytes"] if v > 0)
            self.assertGreater(read_cells, 0)
            self.assertEqual(sum(sum(r["timeline"]["read_bytes"]) for r in ranks),
                             sum(r["read_bytes"] for r in ranks))
            self.assertEqual([int(c["data-points"]) for c in heat], [cells, read_cells])
            table = dom.table("ranks", "rank")
            self.assertEqual(len(table) - 1, 12)
            waits = {r[0]: r[table[0].index("batch wait")] for r in table[1:]}
            self.assertEqual(len(waits), 12)
            # The wait split by cause (issue 31): each rank's three parts in
            # its row and in a stacked bar per rank, and the job's in the
            # verdict, as the JSON has them. The ranks read in load_batch
            # with no worker: reading and the rest preprocessing, no hand-over.
            by_key = {k: r for k, r in summary["ranks"].items()}
            for row in table[1:]:
                r = by_key[row[0]]
                self.assertEqual(r["reading_ns"] + r["preprocessing_ns"] + r["handover_ns"]
                                 + r["worker_startup_ns"], r["batch_wait_ns"])
                self.assertGreater(r["reading_ns"], 0, r)
                self.assertEqual(r["handover_ns"], 0, r)
                self.assertEqual(r["worker_startup_ns"], 0, r)
                for column, key in (("reading", "reading_ns"), ("preprocessing", "preprocessing_ns"),
                                    ("hand-over", "handover_ns"), ("worker start-up", "worker_startup_ns")):
                    self.assertEqual(row[table[0].index(column)], shown_secs(r[key]), (column, r))
            causes = {c["heading"]: int(c["data-points"]) for c in dom.canvases
                      if c["heading"].startswith(("Where the batch wait went", "Batch wait per rank by cause"))}
            bw = summary["verdict"]["batch_wait"]
            shares = ", ".join("%s %d.%d %%" % (what, 1000 * bw[key] // bw["ns"] // 10, 1000 * bw[key] // bw["ns"] % 10)
                               for key, what in (("reading_ns", "reading"), ("preprocessing_ns", "preprocessing"),
                                                 ("handover_ns", "hand-over"),
                                                 ("worker_startup_ns", "worker start-up")))
            self.assertEqual(causes, {"Where the batch wait went: " + shares: 4,
                                      "Batch wait per rank by cause: reading, preprocessing, hand-over, "
                                      "worker start-up": 48})
        else:  # a summary without per-rank figures: I/O per rank only
            self.assertEqual(heat, [])

    def test_ranks_past_top(self):
        """Twelve ranks under --top 4, as a job of thousands of ranks is
        under the default --top (issue 37): the JSON lists the four ranks
        that waited the longest, without their steps, counts the eight
        others in left_out, and maps every rank (rank_map: a rank a row, as
        there are under 64, a step a column), each cell the batch wait of
        the full listing; the page draws the map's heat maps, the ranks'
        distributions and a table of the four, and stays as small."""
        self.run_twelve_ranks("html-report-top-ranks")
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json", self.traces], dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        full = json.loads(p.stdout)
        self.assertEqual(len(full["ranks"]), 12)
        self.assertNotIn("rank_map", full)
        summary, page = self.report(["--top", "4"])
        waits = sorted(((-r["batch_wait_ns"], -r["io_ns"], -r["read_bytes"], int(k))
                        for k, r in full["ranks"].items()))
        self.assertEqual(sorted(summary["ranks"]), sorted(str(w[3]) for w in waits[:4]))
        self.assertIn("3", summary["ranks"])  # it read nine times as much, and slept
        self.assertEqual(summary["left_out"]["ranks"], 8)
        for key, r in summary["ranks"].items():
            self.assertNotIn("steps", r)
            self.assertEqual(r["batch_wait_ns"], full["ranks"][key]["batch_wait_ns"])
        m = summary["rank_map"]
        self.assertEqual(m["ranks"], 12)
        self.assertEqual(m["rows"], [[r, r, 1] for r in range(12)])
        self.assertEqual(m["step_columns"], [[k, k] for k in range(1, 7)])
        for r in range(12):
            steps = full["ranks"][str(r)]["steps"]
            self.assertEqual(m["batch_wait_ns"][r], [st["batch_wait_ns"] for st in steps])
            self.assertEqual(sum(m["timeline"]["read_bytes"][r]), full["ranks"][str(r)]["read_bytes"])
        for h in m["histograms"].values():
            self.assertEqual(sum(h["counts"]), 12)
        dom = self.load(page, summary)
        heat = {c["heading"]: int(c["data-points"]) for c in dom.canvases if c["data-kind"] == "matrix"}
        self.assertEqual(heat["Batch wait per rank and step"], 72)
        read_cells = sum(1 for row in m["timeline"]["read_bytes"] for v in row if v > 0)
        self.assertEqual(heat["Bytes read per rank over time"], read_cells)
        headings = [c["heading"] for c in dom.canvases if c["section"] == "ranks"]
        self.assertIn("Ranks by batch wait (how many ranks had how much)", headings)
        self.assertIn("12 ranks: the plots per rank show the 4 ranks that waited the longest", dom.text)
        table = dom.table("ranks", "rank")
        self.assertEqual(sorted(r[0] for r in table[1:]), sorted(summary["ranks"]))

    def test_ranks_without_batch_regions_or_gpu(self):
        """Two ranks that only read, within a second, as an MPI job's ranks do
        (issue 36): the per-second plot has its one bar at second 0 on an
        axis that starts at 0 (it started at -1), and the ranks section draws
        no plot of their batch wait, data stall and straggler loss, which are
        all zero (it drew one at 0 ns), but says why; bytes read per rank are
        drawn, a bar per rank."""
        env = {"DLPROF_RUN_ID": "html-report-mpi-like"}
        for rank in range(2):
            data = os.path.join(self.data, "rank%d.bin" % rank)
            with open(data, "wb") as f:
                f.write(b"x" * (65536 * (rank + 1)))
            self.run_traced([dltest.program("read_files"), data], dict(env, RANK=str(rank)))
        summary, page = self.report()
        self.assertEqual(sorted(summary["ranks"]), ["0", "1"])
        for r in summary["ranks"].values():
            self.assertEqual((r["batch_wait_ns"], r["data_stall_ns"], r["straggler_loss_ns"]), (0, 0, 0))
        dom = self.load(page, summary)
        per_second = [c for c in dom.canvases if c["section"] == "timeline"][0]
        ticks = [int(t) for t in per_second["data-x-ticks"].split("|")]
        self.assertEqual(ticks[0], 0, ticks)
        self.assertEqual(int(per_second["data-points"]), 2 * len(summary["loop_timeline"]["read_bytes"]))
        headings = [c["heading"] for c in dom.canvases if c["section"] == "ranks"]
        self.assertNotIn("Batch wait, data stall and straggler loss per rank", headings)
        self.assertIn("Bytes read and written per rank", headings)
        per_rank = [c for c in dom.canvases if c["heading"] == "Bytes read and written per rank"][0]
        self.assertEqual(int(per_rank["data-nonzero"]), 2)  # each rank read
        self.assertIn("No batch wait, data stall or straggler loss to show per rank", dom.text)

    def test_gpu_trace_and_odd_paths(self):
        """A GPU trace from the fake libcupti (kernels around a read): the
        GPU section has a row per device. The data file's path holds
        "</script>", "&" and U+2028, which must neither break the page nor
        change in the files table."""
        odd_dir = os.path.join(self.data, "a<")
        os.mkdir(odd_dir)
        data = os.path.join(odd_dir, "script><!-- & \u2028.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 8192)
        if dltest.HAS_FAKE_CUDA:
            self.run_traced([dltest.FAKE_CUDA_APP, dltest.CUPTI_PLUGIN, data, "normal"],
                            dltest.fake_cuda_env(), timeout=60)
        else:
            self.run_traced(["/bin/cat", data])
        summary, page = self.report()
        self.assertIn(data, summary["files"])
        dom = self.load(page, summary)
        files = dom.table("files", "file")
        self.assertIn(data, {r[0] for r in files[1:]})
        if dltest.HAS_FAKE_CUDA:
            self.assertIsNotNone(summary["gpu"])
            devices = dom.table("gpu", "device")
            self.assertEqual(len(devices) - 1, len(summary["gpu"]["devices"]))
            self.assertTrue(any(c["section"] == "gpu" for c in dom.canvases))
            # GPU activity over time: the series of the JSON, plotted beside
            # the bandwidth (two charts in the timeline section).
            self.assertGreater(sum(summary["gpu_busy_per_second"]), 0)
            self.assertEqual(sum(1 for c in dom.canvases if c["section"] == "timeline"), 2)


    def test_events_the_tracer_dropped_are_said_above_everything(self):
        """Drop mode with rings of 64 events and a flusher asleep: 4 threads
        x 20 000 preads overrun them. The box above the verdict says how many
        events were dropped (the JSON's input.events_dropped: every pread,
        the open and the close less those recorded), as it says damage; it
        said nothing."""
        data = os.path.join(self.data, "burst.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 4096)
        self.run_traced([dltest.program("threads_pread"), data, "4", "20000"],
                        env={"DLPROF_ON_FULL": "drop", "DLPROF_BUFFER_KB": "4",
                             "DLPROF_FLUSH_MS": "600000", "DLPROF_CLOCK": "clock_gettime"})
        summary, page = self.report()
        dropped = summary["input"]["events_dropped"]
        recorded = summary["run"]["ops"]["read"] + 2
        self.assertGreater(dropped, 0, "nothing dropped: the test tested nothing")
        self.assertEqual(dropped + recorded, 4 * 20000 + 2)
        self.assertFalse(summary["input"]["complete"])
        dom = self.load(page, summary)
        self.assertEqual(dom.input_loss, "{:,} events dropped while tracing. The figures are of "
                         "what was recorded; dlprof-dump's messages name each file."
                         .format(dropped))

    def test_per_step_batch_wait_and_data_stall(self):
        """Two ranks of the fake CUDA program's "steps" mode: four steps, each
        a load_batch around a read while the GPU is idle, then two kernels.
        The JSON has each step's batch wait and data stall (none in step 1:
        its read comes before the GPU's window opens), adding up to the
        rank's; the ranks section draws a line per rank for each: two charts
        of 2 x 4 points."""
        if not dltest.HAS_FAKE_CUDA:
            self.skipTest("the CUPTI plugin and the fake libcupti are not built")
        self.trace_gpu_steps("html-report-steps")
        summary, page = self.report()
        ranks = list(summary["ranks"].values())
        self.assertEqual(len(ranks), 2)
        for r in ranks:
            steps = r["steps"]
            self.assertEqual([s["step"] for s in steps], [1, 2, 3, 4])
            self.assertTrue(all(s["batch_wait_ns"] > 0 for s in steps))
            self.assertEqual(steps[0]["data_stall_ns"], 0)
            self.assertTrue(all(s["data_stall_ns"] > 0 for s in steps[1:]), steps)
            self.assertEqual(sum(s["data_stall_ns"] for s in steps), r["data_stall_ns"])
        dom = self.load(page, summary)
        per_step = {c["heading"]: c["data-points"] for c in dom.canvases
                    if c["heading"].endswith("per rank and step")
                    or c["heading"].startswith("Data stall per rank and step")}
        self.assertEqual(per_step, {
            "Batch wait per rank and step": "8",
            "Data stall per rank and step (I/O while the rank's GPUs idled)": "8"})


if __name__ == "__main__":
    unittest.main(verbosity=2)
