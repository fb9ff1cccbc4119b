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
              the truth each transform's call is timed in that very run
              (inside: its own forward or __call__; outside: from the
              previous one's end to the next one's start);
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

Every clock is CLOCK_MONOTONIC_RAW (the tracer's: scripts/loader_clock.py).
OUT.json gets the loop's own figures, and for hol and the hand-over modes
their brackets (tests/dltest/brackets.py: the iterator's _next_data timed
inside the bootstrap's load_batch; each batch's put on its worker's queue
noted, after its fetch_batch region).
"""

import json
import mmap
import os
import random
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data import dataloader as dl

from loader_clock import InnerClock, raw_ns

now = raw_ns
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
        i = int(i)  # hol_numpy's sampler gives numpy integers
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


def head_of_line(waits, made, later_made):
    """The loop's head-of-line time (docs/ANALYSIS_LOADER.md, "Inside the loader";
    lib/analysis/meters/wait_causes.cc): for each wait, the time before its
    batch was made during which a later batch already was. It grows with
    the wait's end and its batch's making, and shrinks with the wait's start
    and the later batches' making: `made` and `later_made` may be the
    bounds of when each batch was made on the side each bracket needs."""
    holding = 0
    for k, (a, got) in enumerate(waits):
        mine = min(got, made[k])
        later = [m for m in later_made[k + 1:] if m < mine]
        if later:
            holding += max(0, mine - max(a, min(later)))
    return holding


def note_puts(batches):
    """The workers (forked after this) note when they put each batch on
    their result queue, after its fetch_batch region, by its index."""
    import multiprocessing
    import multiprocessing.queues as mq
    puts = multiprocessing.Array("q", batches, lock=False)
    put = mq.Queue.put

    def noted_put(self, obj, *args, **kwargs):
        if (type(obj) is tuple and len(obj) == 2 and type(obj[0]) is int and
                isinstance(obj[1], torch.Tensor) and 0 <= obj[0] < batches):
            puts[obj[0]] = raw_ns()
        return put(self, obj, *args, **kwargs)

    mq.Queue.put = noted_put
    return puts


def hol(root, out, workers=4, numpy_indices=False):
    n = 64
    hol_files(root, n)
    puts = note_puts(n // 4)
    inner = InnerClock(torch.utils.data.dataloader._MultiProcessingDataLoaderIter)
    # A sampler of numpy integers, in order (as SubsetRandomSampler over a
    # numpy array, or np.random.permutation, gives them).
    import numpy
    sampler = numpy.arange(n) if numpy_indices else None
    loader = DataLoader(Tail(root, n), batch_size=4, num_workers=workers, sampler=sampler)
    waits, spans, made, began, worker = [], [], [], [], []
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
        spans.append(inner.spans[-1])
        made.append(int(b[:, 1].max()))  # its last sample made (collate follows at once)
        began.append(int(b[:, 2].min()))
        worker.append(int(b[0, 3]))
        time.sleep(0.002)  # the loop's own work on the batch
    holding = head_of_line(waits, made, made)
    # Its brackets: each batch made (its fetch_batch region's end) after its
    # last sample's stamp and before its put; each wait's region around the
    # iterator's _next_data and inside the loop's clock reads.
    put = [puts[k] for k in range(len(waits))]
    low = head_of_line(spans, made, put)
    high = head_of_line(waits, put, made)
    # What in_order=False would have saved, worked out from the loop's own
    # clocks as docs/ANALYSIS.md defines it ("Inside the loader").
    saving = replay(waits, made, began, worker, True) - replay(waits, made, began, worker, False)
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": started + sum(g - a for a, g in waits),
                   "batches_wait_ns": sum(g - a for a, g in waits), "head_of_line_ns": holding,
                   "head_of_line_inner_ns": low, "head_of_line_outer_ns": high,
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
        del CALLS[:]
        begin = now()
        x = self.pipeline(img)
        end = now()
        # The truth, of this very run of the pipeline (time_transforms()):
        # each transform's own call (inside the bootstrap's region around
        # it), and the time from the previous one's end (or the pipeline's
        # start) to the next one's start (or the pipeline's end), around it.
        times = []
        if self.compose is not None and len(CALLS) == len(self.compose.transforms):
            ends = [begin] + [e for _, e in CALLS]
            starts = [s for s, _ in CALLS] + [end]
            times = ([e - s for s, e in CALLS] +
                     [starts[k + 1] - ends[k] for k in range(len(CALLS))])
        return x, torch.tensor(times, dtype=torch.int64)


# The transforms' calls in this process's current sample: (start, end).
CALLS = []


def time_transforms(compose):
    """Times each transform's own call (forward, for a module; else
    __call__), which the bootstrap's Compose runs inside `transform NAME`."""
    for cls in {type(t) for t in compose.transforms}:
        method = "forward" if issubclass(cls, torch.nn.Module) else "__call__"
        inner = getattr(cls, method)

        def timed(self, *args, _inner=inner, **kwargs):
            t0 = now()
            try:
                return _inner(self, *args, **kwargs)
            finally:
                CALLS.append((t0, now()))
        setattr(cls, method, timed)


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
    if mode == "transforms":
        time_transforms(compose)
    pipeline = compose if mode == "transforms" else own_pipeline
    loader = DataLoader(Images(root, n, pipeline, compose if mode == "transforms" else None),
                        batch_size=4, num_workers=2)
    names = [type(t).__name__ for t in compose.transforms]
    inner, outer = dict.fromkeys(names, 0), dict.fromkeys(names, 0)
    for _, times in loader:
        if mode == "transforms":
            for row in times.tolist():
                assert len(row) == 2 * len(names), row
                for k, name in enumerate(names):
                    inner[name] += row[k]
                    outer[name] += row[len(names) + k]
    with open(out, "w") as f:
        json.dump({"transform_inner_ns": inner if mode == "transforms" else {},
                   "transform_outer_ns": outer if mode == "transforms" else {},
                   "samples": n}, f)


