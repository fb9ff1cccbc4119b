"""Training loops of the shapes jobs really have, on real torch (CPU), with no
`import dlprof`, each measuring its own truth for tests/integration/
test_job_shapes.py.

    torch_jobs.py MODE DATA_DIR OUT.json [ARG]

MODE:
  mpi4py      `from mpi4py import MPI` first (MPI_Init as Open MPI's
              singleton, which forks orted; under mpirun, a rank), then a
              DataLoader of 2 workers whose samples take 10 ms each;
  mpich       the same with MPICH's singleton MPI_Init, called through
              ctypes (Debian's mpi4py is Open MPI's);
  startup     3 epochs over a DataLoader of 2 workers whose worker_init_fn
              takes 200 ms; ARG "persistent" keeps the workers,
              "persistent-renew" keeps them but makes a new DataLoader
              each epoch (the old one's workers shut down in the next
              iter(), which then drops its iterator); "persistent-val"
              keeps them and iterates a second, validation loader of
              persistent workers after each pass, both loaders dropped
              200 ms after the loop (their workers' shut-downs outside it);
              "persistent-rebuilt" makes a new DataLoader each epoch and
              drops the old iterator after each pass (the old loader keeps
              it: its workers shut down in `loader = make()`, which the
              loop times as part of its wait); "renew" and "rebuilt" alone,
              the same with workers that are not persistent;
  get_batch   no DataLoader: nanoGPT's shape, a get_batch() of O_DIRECT
              preads (the page cache dropped where O_DIRECT is refused)
              between optimizer steps;
  get_files   get_batch over 300 files of 4 KiB a batch, each opened,
              dropped from the page cache, read and closed: more calls a
              step than the counters hold spans of a thread;
  checkpoint  the get_batch loop saving a 48 MiB checkpoint (torch.save,
              then fsync) every fourth step; ARG "background" saves on a
              thread of its own instead, which the loop does not wait for;
              ARG "sync" calls os.sync() after torch.save, not fsync; ARG
              "same" saves 16 MiB over the same file at every step (each
              torch.save truncating the last one's: tens of ms apart);

Every clock is CLOCK_MONOTONIC_RAW (the tracer's, one for all processes:
scripts/loader_clock.py). OUT.json gets the loop's own figures: its wall
time from its first request for data (iter(), or the first get_batch) to
the end of its last step, the time in iter() and next() or in get_batch
(batch_wait_ns), batches and steps; for startup the part of each wait
before the worker that made its batch began its first sample of the pass
(iter() itself included: it forks the workers), in total and per pass; for
checkpoint the saves' times and bytes. Each timed figure comes with its
brackets too (tests/dltest/brackets.py: NAME_inner_ns, NAME_outer_ns):
  loader loops  wait and loop as scripts/torch_verdict.py's (inside: the
                loader's _get_iterator, or the iterator's _reset for
                persistent workers, and its _next_data); worker_startup
                (inside: iter()'s, and each _next_data's time before the
                batch's worker ended its worker_init_fn; outside: the
                figure above), per pass too (pass_worker_startup_inner_ns);
                each pass's end (pass_end_*_ns: the next() that raised
                StopIteration; inside, its _next_data, where torch shuts
                non-persistent workers down);
  get_batch     wait (inside: the loop's time asleep in get_batch but the
                first step's, loader_clock.Blocked; outside: the get_batch
                calls, and the file's set-up where the first step's window
                may reach it: a save's calls are the save's, not the wait's,
                its open and close included), loop (from the clock reads
                around each opt.step());
  checkpoint    save_inner_ns: torch.serialization._save's time, inside
                each save's region.
"""

import ctypes
import json
import multiprocessing
import os
import sys
import threading
import time

from loader_clock import Blocked, InnerClock, first_period, overlap, raw_ns as now

MODE = sys.argv[1]
if MODE == "mpi4py":
    from mpi4py import MPI  # noqa: E402  (MPI_Init at import, as DLIO does)

import mmap  # noqa: E402

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402
from torch.utils.data import dataloader as dl  # noqa: E402

PIECE = 4096


