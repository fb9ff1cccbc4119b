"""Training loops on real torch (CPU) with no `import dlprof`, for the
zero-code instrumentation (python/dlprof/_torch.py through the bootstrap).

    torch_auto.py SCENARIO[,SCENARIO...] DATA_DIR OUT.json

Each scenario is one loader (two for "two") iterated by a training loop; they
run one after the other, so the loaders are numbered 0, 1, ... in the order
given ("two": train then val). The script measures its own truth and writes
it to OUT.json: for each call of next() on a loader iterator, the loader's
number, what came back ("batch", "end" for StopIteration, "error") and the
nanoseconds spent in it; optimizer.step() calls and the loop's wall time per
scenario; batch contents where they tell which samples were read.

Scenarios: disk (O_DIRECT preads in 2 workers), cpu (Python work in 2
workers), zero (num_workers=0), persistent (2 persistent workers, 2 epochs,
prefetch_factor 4), iterable (an IterableDataset split over 2 workers),
accum (gradient accumulation: a step every 3 batches), two (a training and a
validation loader, 2 epochs), spawn (2 workers started by spawn), errors
(a worker's dataset raises; StopIteration from an exhausted iterator; the
dataset and the loader pickle).
"""

import gc
import json
import mmap
import os
import pickle
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

SAMPLES, SIZE = 48, 16384
ALIGN = 4096


def sample_path(root, i):
    return os.path.join(root, "s%03d.bin" % i)


def write_samples(root):
    for i in range(SAMPLES):
        path = sample_path(root, i)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(bytes([i % 251]) * SIZE)


