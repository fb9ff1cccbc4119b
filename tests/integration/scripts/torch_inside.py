"""Loaders whose insides are known, on real torch (CPU), with no
`import dlprof`, each measuring its own truth for
tests/integration/test_loader_inside.py.

    torch_inside.py MODE DATA_DIR OUT.json [WORKERS]

MODE:
  hol         4 workers, batches of 4; every 16th sample reads 48 random
              O_DIRECT pages of one slow file (the page cache dropped where
              O_DIRECT is refused) and then waits 150 ms (a slow storage's
              tail), the others read one 4 KiB file. Each sample says when
              it was made; after the epoch the loop works out, for each wait,
              the time before its batch was made during which a later batch
              already was (head-of-line time), from its own clock;
  hol_unordered  the same samples through a loader of its own that does
              what DataLoader(in_order=False) does in torch 2.6 and later
              (which this torch lacks): 4 worker processes, batches given
              out round-robin, at most 2 outstanding a worker, a new one
              given out for each batch taken, and the loop takes whichever
              batch is ready first; it measures its own wait;
  transforms  2 workers; each sample is a PNG decoded with PIL and run
              through torchvision's Compose of RandomResizedCrop,
              GaussianBlur (heavy), ColorJitter, ToTensor and Normalize; for
              the truth the sample also runs each transform on its own, on
              the same image, and times it;
  custom      the same images through a pipeline of the program's own
              functions (no Compose): nothing the bootstrap can name;
  busy        1 worker whose samples are 3 ms of pure Python each: while it
              makes the next batch, the one it made waits to be sent;
  crowded     the same with 3 workers on the 1 CPU the loop is given
              (taskset): more processes than CPUs;
  large       1 worker of quick samples of 4 MiB tensors (batches of 32 MiB).
For the last three each batch says when it was made (its collate_fn's
stamp), and the loop works out its hand-over: from the batch made (or the
request) to its arrival; the call that ends the epoch is all hand-over.

Every clock is time.monotonic_ns. OUT.json gets the loop's own figures.
"""

import json
import mmap
import os
import random
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

now = time.monotonic_ns
PIECE = 4096
SLOW_EVERY, SLOW_PAGES, SLOW_WAIT = 16, 48, 0.150


class Tail(Dataset):
    """hol: most samples one 4 KiB read; every 16th a slow one."""

    def __init__(self, root, n):
        self.root, self.n = root, n
        self.buf = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        began = now()
        if self.buf is None:
            self.buf = mmap.mmap(-1, PIECE)
        if i % SLOW_EVERY == SLOW_EVERY - 1:
            path = os.path.join(self.root, "slow.bin")
            try:
                fd, direct = os.open(path, os.O_RDONLY | os.O_DIRECT), True
            except OSError:
                fd, direct = os.open(path, os.O_RDONLY), False
            rng = random.Random(i)
            for _ in range(SLOW_PAGES):
                if not direct:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.preadv(fd, [self.buf], rng.randrange(2048) * PIECE)
            os.close(fd)
            time.sleep(SLOW_WAIT)
        else:
            with open(os.path.join(self.root, "f%03d.bin" % i), "rb") as f:
                f.read(PIECE)
        info = torch.utils.data.get_worker_info()
        return torch.tensor([i, now(), began, info.id if info else -1], dtype=torch.int64)


def hol_files(root, n):
    with open(os.path.join(root, "slow.bin"), "wb") as f:
        f.write(os.urandom(2048 * PIECE))
    for i in range(n):
        with open(os.path.join(root, "f%03d.bin" % i), "wb") as f:
            f.write(bytes([i]) * PIECE)


