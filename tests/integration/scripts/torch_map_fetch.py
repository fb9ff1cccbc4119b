"""DataLoader workers that read their samples through memory maps, on real
torch (CPU) with no `import dlprof`, measuring their own truth for
tests/integration/test_map_fetch.py: what the workers' fetches spent on the
map and what on the rest, by their own clocks.

    torch_map_fetch.py MODE DATA_DIR OUT.json

MODE:

  blur    an LMDB-like loader: 128 records of 192 KiB in one file (its pages
          evicted), mapped by each of 2 workers with np.memmap (MADV_RANDOM,
          as LMDB's readahead=False), each sample copied out of the map
          (np.array(...): the pages' faults), then torchvision's
          Compose([GaussianBlur(9)]) on a 3x128x128 image of it; batches of 8,
          shuffled. Each sample times (time.perf_counter_ns, a duration's
          clock) its whole body, its copy (wall, and the thread's time on a
          CPU and waiting for one: /proc/thread-self/schedstat) and its
          transform.
  shards  20 shard files of 2 MiB; shards 4, 11 and 17 evicted, the others
          warmed by one 2 MiB pread in the main process; sample i maps shard
          i (MADV_RANDOM) in one of 2 workers and touches each of its pages;
          batches of 2, in order. Each sample times its touch.

OUT.json: `samples`, and per mode
  blur    sample_ns, touch_ns, touch_cpu_ns, touch_runnable_ns,
          transform_ns (summed over the samples of all workers), per_worker
          (the same, per worker pid);
  shards  touch_ns {path: the touch of its shard's sample}, evicted (paths),
          slow_samples (their indices).
"""

import json
import mmap
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

PAGE = 4096
RECORD = 192 * 1024
SHARD = 2 << 20
EVICTED = (4, 11, 17)


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def write_random(path, size):
    rng = np.random.default_rng(7)
    with open(path, "wb") as f:
        f.write(rng.integers(0, 255, size, dtype=np.uint8).tobytes())
        f.flush()
        os.fsync(f.fileno())


def schedstat():
    """The thread's time on a CPU and its time waiting for one (run_delay),
    in ns: what of a wall-clock bracket was neither."""
    with open("/proc/thread-self/schedstat") as f:
        cpu, runnable, _ = f.read().split()
    return int(cpu), int(runnable)


class Records(Dataset):
    """Sample i: record i copied out of the map, then blurred."""

    def __init__(self, path, n):
        import torchvision.transforms as T
        self.path, self.n, self.m = path, n, None
        self.tf = T.Compose([T.GaussianBlur(9, sigma=3.0)])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        s0, t0 = schedstat(), time.perf_counter_ns()
        if self.m is None:  # each worker's own map (a fork's would be shared)
            self.m = np.memmap(self.path, dtype=np.uint8, mode="r")
            self.m._mmap.madvise(mmap.MADV_RANDOM)
        c0, t1 = schedstat(), time.perf_counter_ns()
        a = np.array(self.m[i * RECORD:(i + 1) * RECORD])  # the faults
        t2, c1 = time.perf_counter_ns(), schedstat()
        img = torch.from_numpy(a[:3 * 128 * 128].reshape(3, 128, 128))
        t3 = time.perf_counter_ns()
        x = self.tf(img)
        t4 = time.perf_counter_ns()
        x = x.float()
        t5 = time.perf_counter_ns()
        s5 = schedstat()
        # (The worker's time waiting for a CPU so far, at the sample's ends:
        # what of it fell between samples, the region's edges among them.)
        return x, torch.tensor([os.getpid(), t5 - t0, t2 - t1, c1[0] - c0[0], c1[1] - c0[1],
                                t4 - t3, s0[1], s5[1]])


def blur(data, truth):
    path = os.path.join(data, "records.bin")
    n = 128
    write_random(path, n * RECORD)
    evict(path)
    loader = DataLoader(Records(path, n), batch_size=8, num_workers=2, shuffle=True)
    keys = ("sample_ns", "touch_ns", "touch_cpu_ns", "touch_runnable_ns", "transform_ns")
    per_worker, samples, runnable = {}, 0, {}
    for x, rows in loader:
        for row in rows.tolist():
            w = per_worker.setdefault(str(row[0]), dict.fromkeys(keys, 0))
            for k, v in zip(keys, row[1:6]):
                w[k] += v
            r = runnable.setdefault(row[0], [row[6], row[7], 0])  # first, last, in samples
            r[0], r[1], r[2] = min(r[0], row[6]), max(r[1], row[7]), r[2] + row[7] - row[6]
            samples += 1
        time.sleep(0.002)
    truth.update({k: sum(w[k] for w in per_worker.values()) for k in keys})
    # Waiting for a CPU between a worker's first sample and its last, outside
    # the samples: a bound on the preemption inside the fetch regions' edges.
    truth["between_runnable_ns"] = sum(last - first - inside
                                       for first, last, inside in runnable.values())
    truth.update(per_worker=per_worker, samples=samples, file=path)


class Shards(Dataset):
    """Sample i: every page of shard i, through its map."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        fd = os.open(self.paths[i], os.O_RDONLY)
        m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
        os.close(fd)
        m.madvise(mmap.MADV_RANDOM)
        a = np.frombuffer(m, dtype=np.uint8)
        t0 = time.perf_counter_ns()
        x = a[::PAGE].astype(np.float32)
        t1 = time.perf_counter_ns()
        del a
        m.close()
        return torch.from_numpy(x[:256]), torch.tensor([i, t1 - t0])


def shards(data, truth):
    paths = [os.path.join(data, "shards", "s%03d.bin" % i) for i in range(20)]
    os.makedirs(os.path.dirname(paths[0]))
    for i, path in enumerate(paths):
        write_random(path, SHARD)
        if i in EVICTED:
            evict(path)
        else:
            fd = os.open(path, os.O_RDONLY)
            os.pread(fd, SHARD, 0)  # warm: a read of its own
            os.close(fd)
    touch = {}
    for x, rows in DataLoader(Shards(paths), batch_size=2, num_workers=2):
        for i, ns in rows.tolist():
            touch[paths[i]] = ns
        time.sleep(0.005)
    truth.update(touch_ns=touch, evicted=[paths[i] for i in EVICTED],
                 slow_samples=list(EVICTED), samples=len(touch))


def main():
    mode, data, out = sys.argv[1:4]
    truth = {"mode": mode}
    {"blur": blur, "shards": shards}[mode](data, truth)
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
