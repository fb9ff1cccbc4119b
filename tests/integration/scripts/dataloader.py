"""A real PyTorch DataLoader whose Dataset reads one small file per item.

usage: dataloader.py DATA_DIR EPOCHS NUM_WORKERS

Prints one JSON object: {"parent": pid, "epochs": [{path: [worker pid,
bytes]}, ...]} -- for every epoch, which process read each file and how many
bytes it got.
"""

import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, directory):
        self.paths = sorted(os.path.join(directory, n) for n in os.listdir(directory))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        return torch.tensor([i, os.getpid(), len(data)], dtype=torch.int64)


def main():
    directory, epochs, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    dataset = Files(directory)
    loader = DataLoader(dataset, batch_size=8, shuffle=True, num_workers=workers)
    out = {"parent": os.getpid(), "epochs": []}
    for _ in range(epochs):
        seen = {}
        for batch in loader:
            for i, pid, n in batch.tolist():
                seen[dataset.paths[i]] = [pid, n]
        out["epochs"].append(seen)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
