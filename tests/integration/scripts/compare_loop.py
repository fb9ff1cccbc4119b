"""A small training loop annotated with dlprof regions, no torch, for
tests/integration/test_compare.py: each step waits for its batch in a
"load_batch" region (opening and reading one 64 KiB sample of the data
set), then computes for COMPUTE_MS. Run twice, with the data set's opens
slowed (preload/slow_imports.c) and without, it is the same loop on a slow
and a fast file system.

    compare_loop.py DATA_DIR OUT.json STEPS COMPUTE_MS

(the dlprof package on its PYTHONPATH)

OUT.json gets what the loop measured itself: the time it spent in
load_batch (its batch wait) and in the loop, and its steps.
"""

import json
import os
import sys
import time

from dlprof import region

SIZE = 65536


def main():
    root, out, steps, compute_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    waited, start = 0, time.monotonic_ns()
    for step in range(steps):
        asked = time.monotonic_ns()
        with region("load_batch"):
            with open(os.path.join(root, "s%02d.bin" % (step % 4)), "rb", buffering=0) as f:
                got = len(f.read(SIZE))
        waited += time.monotonic_ns() - asked
        assert got == SIZE
        time.sleep(compute_ms / 1000.0)
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": waited, "loop_ns": time.monotonic_ns() - start,
                   "steps": steps}, f)
    print("done")


if __name__ == "__main__":
    main()
