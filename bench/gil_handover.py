#!/usr/bin/env python3
"""Why a memmap loader's finished batches wait in their worker (issue 49).

The issue's loader: a DataLoader of 2 workers whose samples each read 48
random pages of a 256 MiB np.memmap (MADV_RANDOM, page cache evicted).
Its batches were made long before the loop received them. The suspected
reason: a worker hands a batch to its queue's feeder thread, which pickles
it and writes it to the pipe, and that thread needs the interpreter lock,
which the worker's main thread holds while it is blocked on page faults
(numpy indexes a map with the lock held; a read call would release it).

This measures it, untraced, by the workers' own clocks. In each worker:
when a batch was put on the queue (Queue.put), when the feeder thread
began to pickle it (ForkingPickler.dumps, which it runs holding the lock),
and each sample's page reads
(the gather of 48 pages). For each batch, its wait in the worker (put to
write) and how much of that wait the main thread spent in a gather. Then
the same loader with the pages read by a call that releases the lock
(ctypes.memmove from the map: ctypes drops the lock around foreign calls),
which, if the lock is the reason, hands the batches over at once; and with
numpy reading a page at a time (the lock may change hands between two).

    /usr/bin/python3 bench/gil_handover.py [--batches 40] [--file PATH]

Results (this 2-CPU VM, see bench/RESULTS_DATA.md) at the end of the output.
"""

import argparse
import ctypes
import mmap
import os
import shutil
import sys
import tempfile
import time

PAGE = 4096
PAGES_PER_SAMPLE = 48
BATCH = 4


def log_path(directory, pid):
    return os.path.join(directory, "worker-%d.log" % pid)


class MemmapSamples:
    """Each sample: 48 random pages of the map, gathered by numpy (`numpy`)
    or copied by ctypes.memmove (`call`)."""

    def __init__(self, path, n, how, logs):
        self.path, self.n, self.how, self.logs = path, n, how, logs
        self.m = None

    def __len__(self):
        return self.n

    def _open(self):
        import numpy as np
        self.m = np.memmap(self.path, dtype=np.uint8, mode="r")
        self.m._mmap.madvise(mmap.MADV_RANDOM)
        self.pages = len(self.m) // PAGE
        self.base = self.m.ctypes.data
        self.log = open(log_path(self.logs, os.getpid()), "w", buffering=1)
        watch_handover(self.log)

    def __getitem__(self, i):
        import numpy as np
        import torch
        if self.m is None:
            self._open()
        rng = np.random.default_rng(i)
        offsets = rng.integers(0, self.pages, PAGES_PER_SAMPLE) * PAGE
        t0 = time.monotonic_ns()
        if self.how == "numpy":
            x = self.m[offsets]  # one fancy-indexing call: 48 faults
        elif self.how == "pages":
            # A page at a time: the lock can change hands between two.
            x = np.array([self.m[int(off)] for off in offsets], dtype=np.uint8)
        else:
            out = np.empty(PAGES_PER_SAMPLE, dtype=np.uint8)
            for k, off in enumerate(offsets):  # each copy releases the lock
                ctypes.memmove(out.ctypes.data + k, self.base + int(off), 1)
            x = out
        t1 = time.monotonic_ns()
        self.log.write("GATHER %d %d\n" % (t0, t1))
        return torch.from_numpy(x.astype(np.float32))


def watch_handover(log):
    """Notes when this worker puts a batch on its result queue and when the
    queue's feeder thread begins to pickle it (it holds the interpreter lock
    from then on: the batch has left the main thread's hands)."""
    import multiprocessing.queues as queues
    from multiprocessing.reduction import ForkingPickler
    put, dumps = queues.Queue.put, ForkingPickler.dumps

    def timed_put(self, obj, *a, **k):
        log.write("PUT %d\n" % time.monotonic_ns())
        return put(self, obj, *a, **k)

    def timed_dumps(obj, *a, **k):
        if isinstance(obj, tuple) and len(obj) == 2 and not isinstance(obj[1], str):
            log.write("SEND %d\n" % time.monotonic_ns())  # (index, batch)
        return dumps(obj, *a, **k)

    queues.Queue.put = timed_put
    ForkingPickler.dumps = staticmethod(timed_dumps)


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def run(path, how, batches):
    import torch.utils.data as data
    logs = tempfile.mkdtemp(prefix="gil-handover-")
    evict(path)
    loader = data.DataLoader(MemmapSamples(path, batches * BATCH, how, logs), batch_size=BATCH,
                             num_workers=2)
    waited = 0
    t_loop = time.monotonic_ns()
    it = iter(loader)
    for _ in range(batches):
        t0 = time.monotonic_ns()
        next(it)
        waited += time.monotonic_ns() - t0
    loop = time.monotonic_ns() - t_loop
    del it
    time.sleep(0.5)
    held = in_gather = 0
    count = after_gather = 0
    for name in os.listdir(logs):
        puts, sends, gathers = [], [], []
        for line in open(os.path.join(logs, name)):
            tag, *v = line.split()
            {"PUT": puts, "SEND": sends, "GATHER": gathers}[tag].append(tuple(map(int, v)))
        for (put,), (send,) in zip(puts, sends):
            held += send - put
            in_gather += sum(max(0, min(send, g1) - max(put, g0)) for g0, g1 in gathers)
            count += 1
            # Held while a gather ran, and sent within 1 ms of its end: the
            # feeder got the lock as soon as the main thread let it go.
            ends = [g1 for g0, g1 in gathers if g0 < send and put < g1 <= send]
            if ends and send - max(ends) < 1000000:
                after_gather += 1
    shutil.rmtree(logs, ignore_errors=True)
    return {"how": how, "batches": count, "after_gather": after_gather,
            "loop_ms": loop / 1e6, "waited_ms": waited / 1e6,
            "held_in_worker_ms": held / 1e6, "main_thread_gathering_ms": in_gather / 1e6}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--file", help="a 256 MiB file to map (made if missing)")
    args = ap.parse_args()
    path = args.file or os.path.join(tempfile.mkdtemp(prefix="gil-handover-"), "pages.bin")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            for _ in range(256):
                f.write(os.urandom(1 << 20))
    try:
        run_all(path, args.batches)
    finally:
        if not args.file:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def run_all(path, batches):
    for how in ("numpy", "pages", "call") * 2:
        r = run(path, how, batches)
        print("%-5s  batches %3d  loop %7.1f ms  waited %7.1f ms  held in the worker %7.1f ms,"
              " its main thread gathering %7.1f ms of it (%.0f %%); sent within 1 ms of a"
              " gather's end %d"
              % (r["how"], r["batches"], r["loop_ms"], r["waited_ms"], r["held_in_worker_ms"],
                 r["main_thread_gathering_ms"],
                 100.0 * r["main_thread_gathering_ms"] / max(r["held_in_worker_ms"], 1e-9),
                 r["after_gather"]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
