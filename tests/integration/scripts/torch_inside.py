"""Loaders whose insides are known, on real torch (CPU), with no
`import dlprof`, each measuring its own truth for
tests/integration/test_loader_inside.py.

    torch_inside.py MODE DATA_DIR OUT.json

MODE:
  hol         4 workers, batches of 4; every 16th sample reads 48 random
              O_DIRECT pages of one slow file (the page cache dropped where
              O_DIRECT is refused) and then waits 150 ms (a slow storage's
              tail), the others read one 4 KiB file. Each sample says when
              it was made; after the epoch the loop works out, for each wait,
              the time before its batch was made during which a later batch
              already was (head-of-line time), from its own clock;
  transforms  2 workers; each sample is a PNG decoded with PIL and run
              through torchvision's Compose of RandomResizedCrop,
              GaussianBlur (heavy), ColorJitter, ToTensor and Normalize; for
              the truth the sample also runs each transform on its own, on
              the same image, and times it;
  custom      the same images through a pipeline of the program's own
              functions (no Compose): nothing the bootstrap can name.

Every clock is time.monotonic_ns. OUT.json gets the loop's own figures.
"""

import json
import mmap
import os
import random
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

now = time.monotonic_ns
PIECE = 4096
SLOW_EVERY, SLOW_PAGES, SLOW_WAIT = 16, 48, 0.150


class Tail(Dataset):
    """hol: most samples one 4 KiB read; every 16th a slow one."""

    def __init__(self, root, n):
        self.root, self.n = root, n
        self.buf = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.buf is None:
            self.buf = mmap.mmap(-1, PIECE)
        if i % SLOW_EVERY == SLOW_EVERY - 1:
            path = os.path.join(self.root, "slow.bin")
            try:
                fd, direct = os.open(path, os.O_RDONLY | os.O_DIRECT), True
            except OSError:
                fd, direct = os.open(path, os.O_RDONLY), False
            rng = random.Random(i)
            for _ in range(SLOW_PAGES):
                if not direct:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.preadv(fd, [self.buf], rng.randrange(2048) * PIECE)
            os.close(fd)
            time.sleep(SLOW_WAIT)
        else:
            with open(os.path.join(self.root, "f%03d.bin" % i), "rb") as f:
                f.read(PIECE)
        return torch.tensor([i, now()], dtype=torch.int64)


def hol(root, out):
    with open(os.path.join(root, "slow.bin"), "wb") as f:
        f.write(os.urandom(2048 * PIECE))
    n = 64
    for i in range(n):
        with open(os.path.join(root, "f%03d.bin" % i), "wb") as f:
            f.write(bytes([i]) * PIECE)
    loader = DataLoader(Tail(root, n), batch_size=4, num_workers=4)
    waits, made = [], []
    asked = now()
    it = iter(loader)
    started = now() - asked
    while True:
        asked = now()
        try:
            b = next(it)
        except StopIteration:
            break
        waits.append((asked, now()))
        made.append(int(b[:, 1].max()))  # its last sample made (collate follows at once)
    holding = 0
    for k, (a, got) in enumerate(waits):
        mine = min(got, made[k])
        later = [m for m in made[k + 1:] if m < mine]
        if later:
            holding += max(0, mine - max(a, min(later)))
    with open(out, "w") as f:
        json.dump({"batch_wait_ns": started + sum(g - a for a, g in waits), "head_of_line_ns": holding,
                   "batches": len(waits), "slow_file": os.path.join(root, "slow.bin"),
                   "slow_samples": [i for i in range(n) if i % SLOW_EVERY == SLOW_EVERY - 1]}, f)


def images(root, n):
    from PIL import Image
    rng = random.Random(0)
    for i in range(n):
        path = os.path.join(root, "img%02d.png" % i)
        if not os.path.exists(path):
            img = Image.new("RGB", (256, 256))
            img.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256))
                         for _ in range(256 * 256)])
            img.save(path)


class Images(Dataset):
    def __init__(self, root, n, pipeline, compose):
        self.root, self.n, self.pipeline, self.compose = root, n, pipeline, compose

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        from PIL import Image
        img = Image.open(os.path.join(self.root, "img%02d.png" % (i % 16))).convert("RGB")
        torch.manual_seed(i)
        x = self.pipeline(img)
        # The truth: each transform on its own, on the same image, timed.
        times = []
        if self.compose is not None:
            y = img
            for t in self.compose.transforms:
                t0 = now()
                y = t(y)
                times.append(now() - t0)
        return x, torch.tensor(times, dtype=torch.int64)


def own_pipeline(img):
    """The program's own: no Compose, nothing the bootstrap names."""
    import numpy as np
    a = np.asarray(img, dtype=np.float32)
    for _ in range(3):
        a = (a[1:, 1:] + a[:-1, :-1]) / 2
    return torch.from_numpy(np.ascontiguousarray(a[:224, :224]))


def pictures(root, out, mode):
    import torchvision.transforms as T
    n = 32
    images(root, 16)
    compose = T.Compose([T.RandomResizedCrop(224), T.GaussianBlur(31, sigma=8.0),
                         T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
                         T.Normalize([0.5] * 3, [0.5] * 3)])
    pipeline = compose if mode == "transforms" else own_pipeline
    loader = DataLoader(Images(root, n, pipeline, compose if mode == "transforms" else None),
                        batch_size=4, num_workers=2)
    names = [type(t).__name__ for t in compose.transforms]
    per = dict.fromkeys(names, 0)
    for _, times in loader:
        if mode == "transforms":
            for row in times.tolist():
                for name, ns in zip(names, row):
                    per[name] += ns
    with open(out, "w") as f:
        json.dump({"transform_ns": per if mode == "transforms" else {}}, f)


def main():
    mode, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "hol":
        hol(root, out)
    elif mode in ("transforms", "custom"):
        pictures(root, out, mode)
    else:
        raise SystemExit("unknown mode " + mode)
    print("done")


if __name__ == "__main__":
    main()
