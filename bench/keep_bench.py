#!/usr/bin/env python3
"""Bounded traces (DLPROF_KEEP) against full ones: issue 53's targets.

    bench/keep_bench.py [--build BUILD] [--seconds 30] [--long 300] [--rate 20000]

Runs tests/integration/programs/keep_loop (batches of 20 preads of 4 KiB in
"load_batch" regions, paced by "optimizer_step" regions) at RATE reads a
second:

  1. fully traced for SECONDS        -> the full trace's bytes, its verdict
  2. DLPROF_KEEP=5s for SECONDS      -> bytes on disk (segments + counters)
                                        <= 30 % of 1; the whole run's read
                                        count exact; kept events >= last 5 s
  3. DLPROF_KEEP=5s for LONG         -> bytes within 10 % of 2's (--long 0: skip)
  4. DLPROF_KEEP=1h for SECONDS      -> nothing dropped: the counters' verdict
                                        against the full events' verdict of
                                        the same run (batch wait, its causes,
                                        loop, steps); bench/keep_causes.py: the
                                        causes of a DataLoader with workers

All four run at once, ending together (3 starts LONG - SECONDS earlier).

Prints one line per figure and the ratios; exits 0 (the numbers are the
result). The flusher's instructions per event: bench/callgrind_pread.sh,
with and without DLPROF_KEEP in the environment.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def start_loop(build, work, name, seconds, rate, env_extra):
    traces = os.path.join(work, name)
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "lib", "libdlprof.so"),
               DLPROF_DIR=traces, DLPROF_QUIET="1", **env_extra)
    prog = os.path.join(build, "tests", "integration", "programs", "keep_loop")
    p = subprocess.Popen([prog, os.path.join(work, "data.bin"), str(seconds), str(rate)],
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return traces, p


def finish_loop(run):
    traces, p = run
    out, _ = p.communicate("\n")
    if p.returncode != 0:
        raise SystemExit("keep_loop failed in " + traces)
    return traces, int(out.split()[2])


def disk_bytes(traces, suffixes=(".dlprof", ".dlcount")):
    return sum(os.path.getsize(os.path.join(r, n)) for r, _, ns in os.walk(traces)
               for n in ns if n.endswith(suffixes))


def summary(build, traces):
    out = subprocess.run([os.path.join(build, "tools", "dlprof-dump"), "--summary", "--format",
                          "json", traces], stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out)


def kept_span(build, traces):
    p = subprocess.Popen([os.path.join(build, "tools", "dlprof-dump"), "--format", "jsonl",
                          traces], stdout=subprocess.PIPE, text=True)
    lo, hi = None, None
    for line in p.stdout:
        e = json.loads(line)
        if e.get("name") == "pread":
            lo = e["ts"] if lo is None else min(lo, e["ts"])
            hi = e["ts"] if hi is None else max(hi, e["ts"])
    p.wait()
    return (hi - lo) / 1e9 if lo is not None else 0.0


def pct(a, b):
    return 100.0 * (a - b) / b if b else float("nan")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(here, "..", "build"))
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--long", type=float, default=300)
    ap.add_argument("--rate", type=float, default=20000)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="dlprof-keep-bench-")
    try:
        with open(os.path.join(work, "data.bin"), "wb") as f:
            f.truncate(1 << 32)  # sparse: 1 Mi distinct blocks

        # Every run ends at the same moment, so that they share the machine's
        # load at their end: the bytes an event takes depend on its timing's
        # jitter, and the kept segments are the last seconds'.
        runs = {}
        if a.long > 0:
            runs["long"] = start_loop(build, work, "long", a.long, a.rate, {"DLPROF_KEEP": "5s"})
            time.sleep(a.long - a.seconds)
        runs["full"] = start_loop(build, work, "full", a.seconds, a.rate, {})
        runs["keep"] = start_loop(build, work, "keep", a.seconds, a.rate, {"DLPROF_KEEP": "5s"})
        runs["both"] = start_loop(build, work, "both", a.seconds, a.rate, {"DLPROF_KEEP": "1h"})
        done = {name: finish_loop(r) for name, r in runs.items()}

        full, full_reads = done["full"]
        full_bytes = disk_bytes(full)
        print("full trace, %g s: %d reads, %d bytes (%.2f bytes a read)" %
              (a.seconds, full_reads, full_bytes, full_bytes / full_reads))

        kept, kept_reads = done["keep"]
        kept_bytes = disk_bytes(kept)
        s = summary(build, kept)
        w = s["whole_run"]
        counted = sum(k["calls"] for k in w["kinds"] if k["name"] == "pread")
        span = kept_span(build, kept)
        print("DLPROF_KEEP=5s, %g s: %d reads, %d bytes on disk (%d of counters) = %.1f %% of "
              "the full trace (%.1f %% at the same reads)" %
              (a.seconds, kept_reads, kept_bytes, disk_bytes(kept, (".dlcount",)),
               100.0 * kept_bytes / full_bytes,
               100.0 * kept_bytes / (full_bytes * kept_reads / full_reads)))
        print("  whole run's pread count %d, made %d: %s" %
              (counted, kept_reads, "exact" if counted == kept_reads else "WRONG"))
        print("  kept preads span %.2f s (target: at least the last 5 s)" % span)

        if a.long > 0:
            long_dir, long_reads = done["long"]
            long_bytes = disk_bytes(long_dir)
            w = summary(build, long_dir)["whole_run"]
            counted = sum(k["calls"] for k in w["kinds"] if k["name"] == "pread")
            print("DLPROF_KEEP=5s, %g s: %d reads (counted %d: %s), %d bytes on disk, %+.1f %% "
                  "against %g s (counters %d bytes), kept preads span %.2f s" %
                  (a.long, long_reads, counted, "exact" if counted == long_reads else "WRONG",
                   long_bytes, pct(long_bytes, kept_bytes), a.seconds,
                   disk_bytes(long_dir, (".dlcount",)), kept_span(build, long_dir)))

        both, _ = done["both"]
        s = summary(build, both)
        w, v = s["whole_run"], s["verdict"]
        bw, loop = v["batch_wait"], v["loop"]
        print("same run, counters against full events (DLPROF_KEEP=1h: nothing dropped):")
        print("  batch wait %d ns against %d (%+.2f %%)" %
              (w["batch_wait_ns"], bw["ns"], pct(w["batch_wait_ns"], bw["ns"])))
        print("  loop       %d ns against %d (%+.2f %%)" %
              (w["loop_ns"], loop["ns"], pct(w["loop_ns"], loop["ns"])))
        print("  steps      %d against %d (%+.2f %%)" %
              (w["steps"], loop["steps"], pct(w["steps"], loop["steps"])))
        print("  batch wait share %.2f %% against %.2f %%" %
              (100.0 * w["batch_wait_ns"] / max(w["loop_ns"], 1), bw["per_mille"] / 10.0))
        for part in ("reading", "preprocessing", "handover", "worker_startup"):
            ours, theirs = w["causes"][part + "_ns"], bw[part + "_ns"]
            print("  %-15s %d ns against %d (%+.2f %% of the wait)" %
                  (part, ours, theirs, 100.0 * (ours - theirs) / max(bw["ns"], 1)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
