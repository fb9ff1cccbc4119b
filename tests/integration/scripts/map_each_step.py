"""A loop without a DataLoader that maps its (cached) token file anew each
step, as nanoGPT's get_batch makes a new np.memmap per batch: the previous
step's map is torn down (munmap) as the new one replaces it. Prints its own
clock as JSON: the time around making each map (np.memmap: open, fstat,
mmap, close) and around dropping the previous one (munmap), and its steps.

usage: map_each_step.py FILE STEPS"""

import json
import sys
import time

import numpy as np
import torch

path, steps = sys.argv[1], int(sys.argv[2])
np.fromfile(path, dtype=np.uint16)  # the file in the page cache
torch.manual_seed(0)
model = torch.nn.Linear(64, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
map_ns = 0
data = None
for step in range(steps):
    t0 = time.perf_counter_ns()
    new = np.memmap(path, dtype=np.uint16, mode="r")
    t1 = time.perf_counter_ns()
    data = new  # the previous map is freed here: its munmap
    t2 = time.perf_counter_ns()
    map_ns += t2 - t0
    # A token from every page of the map: all of them faulted in from the
    # page cache, so tearing the map down has every page to unmap.
    tokens = data[::2048].astype(np.float32)
    x = torch.from_numpy(tokens[:64 * 16]).reshape(16, 64)
    loss = model(x).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
del data, new  # the last map: after the last step, in no wait
print(json.dumps({"steps": steps, "map_ns": map_ns}))
