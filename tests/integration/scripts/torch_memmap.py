"""Training loops that read through memory maps (issue 49), on real torch
(CPU) with no `import dlprof`, measuring their own truth for
tests/integration/test_map_reads.py.

    torch_memmap.py MODE DATA_DIR OUT.json

Every data file is written first and its pages evicted from the page cache
(fsync, posix_fadvise(POSIX_FADV_DONTNEED)). MODE:

  loader     the issue's loader: a DataLoader of 2 workers whose samples each
             read 48 random pages of a 64 MiB np.memmap (MADV_RANDOM), in
             one numpy gather; batches of 4, 24 batches, a small model's
             optimizer step each. Each sample notes when its gather began and
             ended; the loop times iter() and each next().
  get_batch  nanoGPT's loop: no DataLoader; get_batch() opens the token file
             with np.memmap each call, as nanoGPT does (here MADV_RANDOM: a
             data set larger than the page cache, read at random), and takes
             16 random windows of 64 tokens (uint16), then the model steps;
             30 steps. The loop times each get_batch() and, within it, the
             reads of the windows (`reads_ns`).
  lmdb       an LMDB database of 4,000 records of 4 KiB, read at random (no
             read-ahead: MDB_NORDAHEAD, as for a data set read at random) in
             the main process (600 gets) inside an annotation-free loop of
             optimizer steps; the process's major faults and /proc/self/io
             read_bytes are taken around the reads.
  startup    a checkpoint (np.save, 32 MiB) loaded with np.load(mmap_mode="r")
             and summed at start-up, then a DataLoader loop of 10 batches
             (no workers) over a small in-memory data set; the script takes
             /proc/self/io read_bytes around the load.

OUT.json holds what the loop measured: `wait_ns` (the next() or get_batch()
calls summed), `steps`, and per mode `gather_ns` (the workers' gathers),
`major_faults`, `read_bytes`, `file`.
"""

import json
import mmap
import os
import resource
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

PAGE = 4096
now = time.monotonic_ns


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
        if self.m is None:
            self.m = np.memmap(self.path, dtype=np.uint8, mode="r")
            self.m._mmap.madvise(mmap.MADV_RANDOM)
        rng = np.random.default_rng(i)
        offsets = rng.integers(0, len(self.m) // PAGE, 48) * PAGE + 5
        t0 = now()
        x = self.m[offsets]
        t1 = now()
        return torch.from_numpy(x.astype(np.float32)), torch.tensor([t0, t1])


def loader(data, truth):
    path = os.path.join(data, "pages.bin")
    write_random(path, int(os.environ.get("TORCH_MEMMAP_MIB", "64")))  # bench/map_reads.py: 256
    model, opt = small_model(48)
    batches = int(os.environ.get("TORCH_MEMMAP_BATCHES", "24"))
    t0 = now()
    it = iter(DataLoader(Pages(path, batches * 4), batch_size=4, num_workers=2))
    wait, gather = now() - t0, 0  # iter(): the workers start
    for _ in range(batches):
        t0 = now()
        x, times = next(it)
        wait += now() - t0
        gather += int((times[:, 1] - times[:, 0]).sum())
        model_step(model, opt, x)
    truth.update(wait_ns=wait, gather_ns=gather, steps=batches, file=path)


def get_batch_loop(data, truth):
    path = os.path.join(data, "train.bin")
    write_random(path, 64)
    model, opt = small_model(64)
    rng = np.random.default_rng(3)
    wait, reads, steps = 0, 0, 30

    def get_batch():
        nonlocal reads
        # As nanoGPT: a new memmap each call, to avoid its memory leak.
        tokens = np.memmap(path, dtype=np.uint16, mode="r")
        tokens._mmap.madvise(mmap.MADV_RANDOM)
        ix = rng.integers(0, len(tokens) - 64, 16)
        t0 = now()
        rows = [tokens[i:i + 64].astype(np.float32) for i in ix]
        reads += now() - t0
        return torch.stack([torch.from_numpy(r) for r in rows])

    for _ in range(steps):
        t0 = now()
        x = get_batch()
        wait += now() - t0
        model_step(model, opt, x)
    truth.update(wait_ns=wait, reads_ns=reads, steps=steps, file=path)


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
    truth.update(wait_ns=wait, steps=30, major_faults=major_faults() - faults0,
                 read_bytes=read_bytes() - bytes0, file=os.path.join(path, "data.mdb"))


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
    {"loader": loader, "get_batch": get_batch_loop, "lmdb": lmdb_loop,
     "startup": startup}[mode](data, truth)
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
