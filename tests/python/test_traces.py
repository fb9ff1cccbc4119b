"""The Python module's trace API (python/dlprof/traces.py) against dlprof-dump.

Real runs are traced (threads reading a file, forked children, every stdio
call, and a Python program annotated with dlprof regions); the package the
build puts under build/python then reads them: read_events must hold every
event `dlprof-dump --format jsonl` lists, field for field, with numpy
integer dtypes and categorical strings; read_processes a row per trace;
summary() the `--summary --format json` document. A damaged trace decodes up
to its damage with a warning; `run` picks a run. `import dlprof` needs
neither numpy nor pandas, and the annotation API keeps working without
them."""

import json
import os
import subprocess
import textwrap
import warnings

import dlprof  # the build's (build/python: on PYTHONPATH under ctest)
import dltest

PACKAGE = dltest.PYTHON_DIR

FIELDS = ("ts", "dur", "pid", "tid", "rank", "host", "cat", "name", "path", "fd",
          "offset", "size", "bytes", "ret", "errno")


def jsonl_rows(events):
    return sorted((e["ts"], e["dur"], e["pid"], e["tid"], e["rank"], e["host"], e["cat"],
                   e["name"], e.get("path"), e.get("fd", -1), e.get("offset", -1),
                   e.get("size", 0), e.get("bytes", 0), e.get("ret", 0), e.get("errno", 0))
                  for e in events)


def frame_rows(df):
    cols = []
    for c in FIELDS:
        s = df[c]
        if hasattr(s, "cat"):
            s = s.astype(object)
            s = s.where(s.notna(), None)
        cols.append(s.tolist())
    return sorted(zip(*cols))