class Sleepy(Dataset):
    """Samples of `ms` each; each says which worker made it, when that
    worker began its first sample of the current pass (`epoch`, a shared
    counter the loop moves before each iter()) and when its worker_init_fn
    ended (`init_end`: 0 without one)."""

    def __init__(self, n, ms, epoch):
        self.n, self.ms, self.epoch = n, ms, epoch
        self.pass_seen, self.began, self.init_end = -1, 0, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.pass_seen != self.epoch.value:
            self.pass_seen, self.began = self.epoch.value, now()
        time.sleep(self.ms / 1000.0)
        info = torch.utils.data.get_worker_info()
        return torch.tensor([i, info.id if info else -1, self.began, self.init_end],
                            dtype=torch.int64)


def slow_start(_):
    time.sleep(0.2)  # a worker's own set-up: opening shards, building an index
    torch.utils.data.get_worker_info().dataset.init_end = now()


def mpich_init():
    lib = ctypes.CDLL("libmpich.so.12", mode=ctypes.RTLD_GLOBAL)
    world = ctypes.CDLL(None)  # MPI_Init as the program's call: the tracer's first
    if world.MPI_Init(None, None) != 0:
        raise SystemExit("MPI_Init failed")
    rank = ctypes.c_int(-1)
    lib.MPI_Comm_rank(ctypes.c_int(0x44000000), ctypes.byref(rank))  # MPI_COMM_WORLD
    return lib, rank.value


def loader_loop(out, epochs, persistent, init, batches_of=4, samples=32, ms=10, renew=False,
                val=False, drop=False):
    epoch = multiprocessing.Value("i", 0, lock=False)

    def make():
        return DataLoader(Sleepy(samples, ms, epoch), batch_size=batches_of, num_workers=2,
                          worker_init_fn=init, persistent_workers=persistent)
    # (drop: every loader made at the loop's one line, as a script that
    # builds it at the top of each epoch; its first, of none replaced.)
    loader = None if drop else make()
    # A validation loader, made elsewhere, iterated after each training pass.
    val_loader = make() if val else None
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    inner = InnerClock(dl.DataLoader, method="_get_iterator")
    inner.wrap(dl._MultiProcessingDataLoaderIter, "_reset")  # iter() of persistent workers
    inner.wrap(dl._MultiProcessingDataLoaderIter)
    # The old loader's persistent workers, shut down as `it = iter(new)`
    # drops its iterator: inside the loop's iter() clock, in the wait's inner
    # bracket but no start-up's (the last loader's, after the loop, in none).
    # (Not of workers that are not persistent: torch shuts them down inside
    # the next() that finds the pass over, in the wait's inner clock already.)
    shut = (InnerClock(dl._MultiProcessingDataLoaderIter, "_shutdown_workers")
            if renew and persistent else None)
    waited = startup = batches = steps = 0
    per_pass, per_pass_inner = [], []
    ends, ends_inner = [], []  # each pass's request that found it over
    start = None
    ld = None
    # (By index: a tuple of the loaders held by the loop would keep a
    # replaced one alive past its pass.)
    for e, v in ((e, v) for e in range(epochs) for v in range(2 if val else 1)):
        epoch.value = e
        if drop and v == 0:
            # The old DataLoader (holding its persistent iterator) goes in
            # this assignment: its workers shut down here, before iter().
            asked = now()
            start = start if start is not None else asked
            loader = make()
            waited += now() - asked
        elif renew and e > 0:
            loader = make()  # a new DataLoader each epoch (`it` holds the old one's iterator)
        ld = val_loader if v else loader
        asked = now()
        start = start if start is not None else asked
        calls = len(inner.calls)
        it = iter(ld)  # forks (or resumes) the workers: worker start-up
        took = now() - asked
        waited += took
        startup += took
        per_pass.append(took)
        per_pass_inner.append(sum(inner.calls[calls:]))
        while True:
            asked = now()
            try:
                batch = next(it)
            except StopIteration:
                ended = now() - asked
                waited += ended
                ends.append(ended)
                # Inside: the _next_data that raised it (non-persistent
                # workers: torch shuts them down in it).
                ends_inner.append(inner.calls[-1] if inner.spans[-1][0] >= asked else 0)
                break
            got = now()
            waited += got - asked
            began = int(batch[0][2])  # the worker that made it began the pass then
            part = max(0, min(got, began) - asked)
            startup += part
            per_pass[-1] += part
            # Inside: the iterator's _next_data while that worker was still
            # in its worker_init_fn (this pass's: it began the pass after it).
            init_end = int(batch[0][3])
            if init_end and (not persistent or e == 0 or renew):
                per_pass_inner[-1] += overlap(inner.spans[-1], (0, init_end))
            batches += 1
            opt.zero_grad()
            model(batch.float()).sum().backward()
            opt.step()
            steps += 1
        end = now()
        if drop:
            it = ld = None  # the pass's iterator dropped: the loader alone holds it
    if val:
        # After the loop, both loaders dropped: their persistent workers shut
        # down here, in no figure of the loop (the training loader's was
        # a batch wait, the validation loader having begun a pass since).
        time.sleep(0.2)
        del loader, val_loader, ld, it
    return {"batch_wait_ns": waited, "loop_ns": end - start, "batches": batches,
            "steps": steps, "worker_startup_ns": startup, "pass_worker_startup_ns": per_pass,
            "wait_outer_ns": waited, "wait_inner_ns": inner.total + (shut.total if shut else 0),
            "loop_outer_ns": end - start, "loop_inner_ns": inner.last - inner.first,
            "worker_startup_outer_ns": startup, "worker_startup_inner_ns": sum(per_pass_inner),
            "pass_worker_startup_inner_ns": per_pass_inner,
            "pass_end_outer_ns": ends, "pass_end_inner_ns": ends_inner,
            "shutdown_inner_ns": shut.total if shut else 0}


