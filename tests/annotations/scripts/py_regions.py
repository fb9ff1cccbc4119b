"""The dlprof Python module around known reads (tests/annotations).

    python py_regions.py DATA_DIR

Reads DATA_DIR/a.bin and b.bin with os.pread (one system call each):
  region "epoch epoch=3": 4096;  inside it region "inner": 1000
  @region("load_batch") function, called twice: 2048 each
  mark "after load step=1"; counters samples=7, loss=0.5, huge=2**63,
  tokens=numpy.int64(2**60+1)
  annotate_loader(3 batches of 512 from a.bin, epoch=4), each step reads 100 of b.bin
  region "failing": 10, then raises (caught)
  annotate_loader(5 batches), loop breaks after the first (512 read)
  outside any region: 1
"""
import os
import sys

import dlprof

data = sys.argv[1]
a = os.open(os.path.join(data, "a.bin"), os.O_RDONLY)
b = os.open(os.path.join(data, "b.bin"), os.O_RDONLY)
print("available=%s active=%s" % (dlprof.available(), dlprof.active()))


def must(fd, n, off):
    got = os.pread(fd, n, off)
    assert len(got) == n, (n, len(got))
    return got


with dlprof.region("epoch", epoch=3):
    must(a, 4096, 0)
    with dlprof.region("inner"):
        must(a, 1000, 0)


@dlprof.region("load_batch")
def load(i):
    return must(a, 2048, i * 2048)


load(0)
load(1)
dlprof.mark("after load", step=1)
dlprof.counter("samples", 7)
dlprof.counter("loss", 0.5)
dlprof.counter("huge", 2**63)  # beyond int64: a double, not -2**63
try:
    import numpy
    dlprof.counter("tokens", numpy.int64(2**60 + 1))  # exact, not a double
except ImportError:
    dlprof.counter("tokens", 2**60 + 1)


class Loader:
    """A stand-in for a DataLoader: each batch is read when it is fetched."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __iter__(self):
        for i in range(self.n):
            yield must(a, 512, i * 512)


wrapped = dlprof.annotate_loader(Loader(3), epoch=4)
assert len(wrapped) == 3
for batch in wrapped:
    must(b, 100, 0)

try:
    with dlprof.region("failing"):
        must(a, 10, 0)
        raise ValueError("expected")
except ValueError:
    pass

for batch in dlprof.annotate_loader(Loader(5)):
    break

must(a, 1, 0)
print("ok")
