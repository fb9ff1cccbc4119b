"""Loops of numpy and plain file calls that time themselves
(test_np_saves.py): usage: np_saves.py MODE DATA TRUTH.

  npsave  8 steps of an annotated loader, and after every other one a
          checkpoint of 8 MiB saved with np.save into an open file, then
          os.fsync and the close, the program's clock around each save
          and from the open's return to the close's (np.save writes
          through a stream on a dup of the file's descriptor and closes
          that stream before the fsync);
  steps   8 optimizer_step regions, before each the batch read (4 files
          of 256 KiB, dropped from the page cache first; 16 before the
          first) and 50 ms of other work (2 ms before the first: its
          reading and work together shorter than the others'); the first
          step 100 ms long (an allreduce waiting for a slower rank), the
          others 5 ms; the clock around each reading.
  resave  8 optimizer_step regions, before each the batch read (4 files of
          256 KiB, dropped from the page cache first); after every other
          step a 16 MiB checkpoint written over the last one's file
          (open(path, "wb") truncates it first), then os.fsync and the
          close; the clock around each reading and around each save.

The truth: a JSON object of what the program measured, in ns."""

import json
import os
import sys
import time

import dlprof
import numpy as np
from step_files import make_files, ns, read_files


def npsave(data, truth):
    arr = np.ones((8 << 20) // 8)
    saves, inner, fsync_ns = [], [], 0
    for i in dlprof.annotate_loader(range(8)):
        time.sleep(0.02)
        if i % 2 == 1:
            t0 = time.perf_counter()
            with open(os.path.join(data, "ckpt%d.npy" % i), "wb") as f:
                t_in = time.perf_counter()
                np.save(f, arr)
                f.flush()
                t1 = time.perf_counter()
                os.fsync(f.fileno())
                fsync_ns += ns(t1)
            saves.append(ns(t0))
            inner.append(ns(t_in))
    truth.update(saves=saves, save_ns=sum(saves), inner_ns=sum(inner), fsync_ns=fsync_ns,
                 bytes=os.path.getsize(os.path.join(data, "ckpt1.npy")))


def steps(data, truth):
    paths = make_files(data, "s", 44)
    time.sleep(0.05)  # the rest of the start-up: no reading
    waits = []
    batches = [paths[:16]] + [paths[16 + 4 * k:20 + 4 * k] for k in range(7)]
    for s, batch in enumerate(batches):
        t0 = time.perf_counter()
        read_files(batch)
        waits.append(ns(t0))
        time.sleep(0.002 if s == 0 else 0.05)  # the forward and backward passes
        with dlprof.region("optimizer_step"):
            time.sleep(0.1 if s == 0 else 0.005)
    truth.update(waits=waits)


def resave(data, truth):
    paths = make_files(data, "r", 32)
    blob = os.urandom(16 << 20)
    waits, saves = [], []
    for s in range(8):
        t0 = time.perf_counter()
        read_files(paths[4 * s:4 * s + 4])
        waits.append(ns(t0))
        time.sleep(0.02)  # the forward and backward passes
        with dlprof.region("optimizer_step"):
            time.sleep(0.005)
        if s % 2 == 1:
            t0 = time.perf_counter()
            with open(os.path.join(data, "last.ckpt"), "wb") as f:
                for i in range(0, len(blob), 1 << 20):
                    f.write(blob[i:i + (1 << 20)])
                f.flush()
                os.fsync(f.fileno())
            saves.append(ns(t0))
    truth.update(waits=waits, saves=saves)


def main():
    mode, data, out = sys.argv[1:4]
    truth = {}
    {"npsave": npsave, "steps": steps, "resave": resave}[mode](data, truth)
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
