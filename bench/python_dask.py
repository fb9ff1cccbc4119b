#!/usr/bin/env python3
"""dlprof.dask.summary on the job-scale directory (bench/job_scale.sh's: HOSTS
simulated hosts x PROCS processes, default 8 x 128 = 1,024 traces) against
`dlprof-dump --summary`: the same document, and the time ratio (issue 20's
target: at most 2x on a LocalCluster of 2 workers). Figures from one run.

    bench/python_dask.py [--build build] [--events 10000000] [--hosts 8] [--procs 128]
                         [--repeat 3] [--workers 2] [--python /usr/bin/python3]

Traces are made as job_scale.sh makes them (each host its own UTS and pid
namespace via unshare, so needs root; each process an lseek loop); EVENTS
defaults to 10 M, a fifth of job_scale.sh's 50 M, to fit a few minutes.
The Dask side runs on LocalCluster(n_workers=WORKERS, threads_per_worker=1)
(worker processes); the cluster's start and a first call that loads the
package on the workers are timed apart. Both sides alternate REPEAT times;
the best and median of each are printed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HOST_SCRIPT = r'''
hostname "node$0"
i=0
while [ "$i" -lt "$1" ]; do
  DLPROF_DIR="$2/job" DLPROF_QUIET=1 DLPROF_RUN_ID=job-scale LD_PRELOAD="$3" "$4" "$5" "$6" &
  i=$((i + 1))
  [ $((i % 16)) -eq 0 ] && wait
done
wait
'''

DASK_SIDE = r'''
import json, os, statistics, sys, time
build, job, workers, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, os.path.join(build, "python"))
os.environ["PYTHONPATH"] = os.path.join(build, "python")  # the workers' too
from dask.distributed import Client, LocalCluster
import dlprof.dask
t = time.perf_counter()
cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                       dashboard_address=None, silence_logs=40)
client = Client(cluster)
start = time.perf_counter() - t
times, doc = [], None
for _ in range(repeat + 1):
    t = time.perf_counter()
    doc = dlprof.dask.summary(job, client=client)
    times.append(time.perf_counter() - t)
client.close()
cluster.close()
print(json.dumps({"start": start, "first": times[0], "times": times[1:], "summary": doc}))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--events", type=int, default=10000000)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--procs", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the Python with dask and distributed")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    per_proc = args.events // (args.hosts * args.procs)
    with tempfile.TemporaryDirectory(prefix="dlprof-pydask-") as work:
        data = os.path.join(work, "data.bin")
        with open(data, "wb") as f:
            f.write(b"\0" * (1 << 20))
        print("making %d hosts x %d processes x %d lseeks ..." % (args.hosts, args.procs,
                                                                  per_proc), flush=True)
        for h in range(args.hosts):
            subprocess.run(["unshare", "--uts", "--pid", "--fork", "--mount-proc", "sh", "-c",
                            HOST_SCRIPT, str(h), str(args.procs), work,
                            os.path.join(build, "lib", "libdlprof.so"),
                            os.path.join(build, "bench", "lseek_loop"), data, str(per_proc)],
                           check=True)
        job = os.path.join(work, "job")
        traces = sum(len([f for f in fs if f.endswith(".dlprof")]) for _, _, fs in os.walk(job))
        dump_times, native = [], None
        for _ in range(args.repeat):
            t = time.perf_counter()
            p = subprocess.run([os.path.join(build, "tools", "dlprof-dump"), "--summary",
                                "--format", "json", job], capture_output=True, check=True)
            dump_times.append(time.perf_counter() - t)
            native = json.loads(p.stdout)
        p = subprocess.run([args.python, "-c", DASK_SIDE, build, job, str(args.workers),
                            str(args.repeat)], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("the Dask side failed:\n" + p.stderr[-4000:])
        dask_side = json.loads(p.stdout.strip().splitlines()[-1])

    def best_median(ts):
        s = sorted(ts)
        return s[0], s[(len(s) - 1) // 2]
    db, dm = best_median(dump_times)
    kb, km = best_median(dask_side["times"])
    print("%d traces, %d events (%d hosts x %d processes x %d lseeks + their own records)"
          % (traces, native["events"], args.hosts, args.procs, per_proc))
    print("dlprof-dump --summary --format json: best %.2f s, median %.2f s" % (db, dm))
    print("dlprof.dask.summary, LocalCluster(n_workers=%d, threads_per_worker=1): best %.2f s, "
          "median %.2f s (cluster start %.2f s, first call %.2f s)"
          % (args.workers, kb, km, dask_side["start"], dask_side["first"]))
    print("dask / dlprof-dump: %.2fx (best), %.2fx (median)" % (kb / db, km / dm))
    same = dask_side["summary"] == native
    print("the same summary document: %s" % ("yes" if same else "NO"))
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
