"""How close the batch wait's split comes to what the loop measured itself
(docs/ANALYSIS.md, "Where the wait goes"; issue 51 moved this here from
tests/integration/test_wait_split.py, which holds the split to the loop's
own bounds of it, exactly: a measure of accuracy depends on the machine's
load, a test must not).

Each mode of tests/integration/scripts/torch_split.py (a CPU torch loop
whose wait has a known cause, no `import dlprof`) is traced under
LD_PRELOAD=libdlprof.so, N times; each run's reading, preprocessing and
hand-over from `dlprof-dump --summary` are set against the loop's own
(its clock reads around its I/O calls, fetches and next() calls: a few
microseconds outside what the tracer records on an idle machine, any
amount more on a busy one).

    bench/wait_split.py [BUILD_DIR] [--runs N] [--modes read,cpu,handover,pin]

Prints, per mode, the medians of the truth and of the trace for each part
and the trace's error against the truth's part (in % of the wait), and the
cause each named.
"""

import argparse
import os
import shutil
import statistics
import tempfile

import traced_script

PARTS = ("reading", "preprocessing", "handover")
WORKERS = {"read": 1, "cpu": 1, "handover": 1, "pin": 0}


def one(build, mode, tmp):
    truth, summary = traced_script.run(build, "torch_split.py", mode, tmp, WORKERS[mode])
    if "batches" not in truth:
        return None  # this torch does not pin without a GPU
    wait = summary["verdict"]["batch_wait"]
    truth_cause = max(PARTS, key=lambda p: truth[p + "_ns"])
    return {"truth": {p: truth[p + "_ns"] for p in PARTS}, "trace": {p: wait[p + "_ns"] for p in PARTS},
            "wait": wait["ns"], "cause": (truth_cause, wait["cause"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="read,cpu,handover,pin")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    tmp = tempfile.mkdtemp(prefix="dlprof-wait-split-")
    try:
        for mode in args.modes.split(","):
            runs = [r for r in (one(build, mode, tmp) for _ in range(args.runs)) if r]
            if not runs:
                print("%-9s skipped (no pinning without a GPU here)" % mode)
                continue
            print("%-9s %d runs; truth / trace / error in %% of the wait (medians)"
                  % (mode, len(runs)))
            for p in PARTS:
                truth = statistics.median(r["truth"][p] for r in runs)
                trace = statistics.median(r["trace"][p] for r in runs)
                error = statistics.median(100.0 * (r["trace"][p] - r["truth"][p]) / r["wait"]
                                          for r in runs)
                print("  %-13s %8.1f ms %8.1f ms %+6.1f %%" % (p, truth / 1e6, trace / 1e6, error))
            print("  cause (truth, trace): %s" % ", ".join("%s/%s" % r["cause"] for r in runs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