class Reader:
    """get_batch: BATCH samples of READS O_DIRECT preads of 4 KiB each."""

    BATCH, READS = 4, 8

    def __init__(self, root):
        self.path = os.path.join(root, "tokens.bin")
        size = 256 * self.READS * PIECE
        if not os.path.exists(self.path) or os.path.getsize(self.path) != size:
            with open(self.path, "wb") as f:
                f.write(os.urandom(size))
        try:
            self.fd, self.direct = os.open(self.path, os.O_RDONLY | os.O_DIRECT), True
        except OSError:
            self.fd, self.direct = os.open(self.path, os.O_RDONLY), False
        self.buf = mmap.mmap(-1, PIECE)  # page-aligned, as O_DIRECT needs
        self.next = 0

    def get_batch(self):
        rows = []
        for _ in range(self.BATCH):
            block = self.next % 256
            self.next += 37
            row = 0
            for k in range(self.READS):
                if not self.direct:
                    os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.preadv(self.fd, [self.buf], (block * self.READS + k) * PIECE)
                row += self.buf[k]
            rows.append([row, block, k])
        return torch.tensor(rows, dtype=torch.float32)


class FileReader:
    """get_batch: a sample a file, opened, dropped from the page cache,
    read and closed (an image folder read without a DataLoader)."""

    SAMPLES = 300

    def __init__(self, root):
        self.dir = os.path.join(root, "files")
        os.makedirs(self.dir, exist_ok=True)
        self.paths = [os.path.join(self.dir, "%03d.bin" % i) for i in range(self.SAMPLES)]
        for path in self.paths:
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.write(os.urandom(PIECE))
        self.direct = False

    def get_batch(self):
        rows = []
        for i, path in enumerate(self.paths):
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            b = os.pread(fd, PIECE, 0)
            os.close(fd)
            rows.append([b[0], b[1], i])
        return torch.tensor(rows, dtype=torch.float32)


class SaveClock:
    """Times torch.serialization._save, which torch.save calls inside the
    bootstrap's save_checkpoint region: each save's inner bracket."""

    def __init__(self):
        import torch.serialization as ts
        self.calls = []
        inner = ts._save

        def timed(*args, **kwargs):
            t0 = now()
            try:
                return inner(*args, **kwargs)
            finally:
                self.calls.append(now() - t0)
        ts._save = timed


def save(model, path, blob, sync_all=False):
    """A checkpoint as torch.save writes one, then fsync (or os.sync():
    `sync_all`): (start, end, bytes)."""
    start = now()
    torch.save({"model": model.state_dict(), "optimizer_blob": blob}, path)
    if sync_all:
        os.sync()
    else:
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    return start, now(), os.path.getsize(path)


