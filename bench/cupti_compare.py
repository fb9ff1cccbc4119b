#!/usr/bin/env python3
"""Before/after figures of bench/cupti_bench.cc in one run.

    bench/cupti_compare.py OLD_BINARY NEW_BINARY [--rounds 5] [--filter REGEX]

Runs the two builds of cupti_bench alternately (old, new, old, new, ...), so
that load from other processes falls on both, and prints for each benchmark
the median CPU ns per item (per record for BM_Walk/BM_Translate*, per call
for the others) of each build over the rounds, and new/old.
"""

import argparse
import json
import statistics
import subprocess
import sys


def run(binary, flt, min_time):
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_filter=" + flt,
                          "--benchmark_min_time=%s" % min_time],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        per = b.get("records_per_buffer", 1.0)
        # cpu_time is per iteration in time_unit (ns by default).
        res[b["name"]] = b["cpu_time"] / per
    return res


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--filter", default=".")
    p.add_argument("--min-time", default="0.2")
    args = p.parse_args(argv)
    samples = {"old": {}, "new": {}}
    for _ in range(args.rounds):
        for which in ("old", "new"):
            for name, ns in run(getattr(args, which), args.filter, args.min_time).items():
                samples[which].setdefault(name, []).append(ns)
    print("%-28s %12s %12s %8s" % ("benchmark (median of %d)" % args.rounds, "old ns/item",
                                  "new ns/item", "new/old"))
    for name in samples["new"]:
        old = samples["old"].get(name)
        new = statistics.median(samples["new"][name])
        if old:
            o = statistics.median(old)
            print("%-28s %12.1f %12.1f %8.2f" % (name, o, new, new / o))
        else:
            print("%-28s %12s %12.1f" % (name, "-", new))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