def read_direct(path):
    """The file with O_DIRECT preads (the page cache is bypassed: every
    read goes to the disk), plain preads where the file system refuses it."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECT", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        fd = os.open(path, os.O_RDONLY)
    try:
        buf = mmap.mmap(-1, SIZE)  # page-aligned, as O_DIRECT wants
        try:
            n = os.preadv(fd, [buf], 0)
        except OSError:
            os.close(fd)
            fd = os.open(path, os.O_RDONLY)
            n = os.preadv(fd, [buf], 0)
        return buf[0]
    finally:
        os.close(fd)


class Files(Dataset):
    """Map-style: sample i is file i, read with O_DIRECT; `work` seconds of
    Python work per sample."""

    def __init__(self, root, work=0.0, fail_at=None):
        self.root = root
        self.work = work
        self.fail_at = fail_at

    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError("sample %d is bad" % i)
        first = read_direct(sample_path(self.root, i))
        if self.work:
            end = time.perf_counter() + self.work
            x = 0
            while time.perf_counter() < end:
                x += 1
        return torch.tensor([float(i), float(first)])


class Stream(IterableDataset):
    """Iterable: worker w of n reads samples w, w + n, ..."""

    def __init__(self, root):
        self.root = root

    def __iter__(self):
        info = get_worker_info()
        w, n = (info.id, info.num_workers) if info else (0, 1)
        for i in range(w, SAMPLES, n):
            first = read_direct(sample_path(self.root, i))
            yield torch.tensor([float(i), float(first)])


class Truth:
    def __init__(self):
        self.calls = []   # [loader, "batch"|"end"|"error", ns]
        self.batches = {}  # loader -> [[sample ids], ...]
        self.scenarios = []

    def next(self, loader_no, it):
        t0 = time.perf_counter_ns()
        try:
            batch = next(it)
        except StopIteration:
            self.calls.append([loader_no, "end", time.perf_counter_ns() - t0])
            raise
        except Exception:
            self.calls.append([loader_no, "error", time.perf_counter_ns() - t0])
            raise
        self.calls.append([loader_no, "batch", time.perf_counter_ns() - t0])
        self.batches.setdefault(loader_no, []).append(
            sorted(int(v) for v in batch[:, 0].tolist()))
        return batch

    def epoch(self, loader_no, loader, model, opt, accum=1, train=True):
        """One pass as a training loop writes it; returns optimizer steps."""
        it = iter(loader)
        steps = n = 0
        while True:
            try:
                batch = self.next(loader_no, it)
            except StopIteration:
                break
            n += 1
            if not train:
                with torch.no_grad():
                    model(batch).sum()
                continue
            loss = model(batch).pow(2).mean() / accum
            loss.backward()
            if n % accum == 0:
                opt.step()
                opt.zero_grad()
                steps += 1
        return steps


def run(name, root, truth, first_loader):
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    loaders = []
    steps = 0
    t0 = time.perf_counter_ns()
    if name in ("disk", "spawn"):
        kw = {"multiprocessing_context": "spawn"} if name == "spawn" else {}
        loaders = [DataLoader(Files(root), batch_size=4, num_workers=2, **kw)]
        steps = truth.epoch(first_loader, loaders[0], model, opt)
    elif name == "cpu":
        # Made at a line of its own: a DataLoader made again where the
        # disk scenario's was (gone) would be that loader, its L (ANALYSIS.md).
        loaders = [DataLoader(Files(root, work=0.003), batch_size=4, num_workers=2)]
        steps = truth.epoch(first_loader, loaders[0], model, opt)
    elif name == "zero":
        loaders = [DataLoader(Files(root), batch_size=4, num_workers=0)]
        steps = truth.epoch(first_loader, loaders[0], model, opt)
    elif name == "accum":
        loaders = [DataLoader(Files(root), batch_size=2, num_workers=2)]
        steps = truth.epoch(first_loader, loaders[0], model, opt, accum=3)
    elif name == "persistent":
        loaders = [DataLoader(Files(root), batch_size=4, num_workers=2,
                              persistent_workers=True, prefetch_factor=4)]
        for _ in range(2):
            steps += truth.epoch(first_loader, loaders[0], model, opt)
    elif name == "iterable":
        loaders = [DataLoader(Stream(root), batch_size=4, num_workers=2)]
        steps = truth.epoch(first_loader, loaders[0], model, opt)
    elif name == "two":
        train = DataLoader(Files(root), batch_size=6, num_workers=2, shuffle=True)
        val = DataLoader(Files(root), batch_size=8, num_workers=1)
        loaders = [train, val]
        for _ in range(2):
            steps += truth.epoch(first_loader, train, model, opt)
            truth.epoch(first_loader + 1, val, model, opt, train=False)
    elif name == "errors":
        ds = Files(root, fail_at=5)
        loader = DataLoader(ds, batch_size=4, num_workers=2)
        loaders = [loader]
        pickled = pickle.loads(pickle.dumps((ds, loader)))
        assert type(pickled[0]) is Files and type(pickled[1]) is DataLoader
        it = iter(loader)
        truth.next(first_loader, it)  # samples 0-3
        try:
            truth.next(first_loader, it)  # samples 4-7: sample 5 raises
        except ValueError as e:
            print("worker error passed through:", type(e).__name__, str(e).splitlines()[0])
        del it
        small = DataLoader(Files(root), batch_size=SAMPLES, num_workers=0)
        loaders.append(small)
        it = iter(small)
        truth.next(first_loader + 1, it)
        for _ in range(2):
            try:
                truth.next(first_loader + 1, it)
            except StopIteration as e:
                print("StopIteration passed through:", type(e).__name__, e.args)
        pickle.dumps(ds)
        pickle.dumps(small)
    else:
        raise SystemExit("unknown scenario " + name)
    truth.scenarios.append({"name": name, "loaders": len(loaders), "steps": steps,
                            "loop_ns": time.perf_counter_ns() - t0})
    return len(loaders)


def main():
    # The truth is measured without the cyclic collector's pauses (a full
    # collection with torch loaded takes ~100 ms, wherever it falls).
    gc.disable()
    names, root, out = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
    if "LOCAL_RANK" in os.environ:  # under torchrun: a file per rank
        out = "%s.%s" % (out, os.environ["RANK"])
    write_samples(root)
    truth = Truth()
    n = 0
    for name in names:
        n += run(name, root, truth, n)
    with open(out, "w") as f:
        json.dump({"main": os.getpid(), "rank": int(os.environ.get("RANK", -1)), "calls": truth.calls, "scenarios": truth.scenarios,
                   "batches": {str(k): v for k, v in truth.batches.items()}}, f)
    print("done", len(truth.calls))


if __name__ == "__main__":
    main()