class Work(Dataset):
    """busy, crowded: 3 ms of pure Python a sample; large: 4 MiB tensors.
    Each sample says when it began."""

    def __init__(self, n, large):
        self.n, self.large = n, large

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        began = raw_ns()
        if self.large:
            return torch.full((1 << 20,), float(i)), began  # 4 MiB of float32
        end, x = now() + 3_000_000, 0
        while now() < end:
            x += 1
        return torch.tensor([i, x], dtype=torch.float32), began


def stamped(samples):
    """collate_fn: the batch, and its stamps [made, put, began]: when its
    collate_fn ran (inside the worker's fetch_batch region), when the worker
    put it on its queue (after that region's end: stamp_handovers()), and
    when its first sample began (inside the region)."""
    x, began = torch.utils.data.default_collate(samples)
    return x, [raw_ns(), 0, int(began.min())]


def _stamps(obj):
    """A worker's (index, (batch, stamps)) on its way to the loop, or None."""
    if type(obj) is tuple and len(obj) == 2 and type(obj[1]) is tuple and len(obj[1]) == 2:
        stamps = obj[1][1]
        if type(stamps) is list and len(stamps) == 3:
            return stamps
    return None


def stamp_handovers(batches):
    """The workers (forked after this) stamp each batch as they put it on
    their result queue, and note when its queue's feeder thread had pickled
    it (right before it sends it: the bootstrap's batch_sent follows) in the
    array returned, by the batch's index; the loop notes when it begins to
    unpickle each message (LOADED)."""
    import multiprocessing
    import multiprocessing.queues as mq
    from multiprocessing.reduction import ForkingPickler
    pickled = multiprocessing.Array("q", batches, lock=False)
    put, dumps = mq.Queue.put, ForkingPickler.dumps.__func__

    def stamped_put(self, obj, *args, **kwargs):
        stamps = _stamps(obj)
        if stamps is not None:
            stamps[1] = raw_ns()
        return put(self, obj, *args, **kwargs)

    def stamped_dumps(cls, obj, *args, **kwargs):
        data = dumps(cls, obj, *args, **kwargs)
        if _stamps(obj) is not None and 0 <= obj[0] < batches:
            pickled[obj[0]] = raw_ns()
        return data

    def noted_loads(*args, **kwargs):
        LOADED.append(raw_ns())
        return loads(*args, **kwargs)

    loads = ForkingPickler.loads
    mq.Queue.put = stamped_put
    ForkingPickler.dumps = classmethod(stamped_dumps)
    ForkingPickler.loads = staticmethod(noted_loads)
    return pickled


# When the loop began to unpickle each message of its workers (after the
# bootstrap's batch_received, before the batch is rebuilt).
LOADED = []


