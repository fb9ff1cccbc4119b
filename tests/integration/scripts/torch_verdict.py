"""A training loop on real torch (CPU) whose bottleneck is known, with no
`import dlprof`, measuring its own truth for tests/integration/test_verdict.py.

    torch_verdict.py MODE DATA_DIR OUT.json [WORKERS]

MODE is what holds the loop back:
  disk     each sample is read in 4 KiB preads with a 2 ms pause before each
           (a slow file system), in the workers;
  cpu      each sample costs 8 ms of Python work in the workers (decoding);
  compute  the workers are quick (persistent: no shut-down at the epoch's
           end) and each training step takes 150 ms, over batches of one
           sample, so that the first batch's wait for the workers to start
           (a few hundred ms on a loaded machine) is under 10 % of the loop.
The loop runs one epoch of 8 batches of 4 samples (32 of 1 for compute) with
WORKERS (2) workers and an optimizer step per batch. OUT.json gets the number
of batches and optimizer steps, and, on CLOCK_MONOTONIC_RAW (the tracer's
clock), as brackets of the bootstrap's regions (tests/dltest/brackets.py):
the time spent in iter() and next() (every call, the one that ends the
epoch included; outer: around iter() and next(), which the bootstrap's
loader_iter and load_batch regions wrap; inner: around the loader's
_get_iterator and the iterator's _next_data, which torch calls inside those
regions), and the loop's length from iter() (the first request for data:
it forks the workers) to the end of the last next() (which found the epoch
over, after the last optimizer step).
"""

import importlib.util
import json
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data import dataloader as dl

# loader_clock.py beside this file, by its path: `python -I` (a test runs
# this so) puts no script directory on sys.path.
_spec = importlib.util.spec_from_file_location(
    "loader_clock", os.path.join(os.path.dirname(os.path.abspath(__file__)), "loader_clock.py"))
_clock = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_clock)
InnerClock, raw_ns = _clock.InnerClock, _clock.raw_ns

SAMPLES, SIZE, BATCH = 32, 16384, 4


class Samples(Dataset):
    def __init__(self, root, mode):
        self.root, self.mode = root, mode

    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        fd = os.open(os.path.join(self.root, "s%03d.bin" % i), os.O_RDONLY)
        try:
            data = b""
            for off in range(0, SIZE, 4096):
                if self.mode == "disk":
                    time.sleep(0.002)
                data += os.pread(fd, 4096, off)
        finally:
            os.close(fd)
        if self.mode == "cpu":
            end = time.perf_counter() + 0.008
            while time.perf_counter() < end:
                pass
        return torch.frombuffer(bytearray(data[:64]), dtype=torch.uint8).float()


def main():
    mode, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    for i in range(SAMPLES):
        path = os.path.join(root, "s%03d.bin" % i)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(bytes([i % 251]) * SIZE)
    compute = mode == "compute"
    loader = DataLoader(Samples(root, mode), batch_size=1 if compute else BATCH,
                        num_workers=workers, persistent_workers=compute and workers > 0)
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches, steps = 0, 0
    inner = InnerClock(dl.DataLoader, method="_get_iterator")
    inner.wrap(dl._SingleProcessDataLoaderIter)
    inner.wrap(dl._MultiProcessingDataLoaderIter)
    start = raw_ns()
    it = iter(loader)  # forks the workers: the loop waits for its loader
    waited = raw_ns() - start
    while True:
        asked = raw_ns()
        try:
            x = next(it)
        except StopIteration:  # the epoch's last request: the loop ends with it
            end = raw_ns()
            waited += end - asked
            break
        waited += raw_ns() - asked
        batches += 1
        if mode == "compute":
            busy = time.perf_counter() + 0.150
            while time.perf_counter() < busy:
                pass
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        steps += 1
    with open(out, "w") as f:
        json.dump({"wait_inner_ns": inner.total, "wait_outer_ns": waited,
                   "loop_inner_ns": inner.last - inner.first, "loop_outer_ns": end - start,
                   "batches": batches, "steps": steps, "workers": workers}, f)
    print("done")


if __name__ == "__main__":
    main()
