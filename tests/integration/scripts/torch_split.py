"""A training loop on real torch (CPU) whose batch wait has a known cause,
with no `import dlprof`, measuring its own truth for
tests/integration/test_wait_split.py.

    torch_split.py MODE DATA_DIR OUT.json [WORKERS]

MODE is what the loop waits for (WORKERS (1) workers, batches of 4 samples):
  read     each sample is an open, 64 reads of 4 KiB with O_DIRECT (page-aligned
           preadv: every read goes to the disk; where the file system refuses
           O_DIRECT, the cached pages are dropped before each read instead);
  aio      the same 64 reads as Linux AIO requests (io_submit of all 64,
           io_getevents until all are back, through libc's syscall() as
           libaio makes them): the worker waits on completions;
  cpu      each sample is one 4 KiB read, then 25 ms of numpy work
           (sorting, FFTs: decoding and augmenting); prefetch_factor 1;
  handover each sample is one 4 KiB read and a 1 MiB tensor, and the batch is
           a list of them (collate_fn keeps them apart, as detection models'
           loaders do): the worker's queue moves every tensor into shared
           memory after the fetch, and the loop waits for that;
  pin      each sample is one 4 KiB read, and the loader pins its batches
           (pin_memory=True; without a GPU, a fake Tensor.pin_memory that
           copies the tensor and takes PIN_NS each): with WORKERS 0 the loop
           makes and then pins each batch itself, and waits for both.

The loop times iter() (starting the worker: worker start-up, or the
loader's own work without workers), then asks for its first batch half a
second later, once the worker has started. Each sample carries its own clock readings
(CLOCK_MONOTONIC_RAW, the tracer's clock and one for every process): when __getitem__ began and
ended and when each of its I/O calls on its file (open, reads, close) began
and ended; the collate function adds when the batch was complete. The
loop times each next() and works out, for the batch it got, the split that
docs/ANALYSIS.md defines ("Where the wait goes"): reading, the worker's time
in those calls within [asked, min(got, batch complete)); worker start-up,
the part of that before the worker began its first sample; preprocessing,
the rest of it; hand-over, the rest of the wait (the call that ends the
epoch: all of it). Without workers the loop makes its batches
itself: the whole call is the fetch (reading, its I/O calls; preprocessing,
the rest; no hand-over), but for pinning (pin: from the batch's completion to
the call's return, hand-over). OUT.json gets the four summed, per call
too ([wait, reading, preprocessing, hand-over, worker start-up, inner
wait, I/O calls]), with the number of batches and optimizer steps.

Every clock read of the script lies outside what the tracer records (the
I/O calls, the regions around iter(), next() and the fetch), so these
figures bound the trace's from above: the reading and the hand-over the
trace finds are no longer than these (tests/integration/test_wait_split.py),
whatever the machine's load makes of the time between a read and a call.
The wait has an inner bound too (the loader's _get_iterator and the
iterator's _next_data, timed inside the regions: scripts/loader_clock.py).
How close the trace's split comes to these on an idle machine is
bench/wait_split.py's to measure.
"""

import ctypes
import json
import mmap
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data import dataloader as dl
from torch.utils.data._utils.collate import default_collate

from loader_clock import InnerClock, raw_ns as now

SAMPLES, BATCH, PIECE = 40, 4, 4096
READS = {"read": 64, "aio": 64, "cpu": 1, "handover": 1, "pin": 1}
CPU_NS = 25_000_000
PIN_NS = 5_000_000  # the fake pin_memory's time per tensor
BIG = 1 << 20  # bytes of each handover sample's tensor


# Linux AIO's system calls (io_setup, io_submit, io_getevents) by machine.
AIO_CALLS = {"x86_64": (206, 209, 208), "aarch64": (0, 2, 4)}


class Iocb(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("key", ctypes.c_uint32),
                ("rw_flags", ctypes.c_uint32), ("opcode", ctypes.c_uint16),
                ("reqprio", ctypes.c_int16), ("fildes", ctypes.c_uint32),
                ("buf", ctypes.c_uint64), ("nbytes", ctypes.c_uint64),
                ("offset", ctypes.c_int64), ("reserved2", ctypes.c_uint64),
                ("flags", ctypes.c_uint32), ("resfd", ctypes.c_uint32)]


