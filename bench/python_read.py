#!/usr/bin/env python3
"""dlprof.read_events' speed and memory (issue 20's targets: >= 10 M events/s
on one core, >= 20x `dlprof-dump --format jsonl | pandas.read_json(lines=True)`,
peak memory near the DataFrame's size), figures from one run.

    bench/python_read.py [--build build] [--events 1000000] [--repeat 3] [--cpu 0]
                         [--python /usr/bin/python3] [--json FILE]

Makes one trace of EVENTS random 4 KiB preads (bench/pread_overhead under
libdlprof.so), then, each in a fresh process pinned to one CPU:
  - read_events, every column: best of REPEAT calls; events/s by wall clock
    and by the process's CPU time (a shared machine's load inflates the first);
  - read_events, 5 columns: best of REPEAT;
  - the memory of one read_events call: peak RSS over what the process had
    after importing numpy and pandas, against the DataFrame's own bytes;
  - the JSON route, once: dlprof-dump --format jsonl piped into
    pandas.read_json(lines=True) (its dlprof-dump runs on the same CPU).
Prints a line each and the ratios; --json FILE keeps them.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, resource, subprocess, sys, time, io
build, traces, mode, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, os.path.join(build, "python"))
import numpy, pandas
import dlprof
import dlprof.traces  # the module, not the data: loaded before the baseline
def rss_peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
out = {}
if mode == "memory":
    dlprof._native.lib()
    base = rss_peak()
    df = dlprof.read_events(traces)
    out = {"events": len(df), "peak_over_base": rss_peak() - base,
           "frame_bytes": int(df.memory_usage(deep=True).sum())}
elif mode in ("all", "few"):
    cols = None if mode == "all" else ["ts", "dur", "tid", "size", "ret"]
    times, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        df = dlprof.read_events(traces, columns=cols)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        n, width = df.shape
        del df
    out = {"events": n, "columns": width, "times": times, "cpu": cpu}
elif mode == "json":
    t = time.perf_counter()
    p = subprocess.run([os.path.join(build, "tools", "dlprof-dump"), "--format", "jsonl",
                        traces], capture_output=True, check=True)
    df = pandas.read_json(io.BytesIO(p.stdout), lines=True)
    out = {"events": len(df), "times": [time.perf_counter() - t],
           "peak_rss": rss_peak()}
print(json.dumps(out))
"""


def child(args, traces, mode):
    cmd = ["taskset", "-c", str(args.cpu), args.python, "-c", CHILD, args.build, traces,
           mode, str(args.repeat)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench/python_read.py: the %s measurement failed:\n%s" % (mode, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--events", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the Python with numpy and pandas that runs the measurements")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory(prefix="dlprof-pyread-") as work:
        data, traces = os.path.join(work, "d.bin"), os.path.join(work, "traces")
        pread = os.path.join(args.build, "bench", "pread_overhead")
        subprocess.run([pread, "--file", data, "--create", "--file-mb", "64"], check=True,
                       capture_output=True)
        env = dict(os.environ, DLPROF_DIR=traces, DLPROF_QUIET="1",
                   LD_PRELOAD=os.path.join(args.build, "lib", "libdlprof.so"))
        subprocess.run([pread, "--file", data, "--iters", str(args.events), "--warmup", "0",
                        "--clock-iters", "1", "--pattern", "random"], env=env, check=True,
                       capture_output=True)
        figures = {"all": child(args, traces, "all"), "few": child(args, traces, "few"),
                   "memory": child(args, traces, "memory"), "json": child(args, traces, "json")}
    n = figures["all"]["events"]
    best = min(figures["all"]["times"])
    few = min(figures["few"]["times"])
    slow = figures["json"]["times"][0]
    mem = figures["memory"]
    print("trace: %d events (random 4 KiB preads), one CPU (taskset -c %d)" % (n, args.cpu))
    cpu_best = min(figures["all"]["cpu"])
    print("read_events, %d columns: best of %d %.3f s = %.2f M events/s; CPU time best %.3f s"
          " = %.2f M events/s  (wall: %s)"
          % (figures["all"]["columns"], args.repeat, best, n / best / 1e6, cpu_best,
             n / cpu_best / 1e6, " ".join("%.3f" % t for t in figures["all"]["times"])))
    print("read_events, 5 columns: best of %d %.3f s = %.2f M events/s; CPU time best %.3f s"
          % (args.repeat, few, n / few / 1e6, min(figures["few"]["cpu"])))
    print("dlprof-dump --format jsonl | pandas.read_json(lines=True): %.2f s = %.3f M events/s,"
          " peak RSS %d MiB" % (slow, figures["json"]["events"] / slow / 1e6,
                                figures["json"]["peak_rss"] >> 20))
    print("read_events vs the JSON route: %.0fx faster" % (slow / best))
    print("memory of one read_events: peak RSS +%d MiB over the imports, DataFrame %d MiB "
          "(%.2fx)" % (mem["peak_over_base"] >> 20, mem["frame_bytes"] >> 20,
                       mem["peak_over_base"] / max(mem["frame_bytes"], 1)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