def replay(waits, made, began, worker, in_order, prefetch=2):
    """The pass's wait replayed: each worker makes its batches in order, as
    long as each took; indices given out `prefetch` a worker at the start
    and one for each batch taken; a batch ready when made plus its
    hand-over; the loop takes the next (in order) or the first ready, then
    spends its own time as it did."""
    n = len(waits)
    free = {}
    for w, b in zip(worker, began):
        free.setdefault(w, b)
    ahead = min(n, prefetch * len(free))
    given = [waits[0][0]] * ahead + [None] * (n - ahead)
    ready, taken = [None] * n, [False] * n
    t, wait, done, nxt = waits[0][0], 0, 0, ahead
    for count in range(n):
        while done < nxt:
            start = max(free[worker[done]], given[done])
            free[worker[done]] = start + made[done] - began[done]
            a, g = waits[done]
            ready[done] = free[worker[done]] + (g - max(a, min(made[done], g)))
            done += 1
        pick = count if in_order else min((k for k in range(done) if not taken[k]),
                                          key=lambda k: ready[k])
        taken[pick] = True
        wait += max(0, ready[pick] - t)
        t = max(t, ready[pick])
        if nxt < n:
            given[nxt] = t
            nxt += 1
        if count + 1 < n and waits[count + 1][0] > waits[count][1]:
            t += waits[count + 1][0] - waits[count][1]
    return wait


def hol(root, out, workers=4):
    n = 64
    hol_files(root, n)
    loader = DataLoader(Tail(root, n), batch_size=4, num_workers=workers)
    waits, made, began, worker = [], [], [], []
    asked = now()
    it = iter(loader)
    started = now() - asked
    while True:
        asked = now()
        try:
            b = next(it)
        except StopIteration:
            break
        waits.append((asked, now()))
        made.append(int(b[:, 1].max()))  # its last sample made (collate follows at once)
        began.append(int(b[:, 2].min()))
        worker.append(int(b[0, 3]))
        time.sleep(0.002)  # the loop's own work on the batch
    holding = 0
    for k, (a, got) in enumerate(waits):
        mine = min(got, made[k])
        later = [m for m in made[k + 1:] if m < mine]
        if later:
            holding += max(0, mine - max(a, min(later)))
    # What in_order=False would have saved, worked out from the loop's own
    # clocks as docs/ANALYSIS.md defines it ("Inside the loader").
    saving = replay(waits, made, began, worker, True) - replay(waits, made, began, worker, False)
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": started + sum(g - a for a, g in waits),
                   "batches_wait_ns": sum(g - a for a, g in waits), "head_of_line_ns": holding,
                   "out_of_order_saving_ns": max(0, saving),
                   "batches": len(waits), "slow_file": os.path.join(root, "slow.bin"),
                   "slow_samples": [i for i in range(n) if i % SLOW_EVERY == SLOW_EVERY - 1]}, f)


def unordered_worker(root, n, tasks, results):
    dataset = Tail(root, n)
    while True:
        batch = tasks.get()
        if batch is None:
            return
        results.put((batch, [int(dataset[i][0]) for i in range(batch * 4, batch * 4 + 4)]))


def hol_unordered(root, out, workers=4):
    """A loader that hands batches over as they are made (see above)."""
    import multiprocessing as mp
    n, prefetch = 64, 2
    hol_files(root, n)
    tasks = [mp.Queue() for _ in range(workers)]
    results = mp.Queue()
    procs = [mp.Process(target=unordered_worker, args=(root, n, tasks[w], results))
             for w in range(workers)]
    for p in procs:
        p.start()
    batches = n // 4
    given = 0
    for _ in range(workers * prefetch):  # round-robin, as DataLoader gives them out
        tasks[given % workers].put(given)
        given += 1
    waited = 0
    for _ in range(batches):
        asked = now()
        results.get()
        waited += now() - asked
        time.sleep(0.002)  # the loop's own work on the batch, as in hol
        if given < batches:
            tasks[given % workers].put(given)
            given += 1
    for q in tasks:
        q.put(None)
    for p in procs:
        p.join()
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": waited, "batches": batches}, f)


