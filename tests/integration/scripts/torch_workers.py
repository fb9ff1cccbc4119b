"""A loader-bound training loop on real torch (CPU) with no `import dlprof`,
for the loader workers' what-if (tests/integration/test_workers.py,
bench/worker_estimate.py): it measures its own batch wait.

    torch_workers.py MODE DATA_DIR OUT.json WORKERS [BATCHES [SAMPLE_MS [COMPUTE_MS]]]

MODE is what the workers spend a sample on:
  cpu      preprocessing: a fixed amount of numpy work (calibrated once, in
           the main process, to take SAMPLE_MS alone), after a 64 KiB read;
           more workers than CPUs share them, as a real transform would;
  latency  reading from a "storage" with SAMPLE_MS of latency per request
           that serves any number at once: a server process (started
           before the loader, a pair of FIFOs per worker) answers each
           sample's request with 64 KiB after SAMPLE_MS, so the workers
           wait in read() and more of them overlap their waits;
  serial   the same storage serving one request at a time, in order of
           arrival: a read takes longer the more workers wait on it.
Batches of 4 samples, BATCHES (24) of them in one epoch, WORKERS workers; each
step computes for COMPUTE_MS (fixed numpy work too) and steps an optimizer.
OUT.json gets the time spent in iter() and next() (every call, the one that
ends the epoch included) and in iter() and the first next() (the workers'
start-up), the loop's wall time from iter(), the batches and the CPUs the
process may use.
"""

import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

BATCH, SIZE = 4, 65536


def work(a, n):
    """n rounds of elementwise numpy work on `a` (one thread)."""
    for _ in range(n):
        a = np.sqrt(a * a + 1.0)
    return a


def rounds_for(ms):
    """The rounds of work() that take `ms` on this machine (best of 5)."""
    a = np.ones(SIZE // 4, dtype=np.float32)
    work(a, 20)
    best = None
    for _ in range(5):
        t = time.perf_counter()
        work(a, 50)
        d = (time.perf_counter() - t) / 50
        best = d if best is None else min(best, d)
    return max(1, int(ms / 1000.0 / best))


def serve(root, workers, delay_s, serial):
    """The storage, through a pair of FIFOs per worker (req_K, rep_K: files
    with a path, whose reads the tracer records): for each request (a byte)
    it waits `delay_s` and writes 64 KiB; a thread per worker, holding one
    lock meanwhile when `serial` (one request at a time)."""
    import threading
    lock = threading.Lock() if serial else None

    def each(k):
        req = os.open(os.path.join(root, "req_%d" % k), os.O_RDONLY)
        rep = os.open(os.path.join(root, "rep_%d" % k), os.O_WRONLY)
        reply = b"x" * SIZE
        while os.read(req, 1):
            if lock:
                with lock:
                    time.sleep(delay_s)
                    os.write(rep, reply)
            else:
                time.sleep(delay_s)
                os.write(rep, reply)

    threads = [threading.Thread(target=each, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class Samples(Dataset):
    def __init__(self, root, mode, rounds):
        self.root, self.mode, self.rounds = root, mode, rounds
        self.conn = None

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        if self.mode in ("latency", "serial"):
            if self.conn is None:
                k = torch.utils.data.get_worker_info().id
                self.conn = (os.open(os.path.join(self.root, "req_%d" % k), os.O_WRONLY),
                             os.open(os.path.join(self.root, "rep_%d" % k), os.O_RDONLY))
            os.write(self.conn[0], b"r")
            got = 0
            while got < SIZE:
                got += len(os.read(self.conn[1], SIZE - got))
            return torch.zeros(64)
        fd = os.open(os.path.join(self.root, "s%02d.bin" % (i % 16)), os.O_RDONLY)
        try:
            data = os.pread(fd, SIZE, 0)
        finally:
            os.close(fd)
        a = work(np.frombuffer(data, dtype=np.float32).copy(), self.rounds)
        return torch.from_numpy(a[:64].copy())


def main():
    mode, root, out, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    batches = int(sys.argv[5]) if len(sys.argv) > 5 else 24
    sample_ms = float(sys.argv[6]) if len(sys.argv) > 6 else 8.0
    compute_ms = float(sys.argv[7]) if len(sys.argv) > 7 else 4.0
    torch.set_num_threads(1)
    for i in range(16):
        path = os.path.join(root, "s%02d.bin" % i)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(bytes([i]) * SIZE)
    rounds = rounds_for(sample_ms) if mode == "cpu" else 0
    compute_rounds = rounds_for(compute_ms)
    server = None
    if mode in ("latency", "serial"):
        for k in range(workers):
            for name in ("req_%d" % k, "rep_%d" % k):
                if not os.path.exists(os.path.join(root, name)):
                    os.mkfifo(os.path.join(root, name))
        server = os.fork()
        if server == 0:
            try:
                serve(root, workers, sample_ms / 1000.0, mode == "serial")
            finally:
                os._exit(0)
    sampler = range(batches * BATCH)
    loader = DataLoader(Samples(root, mode, rounds), batch_size=BATCH,
                        num_workers=workers, sampler=sampler)
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scratch = np.ones(SIZE // 4, dtype=np.float32)
    got, first = 0, None
    start = time.monotonic_ns()
    it = iter(loader)  # forks the workers: the loop waits for its loader
    waited = time.monotonic_ns() - start
    end = None
    while True:
        asked = time.monotonic_ns()
        try:
            x = next(it)
        except StopIteration:  # the epoch's last request ends the loop
            end = time.monotonic_ns()
            waited += end - asked
            break
        waited += time.monotonic_ns() - asked
        if first is None:
            first = waited
        got += 1
        work(scratch, compute_rounds)
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        end = time.monotonic_ns()
    if server:
        del it, loader  # the workers exit and close their FIFOs: the server ends
        os.waitpid(server, 0)
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": waited, "first_wait_ns": first or 0,
                   "loop_ns": end - start, "batches": got,
                   "workers": workers, "cpus": len(os.sched_getaffinity(0))}, f)
    print("done")


if __name__ == "__main__":
    main()
