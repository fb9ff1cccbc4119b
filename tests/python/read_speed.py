"""How fast dlprof.read_events reads a trace into pandas, against
`dlprof-dump --format jsonl` piped into pandas.read_json(lines=True).
A measurement (docs/PYTHON.md), not a test: ctest does not run it.

    BUILD=build
    $BUILD/bench/pread_overhead --file /tmp/d.bin --create --file-mb 64
    DLPROF_DIR=/tmp/t DLPROF_QUIET=1 LD_PRELOAD=$BUILD/lib/libdlprof.so \\
      $BUILD/bench/pread_overhead --file /tmp/d.bin --iters 2000000 --warmup 0 \\
      --clock-iters 1 --pattern random
    /usr/bin/python3 tests/python/read_speed.py $BUILD /tmp/t [--json]

Prints, for read_events, the best of 3 calls (and of a 5-column call) and
the peak RSS of one call in a fresh process; with --json, the time and peak
RSS of the jsonl route (slow: about a minute per 2 M events).
"""

import io
import os
import resource
import subprocess
import sys
import time


def main():
    build, traces = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(build, "python"))
    import dlprof
    import pandas as pd

    if "--json" in sys.argv:
        t = time.perf_counter()
        p = subprocess.run([os.path.join(build, "tools", "dlprof-dump"), "--format", "jsonl",
                            traces], capture_output=True, check=True)
        df = pd.read_json(io.BytesIO(p.stdout), lines=True)
        dt = time.perf_counter() - t
        print("dlprof-dump --format jsonl | read_json: %d events, %.2f s, %.3f M events/s, "
              "peak RSS %d MiB" % (len(df), dt, len(df) / dt / 1e6,
                                   resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10))
        return
    t = time.perf_counter()
    df = dlprof.read_events(traces)
    first = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    size = df.memory_usage(deep=True).sum() >> 20
    del df
    best = first
    for _ in range(2):
        t = time.perf_counter()
        df = dlprof.read_events(traces)
        best = min(best, time.perf_counter() - t)
        n = len(df)
        del df
    t = time.perf_counter()
    few = dlprof.read_events(traces, columns=["ts", "dur", "tid", "size", "ret"])
    dt = time.perf_counter() - t
    print("read_events: %d events, first call %.3f s, best of 3 %.3f s = %.2f M events/s; "
          "DataFrame %d MiB, peak RSS of the first call %d MiB" %
          (n, first, best, n / best / 1e6, size, peak))
    print("read_events(5 columns): %.3f s = %.2f M events/s" % (dt, len(few) / dt / 1e6))


if __name__ == "__main__":
    main()
