"""A torch DataLoader under dlprof.annotate_loader, for the loader flow test
(tests/annotations/test_loader_flows.py).

    python loader_flows.py DATA_DIR MODE

Sample i is file DATA_DIR/sNNN.bin (NNN = i), opened, read whole and closed by
whoever loads it; the batch holds the sample numbers, so each received batch
tells which files were read for it. MODE:
  workers     map-style, batch_size 4, num_workers 2, one epoch
  persistent  the same with persistent_workers=True, two epochs
  inproc      the same with num_workers=0
  iterable    an IterableDataset, each of 2 workers reading the samples of
              its parity, batch_size 4, one epoch
Prints one JSON line: {"main": pid, "epochs": [[batch, ...], ...]}, each batch
the list of its sample numbers in the order the loop received them.
"""
import json
import os
import sys

import torch
import torch.utils.data

import dlprof

data, mode = sys.argv[1], sys.argv[2]
SAMPLES = len([n for n in os.listdir(data) if n.startswith("s")])


def load(i):
    with open(os.path.join(data, "s%03d.bin" % i), "rb") as f:
        assert len(f.read()) > 0
    return i


class Samples(torch.utils.data.Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, i):
        return load(i)


class Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        for i in range(info.id, SAMPLES, info.num_workers):
            yield load(i)


if mode == "iterable":
    loader = torch.utils.data.DataLoader(Stream(), batch_size=4, num_workers=2)
else:
    loader = torch.utils.data.DataLoader(
        Samples(), batch_size=4, shuffle=False,
        num_workers=0 if mode == "inproc" else 2,
        persistent_workers=(mode == "persistent"))
sampler = loader.batch_sampler
annotated = dlprof.annotate_loader(loader)
if mode != "iterable":
    assert len(annotated) == len(loader) == (SAMPLES + 3) // 4

epochs = []
for _ in range(2 if mode == "persistent" else 1):
    got = []
    for batch in annotated:
        # The loader is as it was as soon as iter() has returned.
        assert loader.batch_sampler is sampler
        assert type(batch) is torch.Tensor, type(batch)
        got.append(batch.tolist())
    if mode == "persistent":
        assert loader._iterator._index_sampler is sampler
    if mode != "iterable":
        # What a plain pass would have given: the sampler's batches in order.
        assert got == list(sampler), (got, list(sampler))
    epochs.append(got)
print(json.dumps({"main": os.getpid(), "epochs": epochs}))
