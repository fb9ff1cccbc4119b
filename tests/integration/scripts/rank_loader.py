"""A torchrun-style job without GPU, for test_ranks.py: two rank processes
started with RANK/LOCAL_RANK/WORLD_SIZE (no MPI), each iterating a PyTorch
DataLoader with 2 workers through dlprof.annotate_loader. One rank's dataset
sleeps in __getitem__, so that its loader is the slow one.

    python rank_loader.py launch DATA_DIR STEPS SLOW_RANK DELAY_S
        starts ranks 0 and 1 (this script, "rank" mode) and waits for both
    python rank_loader.py rank DATA_DIR STEPS SLOW_RANK DELAY_S
        one rank: STEPS batches of 2 items; each item a 1000-byte os.pread
        of DATA_DIR/items.bin; prints "rank R steps N", then "rank R truth
        JSON": its own brackets of each load_batch region annotate_loader
        recorded (tests/dltest/brackets.py; the last the call that found the
        loader exhausted), inner ("inner", ns) and outer ("outer")
"""
import json
import os
import subprocess
import sys
import time

from loader_clock import InnerClock, raw_ns


def launch(args):
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
        procs.append(subprocess.Popen([sys.executable, __file__, "rank"] + args, env=env))
    return max(p.wait() for p in procs)


def rank_main(data, steps, slow_rank, delay):
    import torch
    import torch.utils.data

    import dlprof

    rank = int(os.environ["RANK"])

    class Items(torch.utils.data.Dataset):
        def __init__(self):
            self.fd = None

        def __len__(self):
            return 2 * steps

        def __getitem__(self, i):
            if self.fd is None:
                self.fd = os.open(os.path.join(data, "items.bin"), os.O_RDONLY)
            raw = os.pread(self.fd, 1000, i * 1000)
            assert len(raw) == 1000
            if rank == slow_rank:
                time.sleep(delay)
            return torch.tensor(raw[0])

    loader = torch.utils.data.DataLoader(Items(), batch_size=2, num_workers=2)
    inner = InnerClock(torch.utils.data.dataloader._MultiProcessingDataLoaderIter)
    outer = []
    n = 0
    batches = iter(dlprof.annotate_loader(loader))
    while True:
        asked = raw_ns()
        try:
            next(batches)
        except StopIteration:
            outer.append(raw_ns() - asked)
            break
        outer.append(raw_ns() - asked)
        n += 1
    print("rank %d steps %d" % (rank, n))
    print("rank %d truth %s" % (rank, json.dumps({"inner": inner.calls, "outer": outer})))
    return 0


def main():
    mode, data, steps, slow, delay = sys.argv[1:6]
    if mode == "launch":
        return launch(sys.argv[2:6])
    return rank_main(data, int(steps), int(slow), float(delay))


if __name__ == "__main__":
    sys.exit(main())