class PythonTracesTest(dltest.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not PACKAGE:
            raise RuntimeError("DLPROF_PYTHON_DIR not set: run through ctest")
        # The package the build made, not the source tree's.
        assert os.path.realpath(dlprof.__file__).startswith(os.path.realpath(PACKAGE)), \
            dlprof.__file__

    def make_traces(self, run_id="py-test"):
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(os.urandom(1 << 20))
        stdio_dir = os.path.join(self.data, "stdio")
        os.mkdir(stdio_dir)
        # Small rings: many blocks per trace.
        env = {"DLPROF_BUFFER_KB": "64", "DLPROF_RUN_ID": run_id}
        self.run_traced([dltest.program("threads_pread"), blob, "3", "3000"], env)
        self.run_traced([dltest.program("fork_children"), "0", blob, blob], env)
        self.run_traced([dltest.program("stdio_all"), stdio_dir], env)
        return blob

    def dump(self, *args):
        return subprocess.run([dltest.DUMP] + list(args), capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)

    def test_events_are_dlprof_dumps(self):
        self.make_traces()
        want = self.decode().events
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a clean trace: no warning
            df = dlprof.read_events(self.traces)
        self.assertGreater(len(want), 9000)
        self.assertEqual(len(df), len(want))
        self.assertEqual(frame_rows(df), jsonl_rows(want))
        self.assertEqual(set(df["cat"].astype(str)), {e["cat"] for e in want})
        self.assertIn("stdio", set(df["cat"].astype(str)))

    def test_nested_calls(self):
        # A stdio stream of the program's own (fopencookie) reads with pread:
        # each pread runs inside an fread, and is nested, as jsonl says. (The
        # freads themselves are not recorded: the stream has no traced file.)
        data = os.path.join(self.data, "cookie.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(4500))
        p = self.run_traced([dltest.program("cookie_stream"), data], {"DLPROF_RUN_ID": "py-nested"})
        _, freads, preads, nbytes = p.stdout.split()
        self.assertEqual(int(nbytes), 4500)
        want = self.decode().events
        df = dlprof.read_events(self.traces)
        self.assertEqual(frame_rows(df), jsonl_rows(want))
        nested = df[df["nested"]]
        self.assertEqual(sorted(zip(nested["ts"], nested["name"].astype(str), nested["bytes"])),
                         sorted((e["ts"], e["name"], e["bytes"]) for e in want if e.get("nested")))
        self.assertEqual(len(nested), int(preads))
        self.assertEqual(set(nested["op"].astype(str)), {"read"})
        self.assertEqual(int(nested["bytes"].sum()), 4500)
        self.assertFalse(df.loc[df["path"] == data, "nested"].drop(nested.index).any())

    def test_asynchronous_requests(self):
        # io_uring through syscall() and POSIX AIO (a request submitted on
        # one thread and reaped on another): each request a row, as jsonl
        # has it, with the thread that submitted it and when it was reaped.
        env = {"DLPROF_RUN_ID": "py-async"}
        self.run_traced([dltest.program("uring_raw"), self.data], env)
        self.run_traced([dltest.program("posix_aio"), self.data], env)
        want = [e for e in self.decode().events if e["cat"] == "aio"]
        self.assertEqual(len(want), 8 + 10)
        df = dlprof.read_events(self.traces)
        self.assertEqual(frame_rows(df), jsonl_rows(self.decode().events))
        aio = df[df["cat"] == "aio"]
        self.assertEqual(sorted(zip(aio["ts"], aio["kind"].astype(str), aio["tid"],
                                    aio["submit_tid"], aio["reaped"], aio["bytes"])),
                         sorted((e["ts"], e["name"], e["tid"], e["submit_tid"], e["reaped"],
                                 e.get("bytes", 0)) for e in want))
        self.assertEqual(len(set(aio["submit_tid"])), 3)  # two programs, one's other thread
        self.assertTrue((df.loc[df["cat"] != "aio", ["submit_tid", "reaped"]] == -1).all().all())

    def test_dtypes(self):
        self.make_traces()
        df = dlprof.read_events(self.traces)
        self.assertEqual(list(df.columns), list(dlprof.traces.EVENT_COLUMNS))
        for c in df.columns:
            if c in dlprof.traces.ev.CATEGORICAL:
                self.assertEqual(str(df[c].dtype), "category", c)
            else:
                kind = {"nested": "b", "value": "f"}.get(c, "i")
                self.assertEqual(df[c].dtype.kind, kind, (c, df[c].dtype))
        self.assertEqual(df["ts"].dtype.itemsize, 8)
        self.assertTrue(df["path"].isna().any())  # close(), fstat() ... have none
        self.assertTrue(df["path"].notna().any())

    def test_columns_subset(self):
        self.make_traces()
        full = dlprof.read_events(self.traces)
        some = dlprof.read_events(self.traces, columns=["path", "ts", "bytes"])
        self.assertEqual(list(some.columns), ["path", "ts", "bytes"])
        for c in some.columns:
            self.assertTrue(some[c].astype(object).equals(full[c].astype(object)), c)
        with self.assertRaises(ValueError):
            dlprof.read_events(self.traces, columns=["nope"])

    def test_processes(self):
        self.make_traces()
        procs = dlprof.read_processes(self.traces)
        files = dltest.trace_files(self.traces)
        self.assertEqual(len(procs), len(files))
        self.assertEqual(len(procs), 5)  # threads_pread, fork_children + 2, stdio_all
        self.assertEqual(sorted(procs["pid"]), sorted(dltest.read_header(f)["pid"]
                                                      for f in files))
        self.assertEqual(sorted(procs["trace"]), sorted(files))
        self.assertTrue(procs["opened"].all())
        df = dlprof.read_events(self.traces)
        self.assertEqual(int(procs["events"].sum()), len(df))
        for row in procs.itertuples():
            mine = df[df["pid"] == row.pid]
            self.assertEqual(len(mine), row.events)
            self.assertEqual(int(mine["ts"].min()), row.first_start)
        by_file = {f: dltest.read_header_strings(f) for f in files}
        for row in procs.itertuples():
            strings = by_file[row.trace]
            self.assertEqual(row.cmdline, strings["cmdline"].split("\0"))
            self.assertEqual(row.clock, strings["clock"])
            self.assertTrue(row.clock.startswith(("tsc", "clock_gettime")), row.clock)
            self.assertEqual(row.run, "py-test")
            mine = df[df["pid"] == row.pid]
            self.assertEqual(row.end, int((mine["ts"] + mine["dur"]).max()))
            self.assertLessEqual(row.start, row.first_start)
            self.assertEqual(row.dropped, 0)
            self.assertTrue(row.clean_exit)
        self.assertIn(dltest.program("threads_pread"), procs["cmdline"].map(lambda a: a[0]).tolist())
        quick = dlprof.read_processes(self.traces, dropped=False)
        self.assertEqual(list(quick["dropped"]), [-1] * len(quick))
        self.assertTrue(quick.drop(columns="dropped").equals(procs.drop(columns="dropped")))
        parent = procs[procs["exe"].str.endswith("fork_children")]
        self.assertEqual(len(parent), 3)
        pids = set(parent["pid"])
        self.assertEqual(sum(p in pids for p in parent["ppid"]), 2)  # the two children

    def test_command_line_round_trip(self):
        """read_processes gives each process's argv as it was: the last
        argument, empty ones and ones with spaces included."""
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(b"x" * 4096)
        code = "import sys; open(sys.argv[1], 'rb').read()"
        argvs = {"a": [dltest.SYSTEM_PYTHON, "-c", code, blob, "", "two words", "last"],
                 "b": [dltest.SYSTEM_PYTHON, "-c", code, blob, "x", ""],
                 "c": [dltest.SYSTEM_PYTHON, "-c", code, blob]}
        for run, argv in argvs.items():
            self.run_traced(argv, {"DLPROF_RUN_ID": run})
        for run, argv in argvs.items():
            procs = dlprof.read_processes(self.traces, run=run)
            self.assertEqual(procs["cmdline"].tolist(), [argv])

    def test_summary_is_dlprof_dumps(self):
        self.make_traces()
        want = self.dump("--summary", "--format", "json", self.traces)
        self.assertEqual(want.returncode, 0, want.stderr)
        got = dlprof.summary(self.traces)
        self.assertEqual(got, json.loads(want.stdout))
        self.assertEqual(got["processes"], 5)

    def test_damaged_trace_decodes_up_to_the_damage(self):
        self.make_traces()
        big = max(dltest.trace_files(self.traces), key=os.path.getsize)
        with open(big, "r+b") as f:
            f.truncate(os.path.getsize(big) - 100)
        jsonl = dltest.decode(self.traces)
        self.assertEqual(jsonl.dump_rc, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = dlprof.read_events(self.traces)
        messages = [str(w.message) for w in caught]
        self.assertTrue(any(big in m and "byte" in m for m in messages), messages)
        self.assertEqual(len(df), len(jsonl.events))
        self.assertEqual(frame_rows(df), jsonl_rows(jsonl.events))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = dlprof.summary(self.traces)
        self.assertTrue(caught)
        self.assertEqual(s, json.loads(self.dump("--summary", "--format", "json",
                                                 self.traces).stdout))

    def test_run_selection(self):
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(os.urandom(1 << 16))
        self.run_traced([dltest.program("threads_pread"), blob, "2", "50"],
                        {"DLPROF_RUN_ID": "run-a"})
        self.run_traced([dltest.program("fork_children"), "0", blob, blob],
                        {"DLPROF_RUN_ID": "run-b"})
        a = dlprof.read_processes(self.traces, run="run-a")
        b = dlprof.read_processes(self.traces, run="run-b")
        self.assertEqual(len(a), 1)
        self.assertEqual(len(b), 3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            latest = dlprof.read_events(self.traces)
        self.assertEqual(set(latest["pid"]), set(b["pid"]))
        # The latest run is taken, and the others named, as dlprof-dump does.
        self.assertTrue(any("2 runs" in str(w.message) and "run-a" in str(w.message)
                            for w in caught), [str(w.message) for w in caught])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            dlprof.read_processes(self.traces, run="run-b")  # named: no warning
        self.assertEqual(set(dlprof.read_events(self.traces, run="run-a")["pid"]),
                         set(a["pid"]))
        want = self.dump("--run", "run-a", "--format", "jsonl", self.traces)
        self.assertEqual(want.returncode, 0, want.stderr)
        self.assertEqual(frame_rows(dlprof.read_events(self.traces, run="run-a")),
                         jsonl_rows(json.loads(l) for l in want.stdout.splitlines()))
        with self.assertRaises(FileNotFoundError):
            dlprof.read_events(self.traces, run="no-such-run")
        missing = os.path.join(self.tmp, "nothing-here")
        with self.assertRaises(FileNotFoundError) as e:
            dlprof.read_events(missing)
        self.assertIn(missing, str(e.exception))
        # A missing input beside real ones: a warning naming it, the rest read.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            both = dlprof.read_events([missing, self.traces], run="run-b")
        self.assertTrue(any(missing in str(w.message) for w in caught))
        self.assertEqual(len(both), len(latest))

    def test_import_without_numpy_and_annotations(self):
        """`import dlprof` with numpy and pandas unimportable: the annotation
        API works (traced, its regions are in the trace), the trace API says
        what it lacks; read back, the regions are named events."""
        data = os.path.join(self.data, "f.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 4096)
        code = textwrap.dedent("""
            import sys
            for m in ("numpy", "pandas"):
                sys.modules[m] = None  # import numpy now raises ImportError
            import dlprof
            assert "numpy" not in [k for k, v in sys.modules.items() if v is not None]
            assert dlprof.active(), "not traced"
            with dlprof.region("phase", epoch=1):
                with dlprof.region("inner"):
                    with open(sys.argv[1], "rb") as f:
                        f.read()
                dlprof.counter("samples", -7)
                dlprof.counter("flow_id", (1 << 60) + 1)  # past float64's 53 bits
                dlprof.counter("loss", 0.1)
                dlprof.counter("loss", -2.25)
                dlprof.counter("lr", 3e-4)
            dlprof.mark("done")
            dlprof.flow_start("batch", 41)
            dlprof.flow_finish("batch", 41)
            dlprof.flow_start("batch", (1 << 63) + 5)
            try:
                dlprof.read_events(sys.argv[1])
            except ImportError:
                print("no numpy")
            assert "read_events" in dir(dlprof)
        """)
        env = {"PYTHONPATH": PACKAGE, "DLPROF_RUN_ID": "py-annot"}
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", code, data], env)
        self.assertEqual(p.stdout.strip(), "no numpy", p.stderr)
        want = self.decode().events
        df = dlprof.read_events(self.traces)
        self.assertEqual(frame_rows(df), jsonl_rows(want))
        app = df[df["cat"] == "app"]
        self.assertIn("phase epoch=1", set(app["name"].astype(str)))
        self.assertIn("done", set(app["name"].astype(str)))
        self.assertTrue(app["path"].isna().all())
        reads = df[(df["path"] == data) & (df["cat"] == "posix") & (df["bytes"] > 0)]
        self.assertEqual(int(reads["bytes"].sum()), 4096)
        # Regions' depth and counters' value, as jsonl has them.
        # (A float's sample is `value`, an integer's `value_int`, exact.)
        exact = [v if op == "counter" and r == 1 else i
                 for v, i, op, r in zip(app["value"], app["value_int"], app["op"].astype(str),
                                        app["ret"])]
        self.assertEqual(sorted(zip(app["ts"], app["kind"].astype(str), app["depth"], exact)),
                         sorted((e["ts"], e["kind"], e.get("depth", -1), e.get("value", 0))
                                for e in want if e["cat"] == "app"))
        self.assertIn(-7, set(app["value"]))
        # A float counter is the number the program gave, in jsonl and the
        # frame (they held the double's bits as an int64: 0.1 read
        # 4591870180066957722); `value` is float64 for every row.
        self.assertEqual(str(df["value"].dtype), "float64")
        by_name = {n: list(app.loc[app["name"] == n, "value"]) for n in ("loss", "lr", "samples")}
        self.assertEqual(by_name, {"loss": [0.1, -2.25], "lr": [3e-4], "samples": [-7]})
        # An integer's exactly, past float64's 53 bits, in value_int.
        ints = {n: list(app.loc[app["name"] == n, "value_int"]) for n in ("flow_id", "samples")}
        self.assertEqual(ints, {"flow_id": [(1 << 60) + 1], "samples": [-7]})
        self.assertEqual(set(app.loc[app["name"] == "loss", "value_int"]), {0})
        self.assertEqual(sorted(e["value"] for e in want if e.get("name") == "loss"),
                         [-2.25, 0.1])
        self.assertEqual(set(app["depth"]), {-1, 0, 1})
        self.assertTrue((df.loc[df["cat"] != "app", ["depth", "value"]] == [-1, 0]).all().all())
        # Flows' ids, as jsonl has them (as int64: 2^63 and above read negative).
        flows = df[df["flow"] != -1]
        self.assertEqual(sorted(zip(flows["ts"], flows["kind"].astype(str), flows["flow"])),
                         sorted((e["ts"], e["kind"], e["flow"] - (1 << 64) * (e["flow"] >> 63))
                                for e in want if "flow" in e))
        self.assertEqual(sorted(flows["kind"].astype(str)), ["flow_finish"] + ["flow_start"] * 2)
        self.assertEqual(sorted(flows["flow"]), [-(1 << 63) + 5, 41, 41])
        # read_regions: a row per region event, outermost as the summary counts them.
        regions = dlprof.read_regions(self.traces)
        self.assertEqual(sorted(zip(regions["pid"], regions["tid"], regions["name"].astype(str),
                                    regions["start"], regions["end"], regions["depth"])),
                         sorted((e["pid"], e["tid"], e["name"], e["ts"], e["ts"] + e["dur"],
                                 e["depth"]) for e in want if e.get("kind") == "region"))
        self.assertEqual(regions["name"].astype(str).tolist(), ["phase epoch=1", "inner"])
        self.assertEqual(regions["outermost"].tolist(), [True, False])
        self.assertFalse(regions["nvtx"].any())
        self.assertEqual(str(regions["name"].dtype), "category")
        s = dlprof.summary(self.traces)
        outer = {r["name"]: r["instances"] for r in s["regions"] if not r["outside"]}
        self.assertEqual(outer, {"phase epoch=1": 1})

    def test_gpu_events_from_the_fake_cupti(self):
        """GPU records (kernels and the clock record) from the
        CUPTI plugin against the fake libcupti: kind, name (the kernel or
        copy), bytes and the API caller's tid as jsonl has them. fd, offset,
        ret of GPU rows are the raw fields (device, stream, configuration),
        so they are compared for the I/O rows only."""
        plugin = os.environ.get("DLPROF_CUPTI_PLUGIN", "")
        fake = os.environ.get("DLPROF_FAKE_CUPTI", "")
        app = os.environ.get("DLPROF_FAKE_CUDA_APP", "")
        if not (plugin and fake and app):
            self.skipTest("no CUPTI plugin built")
        data = os.path.join(self.data, "batch.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 8192)
        self.run_traced([app, plugin, data, "normal"],
                        {"LD_PRELOAD": dltest.LIB + ":" + fake, "CUDA_INJECTION64_PATH": None},
                        timeout=60)
        want = self.decode().events
        df = dlprof.read_events(self.traces)
        common = ("ts", "dur", "pid", "tid", "rank", "host", "cat", "name", "bytes")
        key = [FIELDS.index(c) for c in common]
        self.assertEqual(sorted(tuple(r[k] for k in key) for r in frame_rows(df)),
                         sorted(tuple(r[k] for k in key) for r in jsonl_rows(want)))
        self.assertEqual(sorted(df["kind"].astype(str)),
                         sorted(e.get("kind", e["name"]) for e in want))
        io_want = [e for e in want if e["cat"] != "cuda"]
        self.assertEqual(frame_rows(df[df["cat"] != "cuda"]), jsonl_rows(io_want))
        gpu = df[df["cat"] == "cuda"]
        kinds = set(gpu["kind"].astype(str))
        self.assertIn("kernel", kinds)
        # The GPU columns, as jsonl's device, stream, correlation, config.
        def obj(col):
            return [None if isinstance(v, float) else v for v in gpu[col].astype(object)]
        self.assertEqual(
            sorted(zip(gpu["ts"], gpu["name"].astype(str), gpu["device"], gpu["stream"],
                       gpu["correlation"], obj("config"), obj("kernel"), obj("copy"))),
            sorted((e["ts"], e["name"], e.get("device", -1), e.get("stream", -1),
                    e.get("correlation", -1), e.get("config"),
                    e["name"] if e.get("kind") == "kernel" else None, None)
                   for e in want if e["cat"] == "cuda"))
        self.assertTrue((gpu.loc[gpu["kind"] == "kernel", "device"] >= 0).all())
        io = df[df["cat"] != "cuda"]
        self.assertTrue((io[["device", "stream", "correlation"]] == -1).all().all())
        self.assertTrue(io["kernel"].isna().all() and io["config"].isna().all())
        kernels = gpu[gpu["kind"] == "kernel"]
        self.assertTrue(kernels["name"].astype(str).str.contains("(", regex=False).all(),
                        set(kernels["name"].astype(str)))  # the kernel's name, not "kernel"
        self.assertTrue(kernels["path"].isna().all())

    def test_filters_are_dlprof_dumps(self):
        """hosts, pids, ranks, time: the events dlprof-dump's --host, --pid,
        --rank, --from/--to keep."""
        self.make_traces()
        df = dlprof.read_events(self.traces)
        host = str(df["host"].iloc[0])
        pid = int(df["pid"].value_counts().index[0])
        base = int(df["ts"].min())
        ts = sorted(df["ts"])
        lo, hi = ts[len(ts) // 4] - base, ts[len(ts) // 2] - base

        def dumped(*args):
            p = self.dump("--format", "jsonl", *(list(args) + [self.traces]))
            self.assertEqual(p.returncode, 0, p.stderr)
            return jsonl_rows(json.loads(l) for l in p.stdout.splitlines())

        def secs(ns):
            return "%d.%09d" % (ns // 10**9, ns % 10**9)

        cases = [
            (dict(pids=[pid]), ["--pid", str(pid)]),
            (dict(hosts=[host]), ["--host", host]),
            (dict(hosts=["no-such-host"]), ["--host", "no-such-host"]),
            (dict(ranks=[0]), ["--rank", "0"]),
            (dict(time=(lo / 1e9, hi / 1e9)), ["--from", secs(lo), "--to", secs(hi)]),
            (dict(time=(lo / 1e9, None), pids=[pid]), ["--from", secs(lo), "--pid", str(pid)]),
            # One value as one, not as an iterable: hosts="vm" was {'v', 'm'}
            # (no row), pids=PID "'int' object is not iterable".
            (dict(pids=pid), ["--pid", str(pid)]),
            (dict(hosts=os.uname().nodename), ["--host", os.uname().nodename]),
            (dict(ranks=0, pids=pid), ["--rank", "0", "--pid", str(pid)]),
        ]
        for kw, args in cases:
            want = dumped(*args)
            got = frame_rows(dlprof.read_events(self.traces, **kw))
            self.assertEqual(got, want, (kw, args))
        self.assertGreater(len(dumped("--from", secs(lo), "--to", secs(hi))), 1000)
        # A negative time is refused, as dlprof-dump refuses it (it wrapped
        # around as a uint64: no row, and no word).
        self.assertEqual(self.dump("--from", "-1", self.traces).returncode, 2)
        for time in ((-1, 0.01), (0, -0.5), (float("nan"), None)):
            with self.assertRaises(ValueError, msg=time) as e:
                dlprof.read_events(self.traces, time=time)
            self.assertIn("time=", str(e.exception))
        self.assertEqual(len(dlprof.read_events(self.traces, ranks=[-1])), len(df))
        self.assertEqual(list(dlprof.read_events(self.traces, columns="ts")["ts"]),
                         list(df["ts"]))  # was "no such column: t, s"
        # Three values were taken as two; an end before the start read as
        # no event, silently.
        for time in ((0, 1, 2), (2, 1), (1,)):
            with self.assertRaises(ValueError, msg=time) as e:
                dlprof.read_events(self.traces, time=time)
            self.assertIn("time=", str(e.exception))

    def test_header_only_and_unreadable_traces(self):
        """A trace with its header and no block: an empty frame with the
        usual dtypes and its process listed; a damaged header: an error."""
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(os.urandom(1 << 16))
        self.run_traced([dltest.program("threads_pread"), blob, "1", "10"])
        full = dltest.trace_files(self.traces)[0]
        first_block = dltest.block_headers(full)[0]["offset"]
        short = os.path.join(self.tmp, "short")
        os.mkdir(short)
        with open(full, "rb") as f, open(os.path.join(short, "t.dlprof"), "wb") as g:
            g.write(f.read(first_block))
        df = dlprof.read_events(short)
        self.assertEqual(len(df), 0)
        whole = dlprof.read_events(self.traces)
        self.assertEqual(dict(df.dtypes.astype(str)), dict(whole.dtypes.astype(str)))
        procs = dlprof.read_processes(short)
        self.assertEqual(list(procs["blocks"]), [0])
        self.assertEqual(list(procs["first_start"]), [-1])
        # Its only block torn (the process killed while writing it): no row,
        # and a warning naming the file and byte, as dlprof-dump says it
        # (it was dropped without a word, as a trace of no block).
        blocks = dltest.block_headers(full)
        torn = os.path.join(short, "t.dlprof")
        with open(full, "rb") as f, open(torn, "wb") as g:
            g.write(f.read(first_block + 64 + blocks[0]["compressed_size"] // 2))
        self.assertEqual(dltest.block_headers(torn), [])
        p = self.dump("--format", "jsonl", short)
        self.assertEqual((p.returncode, p.stdout), (1, ""), p.stderr)
        self.assertIn("torn last block", p.stderr)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = dlprof.read_events(short)
        self.assertEqual(len(df), 0)
        messages = [str(w.message) for w in caught]
        self.assertTrue(any(torn in m and "byte %d" % first_block in m and "torn" in m
                            for m in messages), messages)
        # A trace of no block yet, whole: no warning.
        with open(full, "rb") as f, open(torn, "wb") as g:
            g.write(f.read(first_block))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            self.assertEqual(len(dlprof.read_events(short)), 0)
        with open(os.path.join(short, "t.dlprof"), "wb") as g:
            g.write(b"DLPROF\r\n" + b"\xff" * 200)
        with self.assertRaises(OSError) as e:
            dlprof.read_events(short)
        self.assertNotIsInstance(e.exception, FileNotFoundError)
        # An unreadable trace beside the run's readable one: the summary of
        # the rest, with a warning, as dlprof-dump's (it raised RuntimeError),
        # its "input" saying one trace was unreadable.
        run_dir = os.path.dirname(full)
        with open(os.path.join(run_dir, "empty.dlprof"), "wb"):
            pass
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = dlprof.summary(self.traces)
        self.assertEqual(s["processes"], 1)
        self.assertEqual((s["input"]["complete"], s["input"]["unreadable_traces"]), (False, 1))
        self.assertTrue(any("empty.dlprof" in str(w.message) for w in caught))
        self.assertIn("t.dlprof", str(e.exception))

    def test_lookup_helpers(self):
        import numpy as np
        t = dlprof.traces
        ids = np.array([5, 1 << 31, 5, 7, 1 << 31], np.uint32)  # sparse: sorted search
        p = t._present(np, ids)
        self.assertEqual(p.tolist(), [5, 7, 1 << 31])
        self.assertEqual(t._lookup(np, ids, p, [10, 11, 12]).tolist(), [10, 12, 10, 11, 12])
        ids = np.array([3, 1, 3, 0], np.uint16)  # dense: a table
        p = t._present(np, ids)
        self.assertEqual(p.tolist(), [0, 1, 3])
        self.assertEqual(t._lookup(np, ids, p, [7, 8, 9]).tolist(), [9, 8, 9, 7])

    def test_kind_rules_come_from_the_library(self):
        # The package reads each kind's rules (reader.h, dlprof_kind_traits)
        # rather than restating them: where the bytes are, whose thread it is.
        from dlprof import _native as nv
        kinds = nv.Kinds(nv.lib())
        self.assertEqual(kinds.get(15)[:3], ("pread64", "posix", "read"))
        self.assertEqual(kinds.get(15).bytes, nv.BYTES_RET)
        self.assertEqual(kinds.get(106).bytes, nv.BYTES_AUX)  # fread
        self.assertEqual(kinds.get(161).bytes, nv.BYTES_AUX)  # MPI_File_read_at
        memset = kinds.get(202)
        self.assertEqual((memset.bytes, memset.thread), (nv.BYTES_SIZE, nv.THREAD_STREAM))
        self.assertTrue(memset.traits & nv.KIND_GPU_WORK and memset.traits & nv.KIND_CONFIG)
        self.assertEqual(kinds.get(203).thread, nv.THREAD_STREAM)  # a sync: no GPU work
        self.assertFalse(kinds.get(203).traits & nv.KIND_GPU_WORK)
        self.assertEqual(kinds.get(204).thread, nv.THREAD_CALLER)  # cuda_runtime
        self.assertTrue(kinds.get(235).traits & nv.KIND_FLOW_START)
        self.assertEqual(kinds.get(400), ("kind_400", "unknown", "", 0, 0, 0))


if __name__ == "__main__":
    import unittest
    unittest.main()
