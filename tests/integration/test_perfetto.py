"""dlprof-dump --format perfetto: Perfetto's native trace format.

Real programs (fork children, a child that exec's, threads, every STDIO
call, plain POSIX I/O, ranks, and a "CUDA program" against the fake libcupti
where it is built) are
traced into one directory. The .pftrace must decode with `protoc --decode`
against perfetto_trace.proto (Perfetto's published field numbers), outside
and inside its compressed chunks. A small reader (perfetto_reader.py) decodes it the
way Perfetto's trace processor does (interned strings per sequence, the
incremental clock, BEGIN/END pairs per track) and the result is compared
with the Chrome JSON of the same traces: the same slices (process, thread,
name, start and duration to the nanosecond, and arguments), the same tracks
and names, the same flows from CUDA launches to their kernels, the same
bandwidth counters; and the processes are ordered host, rank, pid.
Perfetto's own processes, threads and machines: test_perfetto_processes.py.
"""

import collections
import decimal
import json
import os
import re
import subprocess

import dltest
from dltest.perfetto import PerfettoTrace, fields, packets, protoc_decode, require_protoc

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1024 * 1024


class PerfettoTest(dltest.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        require_protoc()

    def trace_programs(self):
        env = {"DLPROF_RUN_ID": "perfetto-test"}
        files = sorted(dltest.write_files(self.data, 3, lambda i: 20000 + i))
        self.run_traced([dltest.program("fork_children"), "_exit"] + files, env=env)
        self.run_traced([dltest.program("threads_pread"), files[0], "3", "200"],
                        env=dict(env, RANK="1"))
        self.run_traced([dltest.program("flows"), "5"], env=env)
        self.run_traced([dltest.program("threads_pread"), files[1], "2", "50"],
                        env=dict(env, RANK="1"))
        stdio_dir = os.path.join(self.data, "stdio")
        os.mkdir(stdio_dir)
        self.run_traced([dltest.program("stdio_all"), stdio_dir], env=env)
        self.run_traced([dltest.program("basic_io"), self.data], env=dict(env, RANK="0"))
        # Asynchronous requests, seven in flight together: on their file's
        # track, each lane a set of requests that do not overlap.
        uring = os.path.join(self.data, "uring")
        os.mkdir(uring)
        self.run_traced([dltest.program("uring_raw"), uring], env=env)
        # A child that exec's: its two images are one process, one track.
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.mkdir(elsewhere)
        self.run_traced([dltest.program("fork_exec"), self.data, elsewhere,
                         dltest.program("write_file"), os.path.join(self.data, "exec.dat"),
                         "25000", "4096"], env=env)
        self.gpu = dltest.HAS_FAKE_CUDA
        if self.gpu:
            batch = os.path.join(self.data, "batch.bin")
            with open(batch, "wb") as f:
                f.write(b"x" * 8192)
            self.run_traced([dltest.FAKE_CUDA_APP, dltest.CUPTI_PLUGIN, batch, "normal"],
                            env=dltest.fake_cuda_env(dict(env, DLPROF_CUDA="kernel,runtime")),
                            timeout=60)

    def dump(self, fmt, out, *options):
        p = subprocess.run([dltest.DUMP, "--format", fmt, *options, "-o", out, self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        with open(out, "rb") as f:
            return f.read()

    def protoc_decode(self, data):
        p = protoc_decode(data)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        return p.stdout.decode()

    def test_matches_the_chrome_timeline(self):
        self.trace_programs()
        trace = self.compare_with_chrome()
        # Asynchronous requests on their file's track (lanes for those in
        # flight together), with the threads that submitted and reaped them.
        path = os.path.join(self.data, "uring", "a.dat")
        requests = [s for s in trace.slices if s["cat"] == "aio"]
        self.assertEqual(len(requests), 8)
        self.assertEqual({re.sub(r" \(overlap \d+\)$", "", trace.tracks[s["track"]]["name"])
                          for s in requests}, {"async I/O " + path})
        self.assertTrue(all(s["args"]["submit_tid"] == s["args"]["reaped_by"] > 0
                            and s["args"]["reaped"] >= s["ts"] + s["dur"] for s in requests))
        if self.gpu:
            self.assertEqual(len(trace.flows), 10 + 6)  # 10 kernels, flows.c's 6
            busy = [v for u, samples in trace.counters.items()
                    if trace.tracks[u]["name"] == "GPU 0 busy (%)" for _, v in samples]
            # 10 kernels of 2 us, some overlapping, in one or two 100 ms bins.
            self.assertTrue(busy and 0 < max(busy) <= 10 * 2000 * 100 / 1e8, busy)

        # Data stall needs ranks with GPU work: the GPU program has no rank.
        self.assertNotIn("data stall", {t["name"] for t in trace.tracks.values()})

        # A host track holds its ranks (their counters); the processes are
        # Perfetto's, at the top (it nests them under nothing), in explicit
        # order: ranked by rank then pid, then those without a rank, by pid.
        hosts = [u for u, t in trace.tracks.items() if t["parent"] == 0 and "pid" not in t]
        self.assertEqual(len(hosts), 1)
        children = sorted((t["rank"], t["name"]) for t in trace.tracks.values()
                          if t["parent"] == hosts[0] and not t["counter"])
        self.assertEqual([n for _, n in children], ["rank 0", "rank 1"])
        for uuid, t in trace.tracks.items():
            if ("pid" not in t and not t["counter"] and
                    any(c["parent"] == uuid for c in trace.tracks.values())):
                self.assertTrue(t["ordered"], t)
        self.assertEqual(trace.roots[0].get(19), 1)  # PROCESS_ORDERING_EXPLICIT
        processes = sorted((t["rank"], t["name"]) for t in trace.tracks.values()
                           if "pid" in t and "tid" not in t)
        self.assertTrue(all(t["parent"] == 0 for t in trace.tracks.values()
                            if "pid" in t and "tid" not in t))

        def job_order(name):
            rank = re.search(r"\[rank (\d+)\]", name)
            return (int(rank.group(1)) if rank else 1 << 32,
                    int(name.rsplit("(pid ", 1)[1].rstrip(")")))
        self.assertEqual([n for _, n in processes],
                         sorted((n for _, n in processes), key=job_order))
        self.assertEqual(len([n for _, n in processes if "[rank 1]" in n]), 2)

    def test_data_stall_per_rank(self):
        """Two ranks of the fake CUDA program's "steps" mode (reads while the
        GPU idles): each rank has a "data stall" track whose slices add up to
        the summary's data stall of the rank, to the nanosecond."""
        if not dltest.HAS_FAKE_CUDA:
            self.skipTest("the CUPTI plugin and the fake libcupti are not built")
        self.trace_gpu_steps("perfetto-stall")
        data = self.dump("perfetto", os.path.join(self.tmp, "stall.pftrace"))
        trace = PerfettoTrace(data)
        self.protoc_decode(data)
        p = dltest.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                       dltest.base_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        ranks = json.loads(p.stdout)["ranks"]
        self.assertEqual(trace.open_at_end, 0)
        stall_tracks = {u: t for u, t in trace.tracks.items() if t["name"] == "data stall"}
        self.assertEqual(sorted(trace.tracks[t["parent"]]["name"] for t in stall_tracks.values()),
                         ["rank 0", "rank 1"])
        for uuid, t in stall_tracks.items():
            rank = trace.tracks[t["parent"]]["name"].split()[1]
            pieces = sorted((s["ts"], s["ts"] + s["dur"]) for s in trace.slices
                            if s["track"] == uuid)
            self.assertTrue(all(s["name"] == "data stall" for s in trace.slices
                                if s["track"] == uuid))
            self.assertTrue(all(a[1] <= b[0] for a, b in zip(pieces, pieces[1:])), pieces)
            self.assertGreater(ranks[rank]["data_stall_ns"], 0)
            self.assertEqual(sum(e - s for s, e in pieces), ranks[rank]["data_stall_ns"], rank)
        # The Chrome JSON has the same pieces, on a "data stall" thread of the
        # rank's process.
        chrome = json.loads(self.dump("chrome", os.path.join(self.tmp, "stall.json")))
        rank_of = {e["pid"]: re.search(r"\[rank (\d+)\]", e["args"]["name"]).group(1)
                   for e in chrome["traceEvents"]
                   if e["ph"] == "M" and e["name"] == "process_name"}
        chrome_pieces = collections.defaultdict(list)
        for e in chrome["traceEvents"]:
            if e["ph"] == "X" and e["name"] == "data stall":
                start = int(decimal.Decimal(str(e["ts"])) * 1000)
                chrome_pieces[rank_of[e["pid"]]].append(
                    (start, start + int(decimal.Decimal(str(e["dur"])) * 1000)))
        perfetto_pieces = {
            trace.tracks[t["parent"]]["name"].split()[1]:
                sorted((s["ts"], s["ts"] + s["dur"]) for s in trace.slices if s["track"] == u)
            for u, t in stall_tracks.items()}
        self.assertEqual({r: sorted(p) for r, p in chrome_pieces.items()}, perfetto_pieces)
        # Under the rank's track, before its counters.
        for t in stall_tracks.values():
            siblings = sorted((u["rank"], u["name"]) for u in trace.tracks.values()
                              if u["parent"] == t["parent"])
            names = [n for _, n in siblings]
            self.assertEqual(names[0], "data stall")
            self.assertTrue(names[1:] and all(n.endswith(" (B/s)") for n in names[1:]), names)

    def test_stdio_calls_carry_the_bytes_they_moved(self):
        # stdio_all.c: fwrite(data, 10, 100) returns 100 items and moves 1000
        # bytes; fwrite_unlocked(data, 1, 300) moves 300; fread(buf, 1, 500)
        # 500. ret says items: the bytes are their own argument.
        self.trace_programs()
        trace = self.compare_with_chrome()
        moved = collections.defaultdict(set)
        for s in trace.slices:
            if s["cat"] == "stdio" and s["name"] in ("fwrite", "fwrite_unlocked", "fread"):
                moved[s["name"]].add((s["args"]["ret"], s["args"]["bytes"]))
        self.assertIn((100, 1000), moved["fwrite"])
        self.assertIn((300, 300), moved["fwrite_unlocked"])
        self.assertIn((500, 500), moved["fread"])

    def test_annotated_flows(self):
        # flows.c: its forked worker starts flows "batch" 100..104, each in a
        # fetch_batch region; the loop finishes each in a load_batch region;
        # a thread starts "handoff" 7, the main thread finishes it. Each is
        # one arrow between the two instants (and the Chrome JSON's arrows
        # are the same: compare_with_chrome).
        self.trace_programs()
        trace = self.compare_with_chrome()
        starts = {f: s for s in trace.slices for f in s["flows"]}
        arrows = [(starts[f], s) for s in trace.slices for f in s["ends"] if f in starts]
        named = sorted((a["name"], a["args"]["flow"], b["name"], b["args"]["flow"])
                       for a, b in arrows if a["name"] in ("batch", "handoff"))
        self.assertEqual(named, [("batch", 100 + i, "batch", 100 + i) for i in range(5)] +
                         [("handoff", 7, "handoff", 7)])
        for a, b in arrows:
            if a["name"] not in ("batch", "handoff"):
                continue
            self.assertEqual((a["cat"], b["cat"]), ("app", "app"))
            self.assertLess(a["ts"], b["ts"])
            worker, loop = a["track"], b["track"]
            if a["name"] == "batch":
                # From the child process to its parent: other pids.
                self.assertNotEqual(trace.process_of(worker), trace.process_of(loop))
            else:
                self.assertEqual(trace.process_of(worker), trace.process_of(loop))
                self.assertNotEqual(trace.thread_of(worker), trace.thread_of(loop))
        # Every start and finish is an arrow's: none left dangling.
        ends = [f for s in trace.slices if s["name"] in ("batch", "handoff") for f in s["ends"]]
        self.assertEqual(sorted(ends), sorted(f for f in starts
                                              if starts[f]["name"] in ("batch", "handoff")))

    def test_dataloader_batches_are_arrows(self):
        # A torch DataLoader of 2 workers under dlprof.annotate_loader
        # (tests/annotations/scripts/loader_flows.py): an arrow per batch the
        # loop received, from inside a fetch_batch of one of its workers to
        # inside the loop's load_batch.
        torch = subprocess.run([dltest.SYSTEM_PYTHON, "-c", "import torch"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if torch.returncode != 0:
            self.skipTest("%s has no torch" % dltest.SYSTEM_PYTHON)
        samples = os.path.join(self.data, "samples")
        os.mkdir(samples)
        for i in range(38):
            with open(os.path.join(samples, "s%03d.bin" % i), "wb") as f:
                f.write(b"x" * (100 + i))
        script = os.path.join(HERE, "..", "annotations", "scripts", "loader_flows.py")
        p = self.run_traced([dltest.SYSTEM_PYTHON, script, samples, "workers"],
                            env={"PYTHONPATH": os.path.join(HERE, "..", "..", "python")},
                            timeout=120)
        ran = json.loads(p.stdout.strip().splitlines()[-1])
        (batches,) = ran["epochs"]
        self.assertEqual(len(batches), 10)  # 38 samples, 4 a batch
        trace = PerfettoTrace(self.dump("perfetto", os.path.join(self.tmp, "loader.pftrace")))
        starts = {f: s for s in trace.slices if s["name"] == "batch" for f in s["flows"]}
        arrows = [(starts[f], s) for s in trace.slices if s["name"] == "batch"
                  for f in s["ends"] if f in starts]
        self.assertEqual(len(arrows), len(batches))

        def inside(instant, name):
            return any(s["name"] == name and s["track"] == instant["track"] and
                       s["ts"] <= instant["ts"] <= s["ts"] + s["dur"] for s in trace.slices)

        def pid(track):
            return trace.tracks[trace.process_of(track)]["pid"]
        for start, finish in arrows:
            self.assertLess(start["ts"], finish["ts"])
            self.assertEqual(pid(finish["track"]), ran["main"])
            self.assertNotEqual(pid(start["track"]), ran["main"])
            self.assertTrue(inside(start, "fetch_batch"), start)
            self.assertTrue(inside(finish, "load_batch"), finish)
        self.assertEqual(len({pid(s["track"]) for s, _ in arrows}), 2)  # 2 workers

    def compare_with_chrome(self):
        """The Perfetto trace of self.traces, checked against their Chrome
        JSON: same slices, tracks, names, counters and flows."""
        data = self.dump("perfetto", os.path.join(self.tmp, "job.pftrace"))
        doc = json.loads(self.dump("chrome", os.path.join(self.tmp, "job.json")),
                         parse_float=decimal.Decimal)
        chrome = doc["traceEvents"]
        trace = PerfettoTrace(data)

        # protoc reads the file and, inside its compressed chunks, every
        # packet with the field names of Perfetto's protos (nothing unknown).
        self.assertIn("compressed_packets", self.protoc_decode(data))
        self.assertTrue(trace.chunks)
        inner = self.protoc_decode(b"".join(trace.chunks))
        for name in ("track_descriptor", "sibling_order_rank", "child_ordering: EXPLICIT",
                     "type: TYPE_SLICE_BEGIN", "type: TYPE_SLICE_END", "interned_data",
                     "debug_annotation_string_values", "sequence_flags: 2",
                     "is_incremental: true", "type: TYPE_COUNTER"):
            self.assertIn(name, inner)
        unknown = [l for l in inner.splitlines() if re.match(r"\s*\d+: ", l)]
        self.assertEqual(unknown, [])  # no field the .proto does not name
        self.assertEqual(trace.open_at_end, 0)
        # Interned: each event name, category and string is written once.
        self.assertEqual(trace.interned_twice, 0)

        # Tracks: Chrome's (pid, tid) -> (process name, thread name).
        process_names = {e["pid"]: e["args"]["name"] for e in chrome
                         if e["ph"] == "M" and e["name"] == "process_name"}
        thread_names = {(e["pid"], e["tid"]): e["args"]["name"] for e in chrome
                        if e["ph"] == "M" and e["name"] == "thread_name"}

        def ns(micros):
            return int(decimal.Decimal(micros) * 1000)

        def track_of(name):
            # A slice overlapping another without nesting in it is on a lane
            # of its track: "GPU 0 stream 7 (overlap 1)". Each exporter lays
            # out its lanes (the Chrome one its asynchronous requests').
            return re.sub(r" \(overlap \d+\)$", "", name)

        def chrome_key(e):
            return (process_names[e["pid"]], track_of(thread_names[(e["pid"], e["tid"])]),
                    e["name"], ns(e["ts"]))

        def perfetto_key(s):
            process = trace.tracks[trace.process_of(s["track"])]["name"]
            return (process, track_of(trace.tracks[s["track"]]["name"]), s["name"], s["ts"])

        # The same slices: process, thread, name, start, duration, category
        # and arguments (the Chrome stack, where there is one, is not kept).
        want = collections.Counter(
            chrome_key(e) + (ns(e["dur"]), e["cat"],
                             json.dumps({k: v for k, v in e["args"].items() if k != "stack"},
                                        sort_keys=True, default=int))
            for e in chrome if e["ph"] == "X")
        got = collections.Counter(
            perfetto_key(s) + (s["dur"], s["cat"], json.dumps(s["args"], sort_keys=True))
            for s in trace.slices)
        self.assertEqual(got, want)
        self.assertGreater(len(trace.slices), 10)

        # The same tracks and names.
        slice_tracks = {trace.process_of(s["track"]) for s in trace.slices}
        self.assertEqual({trace.tracks[u]["name"] for u in slice_tracks},
                         set(process_names.values()))
        self.assertEqual({perfetto_key(s)[:2] for s in trace.slices},
                         {(process_names[k[0]], track_of(v)) for k, v in thread_names.items()})

        # Bandwidth: Chrome's MiB/s per 100 ms bin, in bytes/s, per process;
        # and per rank, the sum of its processes.
        chrome_bw = {(process_names[e["pid"]], ns(e["ts"])): (e["args"]["read"], e["args"]["write"])
                     for e in chrome if e["ph"] == "C"}
        got_bw = collections.defaultdict(lambda: [0, 0])
        rank_bw = collections.defaultdict(int)
        for uuid, samples in trace.counters.items():
            t = trace.tracks[uuid]
            parent = trace.tracks[t["parent"]]["name"]  # a process's, a rank's
            if t["name"] not in ("read (B/s)", "write (B/s)"):
                continue
            for ts, v in samples:
                if parent.startswith("rank "):
                    rank_bw[(parent, t["name"], ts)] += v
                elif v:
                    got_bw[(parent, ts)][t["name"] == "write (B/s)"] = v
        self.assertTrue(got_bw)
        for key, v in got_bw.items():
            self.assertIn(key, chrome_bw)
        for key, (r, w) in chrome_bw.items():
            v = got_bw.get(key, [0, 0])
            # Chrome's MiB/s to the nearest thousandth (decimal), Perfetto's B/s.
            self.assertEqual(((v[0] * 1000 + MIB // 2) // MIB, (v[1] * 1000 + MIB // 2) // MIB),
                             (int(r * 1000), int(w * 1000)), key)
        per_rank = collections.defaultdict(int)
        for (proc, ts), (r, w) in got_bw.items():
            rank = proc.rsplit("[rank ", 1)[1].split("]")[0] if "[rank " in proc else None
            if rank is not None:
                per_rank[("rank " + rank, "read (B/s)", ts)] += r
                per_rank[("rank " + rank, "write (B/s)", ts)] += w
        self.assertEqual({k: v for k, v in rank_bw.items() if v},
                         {k: v for k, v in per_rank.items() if v})

        # Flows: from a CUDA launch to its kernel, as Chrome's arrows.
        starts = {}
        for s in trace.slices:
            for f in s["flows"]:
                starts[f] = s
        got_flows = {(perfetto_key(starts[f]), perfetto_key(s))
                     for s in trace.slices for f in s["ends"] if f in starts}
        by_id = collections.defaultdict(dict)
        for e in chrome:
            if e["ph"] in ("s", "f"):
                by_id[e["id"]][e["ph"]] = (process_names[e["pid"]],
                                           thread_names[(e["pid"], e["tid"])], ns(e["ts"]))
        want_flows = {(v["s"], v["f"]) for v in by_id.values()}
        self.assertEqual({(a[:2] + a[3:], b[:2] + b[3:]) for a, b in got_flows}, want_flows)
        trace.flows = want_flows
        return trace

    def test_compressions_hold_the_same_packets(self):
        # deflate (the default), zstd and none: the same packets, in chunks
        # of the field each names, or as they are.
        self.trace_programs()
        deflate = self.dump("perfetto", os.path.join(self.tmp, "deflate.pftrace"))
        zstd = self.dump("perfetto", os.path.join(self.tmp, "zstd.pftrace"),
                         "--perfetto-compression", "zstd")
        plain = self.dump("perfetto", os.path.join(self.tmp, "none.pftrace"),
                          "--perfetto-compression=none")
        chunk_fields = {codec: {f for _, _, p in fields(data) for f, _, _ in fields(p)
                                if f in (50, 133)}
                        for codec, data in (("deflate", deflate), ("zstd", zstd),
                                            ("none", plain))}
        self.assertEqual(chunk_fields, {"deflate": {50}, "zstd": {133}, "none": set()})
        want = packets(deflate)[0]
        self.assertGreater(len(want), 100)
        self.assertEqual(packets(zstd)[0], want)
        self.assertEqual(packets(plain)[0], want)
        self.assertIn("zstd_compressed_packets", self.protoc_decode(zstd))
        self.assertLess(len(zstd), len(plain) / 4)
        self.assertLess(len(deflate), len(plain) / 4)
        p = subprocess.run([dltest.DUMP, "--format", "perfetto", "--perfetto-compression",
                            "gzip", self.traces], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--perfetto-compression needs deflate, zstd or none", p.stderr.decode())

    def test_filters_apply(self):
        self.trace_programs()
        out = os.path.join(self.tmp, "rank0.pftrace")
        p = subprocess.run([dltest.DUMP, "--format", "perfetto", "--rank", "0", "-o", out,
                            self.traces], stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        with open(out, "rb") as f:
            trace = PerfettoTrace(f.read())
        jsonl = dltest.decode(self.traces).events
        want = sum(1 for e in jsonl if e.get("rank") == 0 and e["name"] != "stack")
        self.assertGreater(want, 0)
        self.assertEqual(len(trace.slices), want)
        self.assertEqual({re.search(r"\[rank \d+\]",
                                    trace.tracks[trace.process_of(s["track"])]["name"]).group(0)
                          for s in trace.slices}, {"[rank 0]"})


    def test_launcher_writes_the_timeline(self):
        launcher = os.environ.get("DLPROF_LAUNCHER", "")
        if not launcher:
            self.skipTest("DLPROF_LAUNCHER not set")
        out = os.path.join(self.tmp, "run.pftrace")
        env = dltest.base_env()
        # A sanitizer build (scripts/sanitize.sh) needs its runtime preloaded
        # first; the launcher keeps it in front of the library it adds.
        runtime = os.environ.get("DLPROF_TEST_PRELOAD_PREFIX", "").strip()
        if runtime:
            env["LD_PRELOAD"] = runtime.replace(" ", ":")
        p = dltest.run([launcher, "run", "--no-summary", "--dir", self.traces,
                        "--timeline", out, "--", dltest.program("basic_io"), self.data],
                       env, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("timeline in " + out, p.stderr)
        with open(out, "rb") as f:
            trace = PerfettoTrace(f.read())
        jsonl = dltest.decode(self.traces).events
        self.assertGreater(len(jsonl), 10)
        self.assertEqual(collections.Counter(s["name"] for s in trace.slices),
                         collections.Counter(e["name"] for e in jsonl))


if __name__ == "__main__":
    dltest.main()
