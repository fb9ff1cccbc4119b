"""A loop without a DataLoader that saves a checkpoint with torch.save and
loads it back at once with torch.load, to verify it (test_torch_saves.py):
usage: torch_verify_saves.py MODE DATA TRUTH (MODE: "verify").

12 steps of a small model (the bootstrap's optimizer_step regions), before
each the batch read (4 files of 256 KiB, dropped from the page cache
first); after every fourth step an 8 MiB checkpoint saved with torch.save,
then loaded back with torch.load. The program's clock around each reading,
each save and each load.

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


def main():
    mode, data, out = sys.argv[1:4]
    truth = {}
    {"verify": verify}[mode](data, truth)
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
