"""The loader workers' what-if against re-runs (issue 31, item 2;
docs/ANALYSIS_LOADER.md, "Loader workers: what more would give").

A loader-bound training loop on CPU torch, with no `import dlprof`
(tests/integration/scripts/torch_workers.py), is traced under
LD_PRELOAD=libdlprof.so with 1 worker; its `few_workers` finding's estimate
for 2 and 4 workers is set against the batch wait the same loop measured
(in the trace) when run with 2 and with 4 workers.

    bench/worker_estimate.py [BUILD_DIR] [--mode cpu|latency|serial]
                             [--runs N] [--batches B] [--sample-ms S] [--compute-ms C]

cpu: the workers' samples are numpy work (preprocessing-bound); latency: a
storage with S ms of latency per sample that serves any number at once;
serial: the same storage, one request at a time. Each setting runs N times
(1, 2, 4, 1, 2, 4, ... so that the machine's load falls on all alike); the
medians are printed, then the three pairs: 1 worker (measured; the model's
fit), 2 and 4 workers (estimated from the 1-worker run, measured).
"""

import argparse
import shutil
import statistics
import sys
import tempfile

import traced_script


def one(build, mode, workers, args, tmp):
    truth, summary = traced_script.run(build, "torch_workers.py", mode, tmp, workers,
                                       args.batches, args.sample_ms, args.compute_ms)
    v = summary["verdict"]
    few = [f for f in v["findings"] if f["rule"] == "few_workers"]
    return {"wait": v["batch_wait"]["ns"], "truth": truth["batch_wait_ns"],
            "first": truth["first_wait_ns"], "cpus": truth["cpus"],
            "estimate": {e["workers"]: e["batch_wait_ns"] for e in few[0]["estimate"]} if few else {},
            "limit": few[0].get("limit", "") if few else "", "model": few[0].get("model") if few else None}


def ms(ns):
    return "%.0f ms" % (ns / 1e6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--mode", default="cpu", choices=["cpu", "latency", "serial"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--sample-ms", type=float, default=8.0)
    ap.add_argument("--compute-ms", type=float, default=4.0)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dlprof-workers-")
    try:
        runs = {1: [], 2: [], 4: []}
        for _ in range(args.runs):
            for w in (1, 2, 4):
                runs[w].append(one(args.build, args.mode, w, args, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = lambda xs: int(statistics.median(xs))
    print("mode %s, %d batches of 4 samples, %.1f ms a sample, %.1f ms of compute a step, "
          "%d CPUs, %d runs each (medians)" % (args.mode, args.batches, args.sample_ms,
                                               args.compute_ms, runs[1][0]["cpus"], args.runs))
    for w in (1, 2, 4):
        r = runs[w]
        print("  %d worker%s: batch wait %s in the trace (%s measured by the loop, %s of it the "
              "first batch)" % (w, "" if w == 1 else "s", ms(med([x["wait"] for x in r])),
                                ms(med([x["truth"] for x in r])), ms(med([x["first"] for x in r]))))
    one_w = runs[1]
    est = {w: [x["estimate"].get(w) for x in one_w if x["estimate"]] for w in (2, 4)}
    limits = sorted({x["limit"] for x in one_w})
    print("  the 1-worker runs' limit: %s; model: %s" % (limits, one_w[-1]["model"]))
    print("pairs (workers: estimated from 1 worker / measured):")
    print("  1: today %s (measured)" % ms(med([x["wait"] for x in one_w])))
    for w in (2, 4):
        e = ms(med(est[w])) if est[w] else "no estimate"
        print("  %d: %s / %s" % (w, e, ms(med([x["wait"] for x in runs[w]]))))


if __name__ == "__main__":
    sys.exit(main())
