"""Two training loops in one job without ranks, on real torch (CPU), with no
`import dlprof`, each measuring its own truth for tests/integration/
test_job_shapes.py.

    torch_trainers.py HOW DATA_DIR OUT.json

HOW is how the second trainer comes to be: `spawn`, torch.multiprocessing.
spawn of two trainers (no RANK in their environment; the parent only waits);
`fork`, the program forks a child that trains, then trains itself (the
child's trainer a child of the other's). The second trainer begins its loop
about 300 ms after the first: one window over both loops is neither their
sum nor either one's.

Each trainer runs scripts/torch_verdict.py's loop: one epoch of 8 batches of
4 samples over a DataLoader of 2 workers, each sample 5 ms asleep, an
optimizer step a batch, and measures on CLOCK_MONOTONIC_RAW (the tracer's
clock) the brackets of its time in iter() and next() and of its loop's
window (tests/dltest/brackets.py; as torch_verdict.py's). OUT.json gets them
summed over the two trainers (wait_inner_ns, wait_outer_ns, loop_inner_ns,
loop_outer_ns), with their batches and optimizer steps, and each trainer's
own as `trainers`.
"""

import json
import os
import sys
import time

import torch
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, Dataset
from torch.utils.data import dataloader as dl

from loader_clock import InnerClock, raw_ns

DELAY_S = 0.3


class Samples(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, i):
        time.sleep(0.005)
        return torch.full((4,), float(i))


def train(index, out):
    """One trainer's loop; its truth to OUT.json.INDEX."""
    if index == 1:
        time.sleep(DELAY_S)
    loader = DataLoader(Samples(), batch_size=4, num_workers=2)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    inner = InnerClock(dl.DataLoader, method="_get_iterator")
    inner.wrap(dl._SingleProcessDataLoaderIter)
    inner.wrap(dl._MultiProcessingDataLoaderIter)
    batches = steps = 0
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
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        steps += 1
    with open("%s.%d" % (out, index), "w") as f:
        json.dump({"pid": os.getpid(), "wait_inner_ns": inner.total, "wait_outer_ns": waited,
                   "loop_inner_ns": inner.last - inner.first, "loop_outer_ns": end - start,
                   "batches": batches, "steps": steps}, f)


def main():
    how, out = sys.argv[1], sys.argv[3]
    if how == "spawn":
        mp.spawn(train, args=(out,), nprocs=2)
    else:
        child = os.fork()
        if child == 0:
            try:
                train(1, out)
            finally:
                os._exit(0)
        train(0, out)
        os.waitpid(child, 0)
    trainers = []
    for index in (0, 1):
        with open("%s.%d" % (out, index)) as f:
            trainers.append(json.load(f))
    truth = {k: sum(t[k] for t in trainers) for k in trainers[0] if k != "pid"}
    truth["trainers"] = trainers
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
