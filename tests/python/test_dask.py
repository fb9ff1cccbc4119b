"""dlprof.dask (python/dlprof/dask.py) against dlprof.read_events and
dlprof-dump, on a dask.distributed LocalCluster of two worker processes (so
that partial summaries really cross processes, as the library's bytes).

Real runs are traced with small buffers (many blocks a trace), read with
partitions of a few thousand events (traces split by block ranges): the
computed frame must equal read_events' row for row, the filters too; the
summary merged by Dask tasks must equal `dlprof-dump --summary --format
json` as a whole document, so that figures added to the summary later are
covered; a damaged trace gives the same events and summary both ways."""

import json
import os
import subprocess
import warnings

import dlprof  # the build's (build/python: on PYTHONPATH under ctest)
import dlprof.dask
import dltest

PACKAGE = dltest.PYTHON_DIR


def plain(df):
    """The frame with categoricals as objects (NaN as None) and a fresh index."""
    df = df.reset_index(drop=True)
    for c in df.columns:
        if str(df[c].dtype) == "category":
            s = df[c].astype(object)
            df[c] = s.where(s.notna(), None)
    return df


class DaskTest(dltest.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not PACKAGE:
            raise RuntimeError("DLPROF_PYTHON_DIR not set: run through ctest")
        from dask.distributed import Client, LocalCluster
        # Workers import the package the build made (the environment's
        # PYTHONPATH reaches them).
        os.environ["PYTHONPATH"] = PACKAGE + os.pathsep + os.environ.get("PYTHONPATH", "")
        cls.cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=40)
        cls.client = Client(cls.cluster)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.cluster.close()

    def make_traces(self):
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(os.urandom(1 << 20))
        stdio_dir = os.path.join(self.data, "stdio")
        os.mkdir(stdio_dir)
        env = {"DLPROF_BUFFER_KB": "64", "DLPROF_RUN_ID": "dask-test"}
        self.run_traced([dltest.program("threads_pread"), blob, "3", "3000"], env)
        self.run_traced([dltest.program("fork_children"), "0", blob, blob], env)
        self.run_traced([dltest.program("stdio_all"), stdio_dir], env)

    def native_summary(self):
        p = subprocess.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                           capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        return p, json.loads(p.stdout)

    def test_frame_and_summary(self):
        self.make_traces()
        want = dlprof.read_events(self.traces)
        ddf = dlprof.dask.read_events(self.traces, partition_events=2000)
        traces = len(dltest.trace_files(self.traces))
        # Large traces split by block ranges: more partitions than traces.
        self.assertGreater(ddf.npartitions, traces)
        self.assertEqual(list(ddf.columns), list(want.columns))
        self.assertEqual([str(t) for t in ddf.dtypes], [str(t) for t in want.dtypes])
        got = self.client.compute(ddf).result()
        self.assertEqual(len(got), len(want))
        self.assertTrue(plain(got).equals(plain(want)))
        # Dtypes survive the trip: numpy integers and categoricals.
        self.assertEqual(dict(got.dtypes.astype(str)), dict(want.dtypes.astype(str)))
        # A reduction over partitions.
        by_host = self.client.compute(ddf.groupby("pid")["bytes"].sum()).result()
        self.assertEqual(by_host.sort_index().tolist(),
                         want.groupby("pid")["bytes"].sum().sort_index().tolist())

        # Filters and a column subset, as read_events has them.
        pid = int(want["pid"].value_counts().index[0])
        ts = sorted(want["ts"])
        base = ts[0]
        window = ((ts[len(ts) // 4] - base) / 1e9, (ts[len(ts) // 2] - base) / 1e9)
        for kw in (dict(pids=[pid]), dict(time=window, columns=["ts", "path", "bytes"]),
                   dict(ranks=[5])):
            exp = dlprof.read_events(self.traces, **kw)
            got = dlprof.dask.read_events(self.traces, partition_events=2000, **kw)
            self.assertTrue(plain(self.client.compute(got).result()).equals(plain(exp)), kw)

        p, native = self.native_summary()
        self.assertEqual(p.returncode, 0, p.stderr)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # clean traces: no warning
            s = dlprof.dask.summary(self.traces, client=self.client)
        self.assertEqual(s, native)
        self.assertEqual(s["processes"], 5)
        # Every grouping and merge order gives the same document.
        self.assertEqual(dlprof.dask.summary(self.traces, client=self.client, tasks=1), native)
        self.assertEqual(dlprof.dask.summary(self.traces, client=self.client, tasks=5,
                                             fan_in=2), native)
        self.assertEqual(dlprof.summary(self.traces), native)

    def test_damaged_trace(self):
        self.make_traces()
        big = max(dltest.trace_files(self.traces), key=os.path.getsize)
        with open(big, "r+b") as f:
            f.truncate(os.path.getsize(big) - 100)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = dlprof.read_events(self.traces)
        ddf = dlprof.dask.read_events(self.traces, partition_events=2000)
        got = self.client.compute(ddf).result()
        self.assertTrue(plain(got).equals(plain(want)))
        p, native = self.native_summary()
        self.assertEqual(p.returncode, 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = dlprof.dask.summary(self.traces, client=self.client)
        self.assertTrue(any(big in str(w.message) for w in caught),
                        [str(w.message) for w in caught])
        self.assertEqual(s, native)

    def test_trace_of_a_torn_block_alone_is_warned_about(self):
        """A trace whose only block is torn: no row, and its damage said
        where its partition is computed, as read_events says it (it was
        left out of the partitions, and so unsaid)."""
        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(os.urandom(1 << 16))
        self.run_traced([dltest.program("threads_pread"), blob, "1", "10"])
        full = dltest.trace_files(self.traces)[0]
        block = dltest.block_headers(full)[0]
        torn_dir = os.path.join(self.tmp, "torn")
        os.mkdir(torn_dir)
        torn = os.path.join(torn_dir, "t.dlprof")
        with open(full, "rb") as f, open(torn, "wb") as g:
            g.write(f.read(block["offset"] + 64 + block["compressed_size"] // 2))
        self.assertEqual(dltest.block_headers(torn), [])
        ddf = dlprof.dask.read_events(torn_dir)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = ddf.compute(scheduler="synchronous")
        self.assertEqual(len(got), 0)
        messages = [str(w.message) for w in caught]
        self.assertTrue(any(torn in m and "byte %d" % block["offset"] in m for m in messages),
                        messages)

    def test_summary_of_ranks_regions_and_gpu(self):
        """Two ranks of an annotated loop (regions, batch waits), a GPU
        process through the fake CUPTI where built, stdio: every section of
        the summary crosses the workers as bytes and merges to the native
        document."""
        files = []
        for k in range(4):
            files.append(os.path.join(self.data, "f%d.bin" % k))
            with open(files[-1], "wb") as f:
                f.write(os.urandom(20000))
        loop = ("import sys, dlprof\n"
                "def batches():\n"
                "    for p in sys.argv[1:]:\n"
                "        with open(p, 'rb', buffering=0) as f:\n"
                "            yield f.read(4096)\n"
                "for epoch in range(2):\n"
                "    for b in dlprof.annotate_loader(batches(), epoch=epoch):\n"
                "        sum(b)\n")
        env = {"DLPROF_RUN_ID": "dask-ranks", "PYTHONPATH": PACKAGE}
        for rank in ("0", "1"):
            self.run_traced([dltest.SYSTEM_PYTHON, "-c", loop] + files, dict(env, RANK=rank))
        plugin = os.environ.get("DLPROF_CUPTI_PLUGIN", "")
        fake = os.environ.get("DLPROF_FAKE_CUPTI", "")
        app = os.environ.get("DLPROF_FAKE_CUDA_APP", "")
        if plugin and fake and app:
            self.run_traced([app, plugin, files[0], "normal"],
                            dict(env, RANK="1", LD_PRELOAD=dltest.LIB + ":" + fake,
                                 CUDA_INJECTION64_PATH=None), timeout=60)
        p, native = self.native_summary()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(native["regions"])
        self.assertEqual(sorted(native["ranks"]), ["0", "1"])
        for tasks in (None, 1, 3):
            self.assertEqual(dlprof.dask.summary(self.traces, client=self.client, tasks=tasks,
                                                 fan_in=2), native)

    def test_hosts_of_other_clocks(self):
        """Three hosts in time namespaces a day apart (as
        tests/integration/test_clock_domains.py makes them): a partition
        then opens the whole input for the time base; the frame and the
        summary are still read_events' and dlprof-dump's."""
        def unshare(seconds, host, cmd):
            return ["unshare", "--uts", "--pid", "--mount-proc", "--time", "--monotonic",
                    str(seconds), "--fork", "sh", "-c",
                    "hostname %s && LD_PRELOAD=%s exec %s" % (host, dltest.LIB, cmd)]
        probe = subprocess.run(unshare(86400, "probe", "true"), capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=30,
                               env=dict(os.environ, DLPROF_DIR=os.path.join(self.tmp, "probe")))
        if probe.returncode != 0:
            self.skipTest("no time namespaces here")
        a, b = os.path.join(self.data, "a"), os.path.join(self.data, "b")
        env = {"DLPROF_RUN_ID": "dask-clocks"}
        self.run_traced(["dd", "if=/dev/zero", "of=" + a, "bs=4096", "count=10"], env)
        self.run_traced(unshare(86400, "nodeB", "dd if=%s of=%s bs=4096" % (a, b)), env,
                        preload=False)
        self.run_traced(unshare(2 * 86400, "nodeC", "dd if=%s of=/dev/null bs=4096" % b), env,
                        preload=False)
        want = dlprof.read_events(self.traces)
        self.assertEqual(want["host"].nunique(), 3)
        got = self.client.compute(dlprof.dask.read_events(self.traces)).result()
        self.assertTrue(plain(got).equals(plain(want)))
        # On one time base: the whole job within minutes, not days.
        self.assertLess(int(got["ts"].max() - got["ts"].min()), 600 * 10**9)
        p, native = self.native_summary()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(dlprof.dask.summary(self.traces, client=self.client), native)

    def test_bytes_of_another_layout_are_refused(self):
        lib = dlprof._native.lib()
        from dlprof.dask import _decode
        for junk in (b"", b"not a summary at all", b"DLPSUM02" + b"\0" * 200):
            with self.assertRaises(RuntimeError) as e:
                _decode(lib, junk)
            self.assertIn("summary", str(e.exception))


if __name__ == "__main__":
    import unittest
    unittest.main()
