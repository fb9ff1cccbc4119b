"""Training loops that read through memory maps (issue 49), on real torch
(CPU) with no `import dlprof`, measuring their own truth for
tests/integration/test_map_reads.py.

    torch_memmap.py MODE DATA_DIR OUT.json

Every data file is written first and its pages evicted from the page cache
(fsync, posix_fadvise(POSIX_FADV_DONTNEED)). MODE:

  loader     the issue's loader: a DataLoader of 2 workers whose samples each
             read 48 random pages of a 64 MiB np.memmap (MADV_RANDOM), in
             one numpy gather; batches of 4, 24 batches, a small model's
             optimizer step each, then the next() that ends the epoch. Each
             sample notes when it began and ended (its map's open and its
             gather); the loop brackets iter() and each next() (see below).
  get_batch  nanoGPT's loop: no DataLoader; get_batch() opens the token file
             with np.memmap each call, as nanoGPT does (here MADV_RANDOM: a
             data set larger than the page cache, read at random), and takes
             16 random windows of 64 tokens (uint16), then the model steps;
             30 steps. The loop times each get_batch() (`calls`) and, within
             it, the reads of the windows (`reads_ns`) and their major
             faults (`major_faults`).
  get_batch_cached
             nanoGPT's get_batch as it is (no madvise) over a 16 MiB token
             file in the page cache: 32 windows of 256 tokens a batch, 30
             steps; the loop times each get_batch() (`calls`).
  lmdb       an LMDB database of 4,000 records of 4 KiB, read at random (no
             read-ahead: MDB_NORDAHEAD, as for a data set read at random) in
             the main process (600 gets) inside an annotation-free loop of
             optimizer steps; the process's major faults and /proc/self/io
             read_bytes are taken around the reads.
  startup    a checkpoint (np.save, 32 MiB) loaded with np.load(mmap_mode="r")
             and summed at start-up, then a DataLoader loop of 10 batches
             (no workers) over a small in-memory data set; the script takes
             /proc/self/io read_bytes around the load.

OUT.json holds what the loop measured, on CLOCK_MONOTONIC_RAW (the tracer's
clock: scripts/loader_clock.py): `steps`, `file`, and per mode
  loader     the brackets of the bootstrap's loader_iter and load_batch
             regions (tests/dltest/brackets.py): wait_outer_ns (around iter()
             and every next()), wait_inner_ns (the loader's _get_iterator and
             the iterator's _next_data, which torch calls inside them), the
             loop's window loop_outer_ns and loop_inner_ns (from iter() to the
             end of the last next()); gather_ns (the samples' own times, all
             workers) and gathers_in_waits_ns (their time within the waits),
             `samples`;
  get_batch  wait_ns (the get_batch() calls summed, and the file's set-up
             where the first step's window may reach it), calls, reads_ns,
             major_faults; get_batch_cached: wait_ns and calls, as those;
  lmdb       wait_ns, major_faults, read_bytes (the reads'),
             read_bytes_since_open (from before the database's open);
  startup    read_bytes (the load's).
"""

import json
import mmap
import os
import resource
import sys

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data import dataloader as dl

from loader_clock import InnerClock, first_period, overlap, raw_ns as now

PAGE = 4096


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def write_random(path, mib):
    rng = np.random.default_rng(7)
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(rng.integers(0, 255, 1 << 20, dtype=np.uint8).tobytes())
    evict(path)


def read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return -1


def major_faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_majflt


def model_step(model, opt, x):
    opt.zero_grad()
    loss = model(x).square().mean()
    loss.backward()
    opt.step()


def small_model(width):
    torch.manual_seed(0)
    model = torch.nn.Linear(width, 16)
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


