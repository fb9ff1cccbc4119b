"""GPUDirect Storage (cuFile) interposition, on the CPU.

gds_program (tests/gds/gds_program.c) reads and writes through the cuFile
API against a fake libcufile.so.0 with the real ABI (fake_cufile.c) that
does the POSIX I/O of cuFile's compatibility mode: synchronous reads and
writes, stream I/O and a batch. It is built twice, linked with the library
(interposed through LD_PRELOAD by name) and opening it with dlopen + dlsym
as kvikio and DALI do, two functions with dlvsym (interposed through our
dlsym and dlvsym). In both:

- every cuFile call is one event with the file, offset, bytes asked and
  moved and the device buffer that the program printed it used;
- the stream and batch I/Os are recorded once their completion is seen,
  spanning submission to completion, the stream's on the thread that ran
  the stream's host functions, with the stream it was queued on (its
  submission has the device buffer);
- the timelines (Chrome, Perfetto) draw each stream I/O on a track of its
  stream in the process, and its submission on the thread that called;
- the compatibility mode's preads and pwrites are nested in the cuFile call
  and the summary counts the bytes once;
- DLPROF_TRACE picks gds on its own or leaves it out;
- dlprof.read_events has the cuFile I/O, its bytes counted as a read's;
- the interposed dlsym and dlvsym answer RTLD_NEXT and RTLD_DEFAULT as the
  C library's do (by the caller's place in the search order).
"""

import collections
import json
import os
import subprocess
import unittest

import dltest
from dltest.perfetto import PerfettoTrace, protoc_decode, require_protoc

SIZE = 300000
KiB64 = 64 * 1024
# The program's calls that are no I/O, by name: how many, and their fields.
CALLS = {
    "cuFileDriverOpen": 1, "cuFileDriverClose_v2": 1, "cuFileHandleRegister": 2,
    "cuFileHandleDeregister": 2, "cuFileBufRegister": 1, "cuFileBufDeregister": 1,
    "cuFileReadAsync": 1, "cuFileWriteAsync": 1, "cuFileBatchIOSetUp": 1,
    "cuFileBatchIOSubmit": 1, "cuFileBatchIOGetStatus": 1, "cuFileBatchIOCancel": 1,
    "cuFileBatchIODestroy": 1,
}
# Where gds_dlopen's dlopen finds the fake library without its RUNPATH: a
# sanitizer's runtime (scripts/sanitize.sh preloads it) calls dlopen for the
# program, and the dynamic loader then looks by the runtime's RUNPATH.
LIB_PATH = {"LD_LIBRARY_PATH": os.path.join(os.path.dirname(dltest.program("gds_linked")),
                                             "fake_cufile")}
IO_NAMES = {"cuFileRead", "cuFileWrite", "cufile_async_read", "cufile_async_write",
            "cufile_batch_read"}
# A stream I/O's submission.
SUBMISSION = {"cufile_async_read": "cuFileReadAsync", "cufile_async_write": "cuFileWriteAsync"}


