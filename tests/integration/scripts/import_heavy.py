"""One data loop, with and without torch's imports, for
tests/integration/test_summary_size.py.

    import_heavy.py torch|plain DATA_DIR FILES EPOCHS

Both modes read the same data set the same way: each of FILES samples
(s000.bin, ...: made by the test, 16 KiB each) is opened, read in four 4 KiB
preads and closed, by two forked workers, EPOCHS times over. `torch` does it
in a DataLoader's workers (batches of 4, a tiny model and an optimizer step
per batch: thousands of code files imported first); `plain` in a
multiprocessing pool of the standard library, nothing else imported. So the
data files see exactly the same calls, and everything else differs.
"""

import os
import sys

CHUNK, CHUNKS = 4096, 4


def read_sample(root, i):
    fd = os.open(os.path.join(root, "s%03d.bin" % i), os.O_RDONLY)
    try:
        return b"".join(os.pread(fd, CHUNK, k * CHUNK) for k in range(CHUNKS))
    finally:
        os.close(fd)


def plain(root, files, epochs):
    import functools
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(2) as pool:
        for _ in range(epochs):
            sizes = pool.map(functools.partial(read_sample, root), range(files), chunksize=4)
            assert sum(map(len, sizes)) == files * CHUNK * CHUNKS


def with_torch(root, files, epochs):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Samples(Dataset):
        def __len__(self):
            return files

        def __getitem__(self, i):
            data = read_sample(root, i)
            return torch.frombuffer(bytearray(data[:64]), dtype=torch.uint8).float()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Samples(), batch_size=4, num_workers=2)
    model = torch.nn.Linear(64, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for x in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()


def main():
    mode, root, files, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    (with_torch if mode == "torch" else plain)(root, files, epochs)
    print("read %d samples %d times" % (files, epochs))


if __name__ == "__main__":
    main()
