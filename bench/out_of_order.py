#!/usr/bin/python3
"""The head_of_line finding's in_order=False estimate (issue 50) against a
loader that hands batches over as they are made: tests/integration/scripts/
torch_inside.py's `hol` loop (a DataLoader whose every 16th sample is slow)
traced, its estimate read from the verdict, and its `hol_unordered` loader
(what DataLoader(in_order=False) does in torch 2.6 and later, which Debian's
torch lacks: batches given out round-robin, at most 2 outstanding a worker,
the ready one taken first) untraced, its own wait; alternating, with 4
workers (the slow batches all fall to one worker: reordering hardly helps)
and 3 (they are spread: it does).

    bench/out_of_order.py [BUILD_DIR] [--runs N]
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "tests", "integration", "scripts", "torch_inside.py")


def run(build, mode, workers, traced):
    work = tempfile.mkdtemp(prefix="dlprof-ooo-")
    out = os.path.join(work, "out.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLPROF_")}
    if traced:
        env.update({"LD_PRELOAD": os.path.join(build, "lib", "libdlprof.so"),
                    "DLPROF_DIR": os.path.join(work, "traces"), "DLPROF_QUIET": "1"})
    subprocess.run([PYTHON, SCRIPT, mode, work, out, str(workers)], env=env, check=True,
                   capture_output=True, timeout=600)
    with open(out) as f:
        truth = json.load(f)
    result = truth["batch_wait_ns"] if not traced else truth
    if traced:
        s = json.loads(subprocess.run([os.path.join(build, "tools", "dlprof-dump"), "--summary",
                                       "--format", "json", os.path.join(work, "traces")],
                                      capture_output=True, text=True, check=True).stdout)
        wait = s["verdict"]["batch_wait"]
        found = [f for f in s["verdict"]["findings"] if f["rule"] == "head_of_line"]
        estimate = found[0]["estimate"]["batch_wait_ns"] if found else wait["ns"]
        # The batch waits alone: the iterator's start and the pass's end are
        # in neither loader's reordering.
        result = (truth["batches_wait_ns"], truth["batches_wait_ns"] - (wait["ns"] - estimate))
    subprocess.run(["rm", "-rf", work])
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for workers in (4, 3):
        in_order, estimate, unordered = [], [], []
        for _ in range(args.runs):
            w, e = run(args.build, "hol", workers, True)
            in_order.append(w)
            estimate.append(e)
            unordered.append(run(args.build, "hol_unordered", workers, False))
        ms = lambda v: "%.0f ms" % (statistics.median(v) / 1e6)
        print("%d workers: in order %s, estimate with in_order=False %s, a loader that "
              "reorders %s (medians of %d)" % (workers, ms(in_order), ms(estimate), ms(unordered),
                                                args.runs))


if __name__ == "__main__":
    main()
