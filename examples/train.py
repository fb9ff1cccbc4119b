"""A small real PyTorch training loop on the CPU, the quickstart's example.

Writes a data set of a few hundred small files (a feature vector and a label
each), then trains a tiny model on it for two epochs: a Dataset that reads
one file per sample, a DataLoader with 2 worker processes, an optimizer.
There is no `import dlprof`: traced with

    LD_PRELOAD=build/lib/libdlprof.so python3 examples/train.py DIR
    (or build/tools/dlprof run -- python3 examples/train.py DIR)

dlprof records, with no change to this script, each batch the loop waits
for, each worker's fetch of a batch and each optimizer step
(docs/PYTHON.md, "PyTorch without code changes"), beside every read.

    examples/train.py [DATA_DIR] [--files N] [--epochs E] [--work SECONDS]

--work adds that much Python work per sample in the workers (decoding,
augmenting): enough of it makes the loop wait for data.
"""

import argparse
import os
import struct
import time

import torch
from torch.utils.data import DataLoader, Dataset

FEATURES = 64


def make_dataset(root, files):
    """files samples of FEATURES floats and a label; kept if already there."""
    os.makedirs(root, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    w = torch.randn(FEATURES, generator=g)
    paths = []
    for i in range(files):
        path = os.path.join(root, "sample_%04d.bin" % i)
        paths.append(path)
        if os.path.exists(path):
            continue
        x = torch.randn(FEATURES, generator=g)
        label = 1 if float(x @ w) > 0 else 0
        with open(path, "wb") as f:
            f.write(struct.pack("<%df" % FEATURES, *x.tolist()))
            f.write(struct.pack("<i", label))
    return paths


class Samples(Dataset):
    """One file per sample, read whole, decoded."""

    def __init__(self, paths, work=0.0):
        self.paths = paths
        self.work = work

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            raw = f.read()
        if self.work:  # a stand-in for decoding and augmentation
            end = time.perf_counter() + self.work
            while time.perf_counter() < end:
                pass
        x = torch.tensor(struct.unpack_from("<%df" % FEATURES, raw))
        y = struct.unpack_from("<i", raw, 4 * FEATURES)[0]
        return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", default="example-dataset")
    ap.add_argument("--files", type=int, default=384)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--work", type=float, default=0.0005)
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Samples(make_dataset(args.data, args.files), args.work),
                        batch_size=16, shuffle=True, num_workers=2)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        total = correct = 0
        for x, y in loader:
            opt.zero_grad()
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            total += len(y)
            correct += int((out.argmax(1) == y).sum())
        print("epoch %d: %d samples, accuracy %.2f" % (epoch, total, correct / total))


if __name__ == "__main__":
    main()