def union_within(spans, lo, hi):
    """How much of [lo, hi] the spans cover."""
    covered, at = 0, lo
    for s, e in sorted(spans):
        s, e = max(s, at), min(e, hi)
        if e > s:
            covered += e - s
            at = e
    return covered


def handover(out, mode):
    """The loop's own reckoning of each wait's hand-over (outside: from the
    batch's collate_fn stamp, or the request, to its arrival; inside: from
    its put on the worker's queue, or the iterator's _next_data's start, to
    _next_data's end), and of what held it up, where its clocks leave no
    doubt (lib/analysis/meters/handover.cc): its part in the worker, or its
    rebuilding in the loop, at least half of it, the worker fetching
    through at least half of it meanwhile (worker_busy); on one CPU, the
    workers fetching through nearly all of it (cpus_oversubscribed); 32 MiB
    batches from one worker with 2 CPUs (batch_size). OUT.json: the
    hand-over's brackets, the inner bound of the waits whose cause is so
    proven, by cause (certain_ns), and the outer bound of the others."""
    workers = {"busy": 1, "crowded": 3, "large": 1}[mode]
    samples, size = (48, 4) if mode != "large" else (64, 8)
    pickled = stamp_handovers(samples // size)
    inner = InnerClock(dl._MultiProcessingDataLoaderIter)
    loader = DataLoader(Work(samples, mode == "large"), batch_size=size, num_workers=workers,
                        collate_fn=stamped)
    total = handover_ns = 0
    asked = raw_ns()
    it = iter(loader)
    total += raw_ns() - asked
    batch, waits = None, []
    while True:
        del batch  # freeing the last batch's shared memory is the loop's, not the wait's
        asked = raw_ns()
        try:
            batch, stamps = next(it)
        except StopIteration:
            got = raw_ns()
            total += got - asked
            handover_ns += got - asked
            waits.append((asked, got, inner.spans[-1], None))
            batch = None
            break
        got = raw_ns()
        total += got - asked
        handover_ns += got - max(asked, stamps[0])
        waits.append((asked, got, inner.spans[-1], stamps + [len(waits)]))
    cpus = len(os.sched_getaffinity(0))
    fetching = [(st[2], st[0]) for _, _, _, st in waits if st]  # inside each fetch_batch
    inside, others = 0, 0
    certain = {"worker_busy": 0, "cpus_oversubscribed": 0, "batch_size": 0}
    for asked, got, (i0, i1), st in waits:
        outer = got - asked if st is None else got - max(asked, st[0])
        ins = i1 - i0 if st is None else max(0, i1 - max(i0, st[1]))
        inside += ins
        cause = None
        if st is not None and outer > 0:
            # In the worker at least from the put (or _next_data's start) to
            # the pickled batch's send (or _next_data's end); the rest of the
            # hand-over at most the outer bound less that.
            lo, hi = max(i0, st[1]), min(pickled[st[3]], i1)
            in_worker = max(0, hi - lo)
            busy = union_within(fetching, lo, hi)
            # Rebuilt in the loop at least from its last unpickling to
            # _next_data's end.
            last = max([t for t in LOADED if t <= i1] or [i1])
            rebuild, busy_rebuild = i1 - last, union_within(fetching, last, i1)
            if cpus >= 2 and workers == 1 and (
                    (2 * in_worker >= outer and 2 * busy >= outer) or
                    (2 * rebuild >= outer and 2 * busy_rebuild >= outer)):
                cause = "worker_busy"
            # One CPU: oversubscribed wherever a worker fetches; the part
            # the cause is read from is a third of the hand-over at least.
            gaps = (got - max(asked, st[0])) - union_within(fetching, max(asked, st[0]), got)
            if cpus == 1 and 6 * gaps <= ins:
                cause = "cpus_oversubscribed"
            # 32 MiB batches from one worker, with a CPU for it and the loop:
            # whichever part holds the hand-over, the batch's size.
            if mode == "large" and cpus >= 2:
                cause = "batch_size"
        if cause:
            certain[cause] += ins
        else:
            others += outer
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": total, "handover_ns": handover_ns,
                   "handover_outer_ns": handover_ns, "handover_inner_ns": inside,
                   "certain_ns": certain, "uncertain_outer_ns": others, "cpus": cpus}, f)


def main():
    mode, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    if mode in ("hol", "hol_numpy"):
        hol(root, out, workers, numpy_indices=mode == "hol_numpy")
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