class IoEvent(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("obj", ctypes.c_uint64),
                ("res", ctypes.c_int64), ("res2", ctypes.c_int64)]


class LinuxAio:
    """One worker's AIO context and its 64 page-aligned buffers."""

    def __init__(self):
        self.setup, self.submit, self.getevents = AIO_CALLS[os.uname().machine]
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.ctx = ctypes.c_ulong(0)
        n = READS["aio"]
        if self.libc.syscall(ctypes.c_long(self.setup), ctypes.c_long(n),
                             ctypes.byref(self.ctx)) != 0:
            raise OSError(ctypes.get_errno(), "io_setup")
        self.buf = mmap.mmap(-1, n * PIECE)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.buf))
        self.iocbs = (Iocb * n)()
        self.ptrs = (ctypes.POINTER(Iocb) * n)()
        self.events = (IoEvent * n)()

    def read_all(self, fd):
        """The file's 64 pieces, all submitted at once, all waited for."""
        n = READS["aio"]
        for k in range(n):
            self.iocbs[k] = Iocb(data=k, opcode=0, fildes=fd, buf=self.base + k * PIECE,
                                 nbytes=PIECE, offset=k * PIECE)
            self.ptrs[k] = ctypes.pointer(self.iocbs[k])
        call = self.libc.syscall
        if call(ctypes.c_long(self.submit), self.ctx, ctypes.c_long(n), self.ptrs) != n:
            raise OSError(ctypes.get_errno(), "io_submit")
        done = 0
        while done < n:
            r = call(ctypes.c_long(self.getevents), self.ctx, ctypes.c_long(n - done),
                     ctypes.c_long(n - done), self.events, None)
            if r < 0:
                raise OSError(ctypes.get_errno(), "io_getevents")
            done += r
        return self.buf[:n * PIECE]


