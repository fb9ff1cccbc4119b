"""Ranks that step together, for test_lockstep.py: the Horovod/DLIO shape
(mpi4py, no DataLoader), each rank fetching its batches through
dlprof.annotate_loader, then computing, then (MODE "lockstep", "save") an
allreduce that waits for every rank, as synchronous data-parallel training
does; MODE "late" too, its rank 0 entering the loop 0.4 s after the
others; MODE "free" has none, so each rank runs at its own pace, and MODE
"deadline" none either, each rank stepping until 0.6 s have passed.

    mpirun -n N python3 lockstep_ranks.py DATA_DIR LOG_DIR MODE STEPS SLOW_MS

Each step a rank reads a 64 KiB sample file with os.pread; rank 1's loader
also sleeps SLOW_MS first (slow storage on one node). Compute is a 20 ms
sleep. In MODE "save", rank 0 alone writes a 24 MiB checkpoint (1 MiB
writes, then fsync) after every 4th step, as rank 0 does in DDP.

Each rank writes LOG_DIR/rank<R>.json, its own clock (CLOCK_MONOTONIC_RAW,
the tracer's) around what it did: per step the time in next() ("waits"),
its saves ("saves": [inner, outer], from the first write to the fsync's
end, and from before the open, which truncates the last save, to after
the close), and its loop from its first next() to its last step's end
("loop").
"""
import json
import os
import sys
import time

from mpi4py import MPI

import dlprof


def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)


def main():
    data, logs, mode, steps, slow_ms = sys.argv[1:6]
    steps, slow_s = int(steps), int(slow_ms) / 1000.0
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    path = os.path.join(data, "samples%d.bin" % rank)
    with open(path, "wb") as f:
        f.write(os.urandom(64 * 1024 * steps))
    comm.Barrier()

    def batches():
        fd = os.open(path, os.O_RDONLY)
        for i in range(steps):
            if rank == 1:
                time.sleep(slow_s)
            yield os.pread(fd, 64 * 1024, i * 64 * 1024)
        os.close(fd)

    waits, saves = [], []
    if mode == "late" and rank == 0:
        time.sleep(0.4)  # building its model: the others' first allreduce waits
    deadline = now() + 600 * 10**6
    it = iter(dlprof.annotate_loader(batches()))
    start = None
    for step in range(steps):
        if mode == "deadline" and now() >= deadline:
            break
        t0 = now()
        start = start or t0
        next(it)
        waits.append(now() - t0)
        time.sleep(0.020)
        if mode == "save" and rank == 0 and step % 4 == 3:
            outer = now()
            with open(os.path.join(data, "ckpt.bin"), "wb", buffering=0) as f:
                chunk = b"c" * (1 << 20)
                inner = now()
                for _ in range(24):
                    f.write(chunk)
                os.fsync(f.fileno())
                saves.append((now() - inner, None))
            saves[-1] = (saves[-1][0], now() - outer)
        if mode not in ("free", "deadline"):
            comm.allreduce(step)
    end = now()
    for _ in it:  # the loader's end, as a loop that runs out finds it
        pass
    with open(os.path.join(logs, "rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "waits": waits, "saves": saves, "loop": end - start}, f)
    comm.Barrier()


if __name__ == "__main__":
    main()
