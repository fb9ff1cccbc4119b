"""A DataLoader loop of many small batches for a bounded trace's whole-run
split (tests/integration/test_keep_causes.py), on real torch (CPU), with
no `import dlprof`.

    torch_keep.py MODE DATA_DIR OUT.json [PASSES [SAMPLES]]

MODE "many": PASSES (2) passes over a DataLoader of 2 workers (forked anew
each pass) of SAMPLES (400) samples in batches of 2; a sample is one 4 KiB pread of its own
file and 1 ms of numpy work; the loop's step takes 2 ms. Enough batches a
second that a bounded trace samples them (lib/core/batch_sampler.h).

MODE "late": as "many", but samples 151, 250 and 333 take 30 ms more of
numpy work, in each pass: their batches are late (the loop waits on the
worker preparing them), the rest handed over ready.

OUT.json gets the loop's own figures: batches, the time in iter() and
next() (batch_wait_ns, on CLOCK_MONOTONIC_RAW, the tracer's clock), and the
workers' time opening, reading and closing their samples' files (read_ns,
each worker's sum sent back with its samples).
"""

import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from loader_clock import raw_ns as now

PIECE = 4096


LATE = (151, 250, 333)


class Shards(Dataset):
    def __init__(self, root, samples, late=()):
        self.root = root
        self.samples = samples
        self.late = late

    def __len__(self):
        return self.samples

    def __getitem__(self, i):
        # The sample's file opened, read and closed inside the clock reads:
        # the analysis counts all three as reading, and an open descheduled
        # under load took 96 ms where the pread took 20 us.
        t0 = now()
        fd = os.open(os.path.join(self.root, "k%03d.bin" % (i % 50)), os.O_RDONLY)
        try:
            data = os.pread(fd, PIECE, 0)
        finally:
            os.close(fd)
        read_ns = now() - t0
        end = time.thread_time_ns() + (31000000 if i in self.late else 1000000)
        x = np.frombuffer(data, dtype=np.uint8).astype(np.float32)
        while time.thread_time_ns() < end:
            x = np.sort(x)
        return torch.from_numpy(x[:16].copy()), read_ns


def main():
    mode, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
    passes = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    samples = int(sys.argv[5]) if len(sys.argv) > 5 else 400
    assert mode in ("many", "late"), mode
    for i in range(50):
        path = os.path.join(root, "k%03d.bin" % i)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(bytes([i + 1]) * PIECE)
    loader = DataLoader(Shards(root, samples, LATE if mode == "late" else ()),
                        batch_size=2, num_workers=2)
    batches, wait, read = 0, 0, 0
    for _ in range(passes):
        t0 = now()
        it = iter(loader)
        wait += now() - t0
        while True:
            t0 = now()
            try:
                x, read_ns = next(it)
            except StopIteration:
                wait += now() - t0
                break
            wait += now() - t0
            batches += 1
            read += int(read_ns.sum())
            end = now() + 2000000
            while now() < end:
                pass
    with open(out, "w") as f:
        json.dump({"batches": batches, "batch_wait_ns": wait, "read_ns": read}, f)
    print("done")


if __name__ == "__main__":
    main()