def batch_loop(root, steps_wanted, checkpoint=None, reader_class=None):
    setup = now()
    reader = (reader_class or Reader)(root)  # the file written, then opened: calls on a data file
    setup = (setup, now())
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    blob = torch.zeros((16 if checkpoint == "same" else 48) << 20,
                       dtype=torch.uint8) if checkpoint else None
    every = 1 if checkpoint == "same" else 4
    saving = SaveClock() if checkpoint else None
    saves, threads, calls, blocked, stepped = [], [], [], [], []
    start = now()
    for step in range(steps_wanted):
        asked = now()
        with Blocked() as b:
            x = reader.get_batch()
        calls.append((asked, now()))
        blocked.append(b.ns)
        busy = now() + 20_000_000  # the step's compute: 20 ms
        while now() < busy:
            pass
        opt.zero_grad()
        model(x).sum().backward()
        before = now()
        opt.step()  # the bootstrap's optimizer_step region
        stepped.append((before, now()))
        if checkpoint and step % every == every - 1:
            path = os.path.join(root, "ckpt%d.pt" % (0 if checkpoint == "same" else step))
            if checkpoint == "background":
                t = threading.Thread(target=lambda p=path: saves.append(save(model, p, blob)))
                t.start()
                threads.append(t)
            else:
                saves.append(save(model, path, blob, sync_all=checkpoint == "sync"))
    end = now()
    for t in threads:
        t.join()
    # The loop's window (docs/ANALYSIS.md, "Loops without a DataLoader"):
    # from step 1's end less the first period (first_period) to the last
    # step's end (or the end of a save that follows it), each step's end
    # inside the clock reads around its opt.step().
    (b1, a1), (bl, _) = stepped[0], stepped[-1]
    period_inner, period_outer = first_period(stepped)
    truth = {"batch_wait_ns": sum(g - a for a, g in calls), "loop_ns": end - start,
             "batches": steps_wanted, "steps": steps_wanted, "saves": [list(s) for s in saves],
             "direct": reader.direct, "calls": calls,
             "loop_outer_ns": end - b1 + period_outer, "loop_inner_ns": bl - a1 + period_inner,
             # Each step's batch wait is its reads between two steps (the
             # first step's window is an estimate: not counted):
             # at least their time asleep; at most the get_batch() calls
             # (a save's open and close, on the loop's thread, are the
             # save's: they were counted as the wait too).
             "wait_inner_ns": (sum(blocked[1:]) if None not in blocked else 0),
             # (The first step's window may reach back to the file's open.)
             "wait_outer_ns": sum(g - a for a, g in calls) +
             overlap(setup, (b1 - period_outer, calls[0][0]))}
    if saving is not None:
        truth["save_inner_ns"] = sum(saving.calls)
    return truth


def main():
    root, out = sys.argv[2], sys.argv[3]
    arg = sys.argv[4] if len(sys.argv) > 4 else ""
    truth = {}
    if MODE == "mpi4py":
        truth = loader_loop(out, 1, False, None)
        truth["rank"] = MPI.COMM_WORLD.Get_rank()
    elif MODE == "mpich":
        lib, rank = mpich_init()
        truth = loader_loop(out, 1, False, None)
        truth["rank"] = rank
        lib.MPI_Finalize()
    elif MODE == "startup":
        truth = loader_loop(out, 3, arg.startswith("persistent"), slow_start, samples=16, ms=5,
                            renew=arg.endswith(("renew", "rebuilt")), val=arg.endswith("val"),
                            drop=arg.endswith("rebuilt"))
    elif MODE == "get_batch":
        truth = batch_loop(root, 24)
    elif MODE == "get_files":
        truth = batch_loop(root, 12, reader_class=FileReader)
    elif MODE == "checkpoint":
        truth = batch_loop(root, 12, checkpoint=arg or "blocking")
    else:
        raise SystemExit("unknown mode " + MODE)
    if out.endswith(".json") and "rank" in truth and truth["rank"] > 0:
        out = out[:-5] + ".%d.json" % truth["rank"]
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
