#!/usr/bin/env python3
"""Reading through memory maps (issue 49): the targets, measured.

    bench/map_reads.py [--build build] [--runs 5] [--only loader|cost]

loader: the issue's memmap loader (a DataLoader of 2 workers whose samples
  each read 48 random pages of a 256 MiB np.memmap, MADV_RANDOM, page cache
  evicted; tests/integration/scripts/torch_memmap.py's `loader` at 256 MiB,
  60 batches of 4)
  traced, with Debian's Python and torch: the verdict's batch wait against
  the loop's own clock (its iter() and next() calls), the share of it that
  is reading, the cause, whether the file is named, and the findings'
  rules and any CPU or hand-over advice.
cost: bench/fault_cost.c, untraced and traced alternately: a page fault
  served from the disk (MADV_RANDOM, evicted) and one served from the page
  cache (a minor fault of a mapping of cached pages), medians per run.

Results of this 2-CPU VM are in bench/RESULTS_DATA.md, "Reading through memory
maps".
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPT = os.path.join(ROOT, "tests", "integration", "scripts", "torch_memmap.py")


def loader(build, work, mib):
    lib = os.path.join(build, "lib", "libdlprof.so")
    dump = os.path.join(build, "tools", "dlprof-dump")
    traces = os.path.join(work, "traces")
    shutil.rmtree(traces, ignore_errors=True)
    env = dict(os.environ, LD_PRELOAD=lib, DLPROF_DIR=traces, DLPROF_QUIET="1",
               PYTHONPATH=os.path.join(build, "lib", "dlprof-python"),
               TORCH_MEMMAP_MIB=str(mib), TORCH_MEMMAP_BATCHES="60")
    truth_path = os.path.join(work, "truth.json")
    subprocess.run(["/usr/bin/python3", SCRIPT, "loader", work, truth_path], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    truth = json.load(open(truth_path))
    s = json.loads(subprocess.run([dump, "--summary", "--format", "json", traces], check=True,
                                  capture_output=True, text=True).stdout)
    text = subprocess.run([dump, "--summary", traces], check=True, capture_output=True,
                          text=True).stdout
    w = s["verdict"]["batch_wait"]
    findings = s["verdict"]["findings"]
    advice = " ".join(f["what"] + " " + f["advice"] for f in findings)
    return {
        "wait_ms": w["ns"] / 1e6, "loop_clock_ms": truth["wait_ns"] / 1e6,
        "wait_vs_clock": w["ns"] / truth["wait_ns"],
        "reading": w["reading_ns"] / w["ns"], "cause": w["cause"],
        "startup": w["worker_startup_ns"] / w["ns"], "handover": w["handover_ns"] / w["ns"],
        "file_named": truth["file"] in text,
        "rules": [f["rule"] for f in findings],
        "cpu_advice": "CPUs are all busy" in advice, "handover_advice": "/dev/shm" in advice,
    }


def fault_cost(build, work, runs):
    prog = os.path.join(build, "bench", "fault_cost")
    lib = os.path.join(build, "lib", "libdlprof.so")
    path = os.path.join(work, "pages.bin")
    with open(path, "wb") as f:
        for _ in range(64):
            f.write(os.urandom(1 << 20))
    out = {}
    for mode, touches in (("disk", 2000), ("cache", 16000)):
        results = {"untraced": [], "traced": []}
        for _ in range(runs):
            for name in ("untraced", "traced"):
                env = dict(os.environ)
                if name == "traced":
                    env.update(LD_PRELOAD=lib, DLPROF_DIR=os.path.join(work, "cost-traces"),
                               DLPROF_QUIET="1")
                p = subprocess.run([prog, mode, path, str(touches)], env=env, check=True,
                                   capture_output=True, text=True)
                results[name].append(json.loads(p.stdout)["median_ns"])
        u, t = statistics.median(results["untraced"]), statistics.median(results["traced"])
        out[mode] = {"untraced_ns": u, "traced_ns": t, "added_ns": t - u,
                     "added": (t - u) / u, "runs": results}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=("loader", "cost"))
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="dlprof-map-reads-")
    try:
        if args.only in (None, "loader"):
            for _ in range(args.runs):
                print(json.dumps(loader(build, work, 256)), flush=True)
        if args.only in (None, "cost"):
            print(json.dumps(fault_cost(build, work, args.runs)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
