"""A loop without a DataLoader that saves a checkpoint with torch.save and
loads it back at once with torch.load, to verify it, or that caches its
samples with torch.save and loads them in the next epochs
(test_torch_saves.py): usage: torch_verify_saves.py MODE DATA TRUTH
(MODE: "verify" or "cache").

12 steps of a small model (the bootstrap's optimizer_step regions), before
each the batch read (4 files of 256 KiB, dropped from the page cache
first); after every fourth step an 8 MiB checkpoint saved with torch.save,
then loaded back with torch.load. The program's clock around each reading,
each save and each load.

"cache": 3 epochs of 12 steps; in epoch 0 each step reads its raw sample
(a file of 256 KiB, dropped from the page cache first), decodes it into a
4 MiB tensor and torch.saves that to a cache file of its own; in epochs 1
and 2 each step torch.loads its cached sample (dropped from the page cache
first). The program's clock around each step's data work: the reading and
the cache's save in epoch 0, the load after; and around epoch 0's decoding
(CPU work between the reading and the save, no I/O). Nothing is a
checkpoint.

The truth: a JSON object of what the program measured, in ns."""

import json
import os
import sys
import time

import torch
from step_files import make_files, ns, read_files


def verify(data, truth):
    paths = make_files(data, "v", 48)
    torch.set_num_threads(1)
    model = torch.nn.Linear(256, 256)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    blob = torch.ones((8 << 20) // 4)
    waits, saves, loads = [], [], []
    for s in range(12):
        t0 = time.perf_counter()
        read_files(paths[4 * s:4 * s + 4])
        waits.append(ns(t0))
        loss = model(torch.ones(8, 256)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if s % 4 == 3:
            path = os.path.join(data, "ckpt_%d.pt" % s)
            t0 = time.perf_counter()
            torch.save({"model": model.state_dict(), "blob": blob}, path)
            saves.append(ns(t0))
            t0 = time.perf_counter()
            torch.load(path)
            loads.append(ns(t0))
    truth.update(waits=waits, saves=saves, loads=loads)


def cache(data, truth):
    raws = make_files(data, "raw", 12)
    cached = [os.path.join(data, "cache_%02d.pt" % k) for k in range(len(raws))]
    torch.set_num_threads(1)
    model = torch.nn.Linear(256, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    waits, decodes = [], []
    for epoch in range(3):
        for k in range(len(raws)):
            t0 = time.perf_counter()
            if epoch == 0:
                read_files(raws[k:k + 1])
                t1 = time.perf_counter()
                x = torch.ones((4 << 20) // 4).view(-1, 256) * k  # the decoded sample
                decodes.append(ns(t1))
                torch.save(x, cached[k])
            else:
                fd = os.open(cached[k], os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)
                t0 = time.perf_counter()
                x = torch.load(cached[k])
            waits.append(ns(t0))
            loss = model(x[:64]).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            time.sleep(0.01)  # the rest of the step
    truth.update(waits=waits, decodes=decodes)


def main():
    mode, data, out = sys.argv[1:4]
    truth = {}
    {"verify": verify, "cache": cache}[mode](data, truth)
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