class Pages(Dataset):
    """Each sample: 48 random pages of the map, gathered by numpy in one call
    (the interpreter lock held through the faults)."""

    def __init__(self, path, n):
        self.path, self.n, self.m = path, n, None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        t0 = now()  # the map's open (each worker's first sample) and its faults
        if self.m is None:
            self.m = np.memmap(self.path, dtype=np.uint8, mode="r")
            self.m._mmap.madvise(mmap.MADV_RANDOM)
        rng = np.random.default_rng(i)
        offsets = rng.integers(0, len(self.m) // PAGE, 48) * PAGE + 5
        x = self.m[offsets]
        t1 = now()
        return torch.from_numpy(x.astype(np.float32)), torch.tensor([t0, t1])


def loader(data, truth):
    path = os.path.join(data, "pages.bin")
    write_random(path, int(os.environ.get("TORCH_MEMMAP_MIB", "64")))  # bench/map_reads.py: 256
    model, opt = small_model(48)
    batches = int(os.environ.get("TORCH_MEMMAP_BATCHES", "24"))
    loader = DataLoader(Pages(path, batches * 4), batch_size=4, num_workers=2)
    inner = InnerClock(dl.DataLoader, method="_get_iterator")
    inner.wrap(dl._MultiProcessingDataLoaderIter)
    start = now()
    it = iter(loader)  # the workers start
    waits, gathers = [(start, now())], []
    while True:
        asked = now()
        try:
            x, times = next(it)
        except StopIteration:  # the epoch's last request: the loop ends with it
            end = now()
            waits.append((asked, end))
            break
        waits.append((asked, now()))
        gathers += [tuple(t) for t in times.tolist()]
        model_step(model, opt, x)
    # The gathers' time within the waits (any worker's): the faults the
    # waits hold lie in it (each may begin a little before its gather:
    # tests/integration/test_map_reads.py).
    in_waits = sum(overlap(g, w) for g in gathers for w in waits)
    truth.update(wait_outer_ns=sum(b - a for a, b in waits), wait_inner_ns=inner.total,
                 loop_outer_ns=end - start, loop_inner_ns=inner.last - inner.first,
                 gather_ns=sum(b - a for a, b in gathers), gathers_in_waits_ns=in_waits,
                 samples=len(gathers), steps=batches, file=path)


def get_batch_loop(data, truth):
    path = os.path.join(data, "train.bin")
    setup = now()
    write_random(path, 64)  # its opens and closes are calls on a data file
    setup = (setup, now())
    model, opt = small_model(64)
    rng = np.random.default_rng(3)
    calls, reads, faults, steps = [], 0, 0, 30

    def get_batch():
        nonlocal reads, faults
        # As nanoGPT: a new memmap each call, to avoid its memory leak.
        tokens = np.memmap(path, dtype=np.uint16, mode="r")
        tokens._mmap.madvise(mmap.MADV_RANDOM)
        ix = rng.integers(0, len(tokens) - 64, 16)
        f0, t0 = major_faults(), now()
        rows = [tokens[i:i + 64].astype(np.float32) for i in ix]
        reads += now() - t0
        faults += major_faults() - f0
        return torch.stack([torch.from_numpy(r) for r in rows])

    stepped = []
    for _ in range(steps):
        t0 = now()
        x = get_batch()
        calls.append((t0, now()))
        before = now()
        model_step(model, opt, x)
        stepped.append((before, now()))
    # The batch wait's outer bound: the calls, and the file's set-up where
    # the first step's window (the first period back from the first step's
    # end: docs/ANALYSIS.md) may reach it.
    first = stepped[0][0] - first_period(stepped)[1]
    truth.update(wait_ns=sum(b - a for a, b in calls) + overlap(setup, (first, calls[0][0])),
                 calls=calls, reads_ns=reads, major_faults=faults, steps=steps, file=path)


def get_batch_cached_loop(data, truth):
    """nanoGPT's get_batch as it is, over a token file in the page cache: a
    new np.memmap each call, 32 windows of 256 tokens (and the targets')
    sliced, converted and stacked one at a time, the map dropped on return."""
    path = os.path.join(data, "train.bin")
    setup = now()
    np.random.default_rng(5).integers(0, 50000, 8 << 20, dtype=np.uint16).tofile(path)
    np.fromfile(path, dtype=np.uint16)  # its pages in the page cache
    setup = (setup, now())
    block, batch, steps = 256, 32, 30
    model, opt = small_model(block)
    calls, stepped = [], []

    def get_batch():
        data = np.memmap(path, dtype=np.uint16, mode="r")
        ix = torch.randint(len(data) - block, (batch,))
        x = torch.stack([torch.from_numpy((data[i:i + block]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block]).astype(np.int64)) for i in ix])
        return x, y

    for _ in range(steps):
        t0 = now()
        x, y = get_batch()
        calls.append((t0, now()))
        before = now()
        model_step(model, opt, x.float())
        stepped.append((before, now()))
    first = stepped[0][0] - first_period(stepped)[1]
    truth.update(wait_ns=sum(b - a for a, b in calls) + overlap(setup, (first, calls[0][0])),
                 calls=calls, steps=steps, file=path)


def lmdb_loop(data, truth):
    import lmdb
    path = os.path.join(data, "db")
    env = lmdb.open(path, map_size=64 << 20)
    rng = np.random.default_rng(5)
    with env.begin(write=True) as txn:
        for i in range(4000):
            txn.put(b"%08d" % i, rng.integers(0, 255, 4096, dtype=np.uint8).tobytes())
    env.sync(True)
    env.close()
    evict(os.path.join(path, "data.mdb"))
    opened = read_bytes()
    env = lmdb.open(path, readonly=True, lock=False, readahead=False)  # MADV_RANDOM
    model, opt = small_model(64)
    keys = rng.integers(0, 4000, 600)
    faults0, bytes0 = major_faults(), read_bytes()
    wait = 0
    with env.begin() as txn:
        for step in range(30):
            t0 = now()
            rows = [np.frombuffer(txn.get(b"%08d" % k), dtype=np.uint8)[:64]
                    for k in keys[step * 20:(step + 1) * 20]]
            wait += now() - t0
            model_step(model, opt, torch.from_numpy(np.stack(rows).astype(np.float32)))
    end = read_bytes()
    truth.update(wait_ns=wait, steps=30, major_faults=major_faults() - faults0,
                 read_bytes=end - bytes0, read_bytes_since_open=end - opened,
                 file=os.path.join(path, "data.mdb"))


class InMemory(Dataset):
    def __len__(self):
        return 40

    def __getitem__(self, i):
        return torch.full((8,), float(i))


def startup(data, truth):
    path = os.path.join(data, "ckpt.npy")
    np.save(path, np.random.default_rng(1).standard_normal(4 << 20))  # 32 MiB
    evict(path)
    before = read_bytes()
    weights = np.load(path, mmap_mode="r")
    total = float(weights.sum())
    truth.update(read_bytes=read_bytes() - before, file=path, checksum=total)
    model, opt = small_model(8)
    for x in DataLoader(InMemory(), batch_size=4):
        model_step(model, opt, x)
    truth.update(steps=10)


def main():
    mode, data, out = sys.argv[1:4]
    truth = {"mode": mode}
    {"loader": loader, "get_batch": get_batch_loop, "get_batch_cached": get_batch_cached_loop,
     "lmdb": lmdb_loop, "startup": startup}[mode](data, truth)
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