def images(root, n):
    from PIL import Image
    rng = random.Random(0)
    for i in range(n):
        path = os.path.join(root, "img%02d.png" % i)
        if not os.path.exists(path):
            img = Image.new("RGB", (256, 256))
            img.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256))
                         for _ in range(256 * 256)])
            img.save(path)


class Images(Dataset):
    def __init__(self, root, n, pipeline, compose):
        self.root, self.n, self.pipeline, self.compose = root, n, pipeline, compose

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        from PIL import Image
        img = Image.open(os.path.join(self.root, "img%02d.png" % (i % 16))).convert("RGB")
        torch.manual_seed(i)
        x = self.pipeline(img)
        # The truth: each transform on its own, on the same image with the
        # same random draws (the seed again), timed.
        times = []
        if self.compose is not None:
            torch.manual_seed(i)
            y = img
            for t in self.compose.transforms:
                t0 = now()
                y = t(y)
                times.append(now() - t0)
        return x, torch.tensor(times, dtype=torch.int64)


def own_pipeline(img):
    """The program's own: no Compose, nothing the bootstrap names."""
    import numpy as np
    a = np.asarray(img, dtype=np.float32)
    for _ in range(3):
        a = (a[1:, 1:] + a[:-1, :-1]) / 2
    return torch.from_numpy(np.ascontiguousarray(a[:224, :224]))


def pictures(root, out, mode):
    import torchvision.transforms as T
    n = 32
    images(root, 16)
    compose = T.Compose([T.RandomResizedCrop(224), T.GaussianBlur(31, sigma=8.0),
                         T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
                         T.Normalize([0.5] * 3, [0.5] * 3)])
    pipeline = compose if mode == "transforms" else own_pipeline
    loader = DataLoader(Images(root, n, pipeline, compose if mode == "transforms" else None),
                        batch_size=4, num_workers=2)
    names = [type(t).__name__ for t in compose.transforms]
    per = dict.fromkeys(names, 0)
    for _, times in loader:
        if mode == "transforms":
            for row in times.tolist():
                for name, ns in zip(names, row):
                    per[name] += ns
    with open(out, "w") as f:
        json.dump({"transform_ns": per if mode == "transforms" else {}}, f)


class Work(Dataset):
    """busy, crowded: 3 ms of pure Python a sample; large: 4 MiB tensors."""

    def __init__(self, n, large):
        self.n, self.large = n, large

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.large:
            return torch.full((1 << 20,), float(i))  # 4 MiB of float32
        end, x = now() + 3_000_000, 0
        while now() < end:
            x += 1
        return torch.tensor([i, x], dtype=torch.float32)


def stamped(samples):
    """collate_fn: the batch, and when it was made."""
    return torch.utils.data.default_collate(samples), now()


def handover(out, mode):
    workers = {"busy": 1, "crowded": 3, "large": 1}[mode]
    loader = DataLoader(Work(48 if mode != "large" else 64, mode == "large"),
                        batch_size=4 if mode != "large" else 8, num_workers=workers,
                        collate_fn=stamped)
    total = handover_ns = 0
    asked = now()
    it = iter(loader)
    total += now() - asked
    batch = None
    while True:
        del batch  # freeing the last batch's shared memory is the loop's, not the wait's
        asked = now()
        try:
            batch, made = next(it)
        except StopIteration:
            got = now()
            total += got - asked
            handover_ns += got - asked
            batch = None
            break
        got = now()
        total += got - asked
        handover_ns += got - max(asked, made)
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": total, "handover_ns": handover_ns,
                   "cpus": len(os.sched_getaffinity(0))}, f)


def main():
    mode, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    if mode == "hol":
        hol(root, out, workers)
    elif mode == "hol_unordered":
        hol_unordered(root, out, workers)
    elif mode in ("busy", "crowded", "large"):
        handover(out, mode)
    elif mode in ("transforms", "custom"):
        pictures(root, out, mode)
    else:
        raise SystemExit("unknown mode " + mode)
    print("done")


if __name__ == "__main__":
    main()