class Samples(Dataset):
    def __init__(self, root, mode):
        self.root, self.mode = root, mode
        self.buf = None
        self.aio = None  # the worker's own, made on its first sample

    def __len__(self):
        return SAMPLES

    def read(self, i):
        """The sample's I/O calls on its file: [(start, end)], and its bytes."""
        if self.buf is None:
            self.buf = mmap.mmap(-1, PIECE)  # page-aligned, as O_DIRECT needs
        path = os.path.join(self.root, "s%03d.bin" % i)
        direct = self.mode in ("read", "aio")
        # Every call on the file inside a bracket: the tracer counts each
        # (the open O_DIRECT refused too, and posix_fadvise) as reading.
        calls, data = [], b""
        t0 = now()
        try:
            fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
        except OSError:  # no O_DIRECT here: drop the cached pages instead
            fd, direct = os.open(path, os.O_RDONLY), False
        calls.append((t0, now()))
        if self.mode == "aio":
            if self.aio is None:
                self.aio = LinuxAio()
            t0 = now()
            if not direct:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            data = self.aio.read_all(fd)
            calls.append((t0, now()))  # from the submission to the last completion
        for k in range(READS[self.mode] if self.mode != "aio" else 0):
            t0 = now()
            if self.mode == "read" and not direct:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            n = os.preadv(fd, [self.buf], k * PIECE)
            calls.append((t0, now()))
            data += self.buf[:n]
        t0 = now()
        os.close(fd)
        calls.append((t0, now()))
        return calls, data

    def __getitem__(self, i):
        start = now()
        reads, data = self.read(i)
        x = torch.frombuffer(bytearray(data[:64]), dtype=torch.uint8).float()
        if self.mode == "cpu":
            rng = np.random.default_rng(i)
            a = rng.random(1 << 14)
            end = start + CPU_NS
            while now() < end:
                a = np.sort(np.abs(np.fft.rfft(a, n=1 << 14)))[: 1 << 14]
        if self.mode == "handover":
            big = torch.empty(BIG // 4)
            big[:64] = x
            x = big[:64]  # a view: the whole storage moves
        stamps = [start, now()] + [t for r in reads for t in r]
        return x, torch.tensor(stamps, dtype=torch.int64)


def collate_stacked(samples):
    xs, stamps = default_collate(samples)
    return xs, stamps, torch.tensor([now()], dtype=torch.int64)


def collate_list(samples):
    return [x for x, _ in samples], default_collate([s for _, s in samples]), \
        torch.tensor([now()], dtype=torch.int64)


def fake_pin(tensor, device=None):
    """Tensor.pin_memory without a GPU: a copy that takes PIN_NS."""
    end = now() + PIN_NS
    copy = tensor.clone()
    while now() < end:
        time.sleep(0.0005)
    return copy


def split(asked, got, stamps, done, workers, pinned, worker_began):
    """(reading, preprocessing, handover, worker start-up) of one wait for
    one batch; `worker_began`: when the worker began its first sample."""
    hi = got if workers == 0 and not pinned else min(got, int(done))
    if hi <= asked:
        return 0, 0, got - asked, 0
    reading = 0
    for row in stamps.tolist():
        reads = row[2:]
        for s, e in zip(reads[0::2], reads[1::2]):
            reading += max(0, min(e, hi) - max(s, asked))
    reading = min(reading, hi - asked)
    startup = max(0, min(hi, worker_began) - asked) if workers else 0
    return reading, hi - asked - reading - startup, got - hi, startup


def main():
    mode, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    for i in range(SAMPLES):
        path = os.path.join(root, "s%03d.bin" % i)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(bytes([i % 251 + 1]) * (PIECE * READS["read"]))
    collate = collate_list if mode == "handover" else collate_stacked
    # cpu: one batch asked of the worker at a time, so that it is idle while
    # its queue's thread sends the batch (prefetching, the next fetch would
    # hold the worker's GIL meanwhile: a hand-over as long as the work on a
    # busy machine).
    extra = {"prefetch_factor": 1} if mode == "cpu" and workers else {}
    if mode == "pin" and not torch.cuda.is_available():
        torch.Tensor.pin_memory = fake_pin
        extra["pin_memory_device"] = "cpu"  # torch 1.13 pins for it without CUDA
    loader = DataLoader(Samples(root, mode), batch_size=BATCH, num_workers=workers,
                        collate_fn=collate, pin_memory=mode == "pin", **extra)
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    calls, batches, steps = [], 0, 0
    inner = InnerClock(dl.DataLoader, method="_get_iterator")
    inner.wrap(dl._SingleProcessDataLoaderIter)
    inner.wrap(dl._MultiProcessingDataLoaderIter)
    asked = now()
    it = iter(loader)
    took = now() - asked
    calls.append(((took, 0, 0, 0, took) if workers else (took, 0, took, 0, 0)) +
                 (inner.calls[-1], 0))
    pinned = bool(getattr(it, "_pin_memory", False))
    if mode == "pin" and not pinned:
        with open(out, "w") as f:  # this torch does not pin without a GPU
            json.dump({"unpinned": True}, f)
        print("done")
        return
    time.sleep(0.5 if workers else 0)  # building the model meanwhile: the worker starts
    worker_began = None
    while True:
        asked = now()
        try:
            batch = next(it)
        except StopIteration:  # the call that ends the epoch: nothing was made for it
            got = now()
            calls.append(((got - asked, 0, got - asked, 0, 0) if workers == 0 else
                          (got - asked, 0, 0, got - asked, 0)) + (inner.calls[-1], 0))
            break
        got = now()
        xs, stamps, done = batch
        if worker_began is None:  # one worker: its first sample is the first batch's first
            worker_began = min(row[0] for row in stamps.tolist())
        ios = (stamps.shape[1] - 2) // 2 * stamps.shape[0]
        calls.append((got - asked,) + split(asked, got, stamps, done[0], workers, pinned,
                                            worker_began) + (inner.calls[-1], ios))
        batches += 1
        x = torch.stack(xs) if isinstance(xs, list) else xs
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        steps += 1
    total = [sum(c[k] for c in calls) for k in range(7)]
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": total[0], "reading_ns": total[1],
                   "preprocessing_ns": total[2], "handover_ns": total[3],
                   "worker_startup_ns": total[4], "wait_inner_ns": total[5],
                   "wait_outer_ns": total[0], "io_calls": total[6],
                   "calls": calls, "batches": batches, "steps": steps}, f)
    print("done")


if __name__ == "__main__":
    main()
