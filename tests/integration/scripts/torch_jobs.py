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
              takes 200 ms; ARG "persistent" keeps the workers;
  get_batch   no DataLoader: nanoGPT's shape, a get_batch() of O_DIRECT
              preads (the page cache dropped where O_DIRECT is refused)
              between optimizer steps;
  checkpoint  the get_batch loop saving a 48 MiB checkpoint (torch.save,
              then fsync) every fourth step; ARG "background" saves on a
              thread of its own instead, which the loop does not wait for.

Every clock is time.monotonic_ns (one clock for all processes). OUT.json
gets the loop's own figures: its wall time from its first request for data
(iter(), or the first get_batch) to the end of its last step, the time in
iter() and next() or in get_batch (batch_wait_ns), batches and steps; for
startup the part of each wait before the worker that made its batch began
its first sample of the pass (iter() itself included: it forks the
workers), in total and per pass; for checkpoint the saves' times and bytes.
"""

import ctypes
import json
import multiprocessing
import os
import sys
import threading
import time

now = time.monotonic_ns
MODE = sys.argv[1]
if MODE == "mpi4py":
    from mpi4py import MPI  # noqa: E402  (MPI_Init at import, as DLIO does)

import mmap  # noqa: E402

import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

PIECE = 4096


class Sleepy(Dataset):
    """Samples of `ms` each; each says which worker made it and when that
    worker began its first sample of the current pass (`epoch`, a shared
    counter the loop moves before each iter())."""

    def __init__(self, n, ms, epoch):
        self.n, self.ms, self.epoch = n, ms, epoch
        self.pass_seen, self.began = -1, 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.pass_seen != self.epoch.value:
            self.pass_seen, self.began = self.epoch.value, now()
        time.sleep(self.ms / 1000.0)
        info = torch.utils.data.get_worker_info()
        return torch.tensor([i, info.id if info else -1, self.began], dtype=torch.int64)


def slow_start(_):
    time.sleep(0.2)  # a worker's own set-up: opening shards, building an index


def mpich_init():
    lib = ctypes.CDLL("libmpich.so.12", mode=ctypes.RTLD_GLOBAL)
    world = ctypes.CDLL(None)  # MPI_Init as the program's call: the tracer's first
    if world.MPI_Init(None, None) != 0:
        raise SystemExit("MPI_Init failed")
    rank = ctypes.c_int(-1)
    lib.MPI_Comm_rank(ctypes.c_int(0x44000000), ctypes.byref(rank))  # MPI_COMM_WORLD
    return lib, rank.value


def loader_loop(out, epochs, persistent, init, batches_of=4, samples=32, ms=10):
    epoch = multiprocessing.Value("i", 0, lock=False)
    loader = DataLoader(Sleepy(samples, ms, epoch), batch_size=batches_of, num_workers=2,
                        worker_init_fn=init, persistent_workers=persistent)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    waited = startup = batches = steps = 0
    per_pass = []
    start = None
    for e in range(epochs):
        epoch.value = e
        asked = now()
        start = start if start is not None else asked
        it = iter(loader)  # forks (or resumes) the workers: worker start-up
        took = now() - asked
        waited += took
        startup += took
        per_pass.append(took)
        while True:
            asked = now()
            try:
                batch = next(it)
            except StopIteration:
                waited += now() - asked
                break
            got = now()
            waited += got - asked
            began = int(batch[0][2])  # the worker that made it began the pass then
            part = max(0, min(got, began) - asked)
            startup += part
            per_pass[-1] += part
            batches += 1
            opt.zero_grad()
            model(batch.float()).sum().backward()
            opt.step()
            steps += 1
        end = now()
    return {"batch_wait_ns": waited, "loop_ns": end - start, "batches": batches,
            "steps": steps, "worker_startup_ns": startup, "pass_worker_startup_ns": per_pass}


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


def save(model, path, blob):
    """A checkpoint as torch.save writes one, then fsync: (start, end, bytes)."""
    start = now()
    torch.save({"model": model.state_dict(), "optimizer_blob": blob}, path)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    return start, now(), os.path.getsize(path)


def batch_loop(root, steps_wanted, checkpoint=None):
    reader = Reader(root)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    blob = torch.zeros(48 << 20, dtype=torch.uint8) if checkpoint else None
    saves, threads = [], []
    waited, start = 0, now()
    for step in range(steps_wanted):
        asked = now()
        x = reader.get_batch()
        waited += now() - asked
        busy = now() + 20_000_000  # the step's compute: 20 ms
        while now() < busy:
            pass
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        if checkpoint and step % 4 == 3:
            path = os.path.join(root, "ckpt%d.pt" % step)
            if checkpoint == "background":
                t = threading.Thread(target=lambda p=path: saves.append(save(model, p, blob)))
                t.start()
                threads.append(t)
            else:
                saves.append(save(model, path, blob))
    end = now()
    for t in threads:
        t.join()
    return {"batch_wait_ns": waited, "loop_ns": end - start, "batches": steps_wanted,
            "steps": steps_wanted, "saves": [list(s) for s in saves],
            "direct": reader.direct}


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
        truth = loader_loop(out, 3, arg == "persistent", slow_start, samples=16, ms=5)
    elif MODE == "get_batch":
        truth = batch_loop(root, 24)
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
