"""What the step-loop scripts share (np_saves.py, copy_best.py,
torch_verify_saves.py): a clock in ns, the batch files they make, and the
reading of them from disk.
"""

import os
import time


def ns(t0):
    """The ns since perf_counter() read `t0`."""
    return int((time.perf_counter() - t0) * 1e9)


def make_files(data, prefix, count):
    """`count` files of 256 KiB of random bytes under `data`, synced (so that
    their pages can be dropped): their paths."""
    paths = []
    for k in range(count):
        paths.append(os.path.join(data, "%s%02d.bin" % (prefix, k)))
        with open(paths[-1], "wb") as f:
            f.write(os.urandom(256 << 10))
            f.flush()
            os.fsync(f.fileno())
    return paths


def read_files(paths):
    """Reads each file in 64 KiB calls, its pages dropped from the page cache
    first: the bytes read."""
    n = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            n += len(b)
        os.close(fd)
    return n