class GdsTest(dltest.TraceTestCase):

    def run_program(self, name, env=None):
        data = os.path.join(self.data, "shard.bin")
        with open(data, "wb") as f:
            f.write(bytes(i % 253 for i in range(SIZE)))
        out = os.path.join(self.data, "out.bin")
        p = self.run_traced([dltest.program(name), data, out], env=dict(LIB_PATH, **(env or {})),
                            timeout=60)
        calls, handles = [], {}
        self.streams = {}  # stream I/O's name -> the stream it was queued on
        for line in p.stdout.splitlines():
            w = line.split()
            if w[0] == "CALL":
                calls.append({"name": w[1], "fd": int(w[2]), "offset": int(w[3]),
                              "size": int(w[4]), "bytes": int(w[5]), "buffer": int(w[6])})
            elif w[0] == "HANDLE":
                handles[int(w[1])] = int(w[2])
            elif w[0] == "STREAM":
                self.streams[w[1]] = int(w[2])
        with open(out, "rb") as f:
            written = f.read()
        with open(data, "rb") as f:
            d = f.read()
        # The device buffer after the two reads: the file's first 200,000
        # bytes, its last 100,000 laid over them from byte 4096.
        self.assertEqual(written[:150000], d[:4096] + d[200000:] + d[104096:150000])
        self.assertEqual(len(written), 154096)
        return data, out, calls, handles, self.decode()

    def check_program(self, name):
        data, out, calls, handles, trace = self.run_program(name)
        paths = {c["fd"]: p for c, p in ((calls[0], data), (calls[2], out))}
        main_tid = next(e["tid"] for e in trace.events if e["name"] == "cuFileDriverOpen")
        gds = [e for e in trace.events if e["cat"] == "gds"]

        # Every I/O as the program saw it, in its order; a stream I/O's
        # device buffer is its submission's (the I/O has its stream).
        io = sorted((e for e in gds if e["name"] in IO_NAMES), key=lambda e: e["ts"])
        submissions = {e["name"]: e for e in gds if e["name"] in SUBMISSION.values()}

        def buffer_of(e):
            return submissions[SUBMISSION[e["name"]]].get("buffer") \
                if e["name"] in SUBMISSION else e.get("buffer")
        got = [dict({k: e.get(k) for k in ("name", "fd", "offset", "size", "bytes")},
                    buffer=buffer_of(e)) for e in io]
        self.assertEqual(got, calls)
        self.assertEqual({e["name"]: e["stream"] for e in io if e["name"] in SUBMISSION},
                         {"cufile_async_read": 0x5000, "cufile_async_write": 0x6000})
        self.assertEqual(self.streams, {"cufile_async_read": 0x5000,
                                        "cufile_async_write": 0x6000})
        for e in submissions.values():
            self.assertNotIn("stream", e)
        for e, c in zip(io, calls):
            self.assertEqual(e["path"], paths[c["fd"]], e)
            self.assertEqual(e["ret"], c["bytes"], e)
            self.assertNotIn("nested", e)
        self.assertEqual([c["bytes"] for c in calls],
                         [200000, 100000, 150000, 65536, 4096, 4096, 4096, 1000])

        # The calls that are no I/O: one event each.
        counts = collections.Counter(e["name"] for e in gds if e["name"] not in IO_NAMES)
        self.assertEqual(dict(counts), CALLS)
        for e in gds:
            if e["name"] not in IO_NAMES:
                self.assertEqual(e["tid"], main_tid, e)
                self.assertEqual(e["ret"], 0, e)
                self.assertNotIn("nested", e)
        regs = [e for e in gds if e["name"] == "cuFileHandleRegister"]
        self.assertEqual({(e["fd"], e["path"], e["handle"]) for e in regs},
                         {(fd, paths[fd], h) for fd, h in handles.items()})
        deregs = [e for e in gds if e["name"] == "cuFileHandleDeregister"]
        self.assertEqual({(e["fd"], e["handle"]) for e in deregs}, set(handles.items()))
        buf = next(e for e in gds if e["name"] == "cuFileBufRegister")
        self.assertEqual((buf["size"], buf["buffer"]), (1 << 20, calls[0]["buffer"]))
        sub = next(e for e in gds if e["name"] == "cuFileReadAsync")
        self.assertEqual((sub["buffer"], sub["offset"], sub["size"], sub["path"]),
                         (calls[3]["buffer"], 1000, 65536, data))
        batch = {e["name"]: e for e in gds if e["name"].startswith("cuFileBatchIO")}
        self.assertEqual(batch["cuFileBatchIOSetUp"]["size"], 4)
        self.assertEqual(batch["cuFileBatchIOSubmit"]["size"], 3)
        self.assertEqual(batch["cuFileBatchIOGetStatus"]["size"], 3)
        self.assertEqual(len({e["batch"] for e in batch.values()}), 1)

        # Stream I/O: submission to completion, seen on the stream's thread;
        # batch I/O: submission to the status that returned it.
        for e in io:
            if e["name"].startswith("cufile_async"):
                name = "cuFileReadAsync" if "read" in e["name"] else "cuFileWriteAsync"
                s = next(x for x in gds if x["name"] == name)
                self.assertGreaterEqual(e["ts"], s["ts"])
                self.assertLessEqual(e["ts"], s["ts"] + s["dur"])
                self.assertGreaterEqual(e["ts"] + e["dur"], s["ts"] + s["dur"])
                self.assertNotEqual(e["tid"], main_tid, e)
            elif e["name"] == "cufile_batch_read":
                s, g = batch["cuFileBatchIOSubmit"], batch["cuFileBatchIOGetStatus"]
                self.assertTrue(s["ts"] <= e["ts"] <= s["ts"] + s["dur"], e)
                self.assertTrue(g["ts"] <= e["ts"] + e["dur"] <= g["ts"] + g["dur"], e)
            if not e["name"].startswith("cufile_async"):
                self.assertEqual(e["tid"], main_tid, e)

        # Compatibility mode: every pread and pwrite of the files is flagged
        # nested, in 64 KiB chunks, and lies inside a cuFile call of its
        # thread (cuFileRead/Write) or, done on the library's own thread,
        # inside the stream or batch I/O it served, in time and in the file.
        posix = [e for e in trace.events if e["cat"] == "posix"
                 and e["name"] in ("pread64", "pread", "pwrite64", "pwrite")]
        self.assertEqual(sum(e["bytes"] for e in posix), sum(c["bytes"] for c in calls))
        served_by_library_thread = 0
        for e in posix:
            self.assertTrue(e.get("nested"), e)
            self.assertLessEqual(e["size"], KiB64)
            outer = [o for o in gds if o["tid"] == e["tid"]
                     and o["name"] in ("cuFileRead", "cuFileWrite")
                     and o["ts"] <= e["ts"] and e["ts"] + e["dur"] <= o["ts"] + o["dur"]]
            served = [o for o in io if o["name"] not in ("cuFileRead", "cuFileWrite")
                      and o["path"] == e["path"]
                      and o["ts"] <= e["ts"] <= o["ts"] + o["dur"]
                      and o["offset"] <= e["offset"]
                      and e["offset"] + e["size"] <= o["offset"] + o["size"]]
            self.assertEqual(len(outer) + len(served), 1, e)
            if outer:
                self.assertEqual(outer[0]["path"], e["path"])
            else:
                self.assertNotEqual(e["tid"], main_tid, e)
                served_by_library_thread += 1
        # The stream's and the batch's I/O were done on the library's thread.
        self.assertGreater(served_by_library_thread, 0)

        # The summary counts each byte once: the cuFile I/O's, not the preads'.
        s = self.summary()
        self.assertEqual(s["files"][data]["read"]["bytes"], 374728)
        self.assertEqual(s["files"][data]["read"]["ops"], 6)
        self.assertEqual(s["files"][out]["write"]["bytes"], 154096)
        self.assertEqual(s["files"][out]["write"]["ops"], 2)
        self.assertGreater(s["nested_events"], 0)
        return trace

    def test_linked(self):
        self.check_program("gds_linked")

    def test_dlopen_dlsym(self):
        self.check_program("gds_dlopen")

    def test_module_left_out(self):
        """Without gds in DLPROF_TRACE the preads are the I/O: not nested,
        counted once, and the program runs as before."""
        data, out, calls, handles, trace = self.run_program(
            "gds_dlopen", env={"DLPROF_TRACE": "posix,stdio"})
        self.assertEqual([e for e in trace.events if e["cat"] == "gds"], [])
        reads = [e for e in trace.on(data) if e["name"] in dltest.READ_NAMES]
        self.assertTrue(reads)
        self.assertEqual([e for e in reads if e.get("nested")], [])
        self.assertEqual(sum(e["bytes"] for e in reads), 374728)

    def test_module_alone(self):
        _, _, calls, _, trace = self.run_program("gds_linked", env={"DLPROF_TRACE": "gds"})
        self.assertEqual({e["cat"] for e in trace.events if not dltest.is_end(e)}, {"gds"})
        self.assertEqual(len([e for e in trace.events if e["name"] in IO_NAMES]), len(calls))

    def test_python_read_events(self):
        package = dltest.PYTHON_DIR
        if not os.path.isdir(package):
            self.skipTest("no Python package built")
        data, _, calls, _, _ = self.run_program("gds_linked")
        code = ("import sys, dlprof\n"
                "ev = dlprof.read_events(sys.argv[1])\n"
                "g = ev[ev['cat'] == 'gds']\n"
                "io = g[g['bytes'] > 0].sort_values('ts')\n"
                "for r in io.itertuples():\n"
                "    print(r.name, r.op, r.path, r.offset, r.size, r.bytes, r.nested)\n"
                "posix = ev[(ev['cat'] == 'posix') & (ev['path'] == sys.argv[2])\n"
                "           & (ev['op'] == 'read')]\n"
                "print('NESTED', int(posix['nested'].sum()), len(posix))\n")
        env = dict(dltest.base_env(), PYTHONPATH=package)
        p = subprocess.run([dltest.SYSTEM_PYTHON, "-c", code, self.traces, data], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        if p.returncode != 0 and "No module named" in p.stderr:
            self.skipTest(p.stderr.strip().splitlines()[-1])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        want = ["%s %s %s %d %d %d False" % (c["name"], "read" if "ead" in c["name"] else "write",
                                            data if c["fd"] == calls[0]["fd"] else
                                            os.path.join(self.data, "out.bin"),
                                            c["offset"], c["size"], c["bytes"]) for c in calls]
        self.assertEqual(lines[:-1], want)
        nested, reads = lines[-1].split()[1:]
        self.assertEqual(nested, reads)

    def test_dlsym_keeps_the_callers_scope(self):
        prog = [dltest.program("gds_linked"), "--dlsym"]
        untraced = self.run_untraced(prog)
        self.assertIn("libc.so", untraced.stdout)
        p = self.run_traced(prog)
        found = dict(l.split(" ", 1) for l in p.stdout.splitlines())
        # From the executable, the next read after it is the first preloaded
        # one (dlprof's wrapper; a sanitizer's under scripts/sanitize.sh), as
        # is the first one of all. Were dlprof's dlsym the caller, the next
        # after it would be the C library's.
        self.assertEqual(found["NEXT"], found["DEFAULT"], p.stdout)
        self.assertIn(found["NEXT"], dltest.LIB.split(), p.stdout)
        # dlvsym of read@GLIBC_2.2.5 (which no unversioned wrapper answers):
        # the C library's, traced or not.
        plain = dict(l.split(" ", 1) for l in untraced.stdout.splitlines())
        self.assertEqual((found["VNEXT"], found["VDEFAULT"]), (plain["VNEXT"], plain["VDEFAULT"]))
        self.assertIn("libc.so", found["VNEXT"])

    def test_same_as_untraced(self):
        """The program's results (bytes, statuses) do not change traced."""
        data = os.path.join(self.data, "shard.bin")
        with open(data, "wb") as f:
            f.write(bytes(SIZE))
        out = os.path.join(self.data, "out.bin")
        for name in ("gds_linked", "gds_dlopen"):
            cmd = [dltest.program(name), data, out]
            a = self.run_untraced(cmd, env=LIB_PATH)
            b = self.run_traced(cmd, env=LIB_PATH, timeout=60)
            self.assertEqual(a.returncode, 0, a.stderr)

            def results(p):
                return [l.split()[:6] for l in p.stdout.splitlines() if l.startswith("CALL")]
            self.assertEqual(results(a), results(b))

    # ---- the timelines ---------------------------------------------------

    def dump(self, fmt, name):
        out = os.path.join(self.tmp, name)
        p = subprocess.run([dltest.DUMP, "--format", fmt, "-o", out, self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        with open(out, "rb") as f:
            return f.read()

    def stream_ios(self, calls, trace):
        """(the program's pid, its main thread, and per stream I/O: the
        stream, the call as the program printed it and its jsonl event)."""
        main = next(e for e in trace.events if e["name"] == "cuFileDriverOpen")
        ios = {}
        for name, stream in self.streams.items():
            (call,) = [c for c in calls if c["name"] == name]
            (event,) = [e for e in trace.events if e["name"] == name]
            ios[name] = (stream, call, event)
        self.assertEqual(len(ios), 2)
        return main["pid"], main["tid"], ios

    def test_chrome_stream_tracks(self):
        """--format chrome: each stream I/O, and nothing else, on a track of
        the stream it was queued on, in its process; its submission on the
        thread that called."""
        _, _, calls, _, trace = self.run_program("gds_linked")
        pid, main_tid, ios = self.stream_ios(calls, trace)
        events = json.loads(self.dump("chrome", "gds.json"))["traceEvents"]
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        self.assertEqual(sorted(n for n in names.values() if n.startswith("cuFile stream")),
                         ["cuFile stream 0x5000", "cuFile stream 0x6000"])
        slices = [e for e in events if e["ph"] == "X"]
        for name, (stream, call, event) in ios.items():
            (track,) = [k for k, n in names.items() if n == "cuFile stream 0x%x" % stream]
            self.assertEqual(track[0], pid)
            on = [(e["name"], e["args"]["offset"], e["args"]["size"], e["args"]["ret"],
                   round(e["ts"] * 1000), round(e["dur"] * 1000))
                  for e in slices if (e["pid"], e["tid"]) == track]
            self.assertEqual(on, [(name, call["offset"], call["size"], call["bytes"],
                                   event["ts"], event["dur"])])
            (sub,) = [e for e in slices if e["name"] == SUBMISSION[name]]
            self.assertEqual((sub["pid"], sub["tid"]), (pid, main_tid))
            self.assertEqual(sub["args"]["offset"], call["offset"])

    def test_perfetto_stream_tracks(self):
        """--format perfetto, as protoc and Perfetto's model read it: the
        same tracks, under the program's process."""
        require_protoc()
        _, _, calls, _, trace = self.run_program("gds_dlopen")
        pid, main_tid, ios = self.stream_ios(calls, trace)
        data = self.dump("perfetto", "gds.pftrace")
        p = protoc_decode(data)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        pt = PerfettoTrace(data)
        for chunk in pt.chunks:  # the compressed chunks too
            p = protoc_decode(chunk)
            self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(pt.open_at_end, 0)
        self.assertEqual(sorted(t["name"] for t in pt.tracks.values()
                                if t["name"].startswith("cuFile stream")),
                         ["cuFile stream 0x5000", "cuFile stream 0x6000"])
        for name, (stream, call, event) in ios.items():
            (uuid,) = [u for u, t in pt.tracks.items()
                       if t["name"] == "cuFile stream 0x%x" % stream]
            self.assertEqual(pt.tracks[pt.process_of(uuid)]["pid"], pid)
            on = [(s["name"], s["args"]["offset"], s["args"]["size"], s["args"]["ret"],
                   s["ts"], s["dur"]) for s in pt.slices if s["track"] == uuid]
            self.assertEqual(on, [(name, call["offset"], call["size"], call["bytes"],
                                   event["ts"], event["dur"])])
            (sub,) = [s for s in pt.slices if s["name"] == SUBMISSION[name]]
            self.assertEqual(pt.tracks[pt.thread_of(sub["track"])]["tid"], main_tid)


if __name__ == "__main__":
    unittest.main(verbosity=2)
