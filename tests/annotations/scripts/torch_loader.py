"""A PyTorch DataLoader annotated with dlprof.annotate_loader (tests/annotations).

    python torch_loader.py DATA_DIR WORKERS

The dataset's items are 1000-byte os.pread calls on DATA_DIR/items.bin (8
items, batches of 2, so 4 steps); each step reads 300 bytes of
DATA_DIR/model.bin. One epoch, region "epoch epoch=0".
"""
import os
import sys

import torch
import torch.utils.data

import dlprof

data, workers = sys.argv[1], int(sys.argv[2])


class Items(torch.utils.data.Dataset):
    def __init__(self):
        self.fd = None

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if self.fd is None:
            self.fd = os.open(os.path.join(data, "items.bin"), os.O_RDONLY)
        raw = os.pread(self.fd, 1000, i * 1000)
        assert len(raw) == 1000
        return torch.tensor(raw[0])


loader = torch.utils.data.DataLoader(Items(), batch_size=2, num_workers=workers)
model = os.open(os.path.join(data, "model.bin"), os.O_RDONLY)
steps = 0
for batch in dlprof.annotate_loader(loader, epoch=0):
    assert len(os.pread(model, 300, 0)) == 300
    steps += 1
print("ok steps=%d" % steps)
