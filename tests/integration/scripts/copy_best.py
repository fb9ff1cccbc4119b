"""A loop of plain file calls that copies each checkpoint to a "best" file,
as pytorch/examples' ImageNet save_checkpoint() does (test_copies.py):
usage: copy_best.py DATA TRUTH.

8 optimizer_step regions, before each the batch read (4 files of 256 KiB,
dropped from the page cache first); after every other step a 16 MiB
checkpoint written (open "wb", writes, fsync, close), then shutil.copyfile
of it to model_best.bin (sendfile on Linux). The program's clock around
each reading, around each save and copy together, the bytes each copy
wrote (the destination's size) and the bytes the readings read.

The truth: a JSON object of what the program measured, in ns and bytes."""

import json
import os
import shutil
import sys
import time

import dlprof
from step_files import make_files, ns, read_files


def main():
    data, out = sys.argv[1:3]
    paths = make_files(data, "r", 32)
    blob = os.urandom(16 << 20)
    ckpt, best = os.path.join(data, "checkpoint.bin"), os.path.join(data, "model_best.bin")
    waits, saves, written, copied, read = [], [], 0, 0, 0
    for s in range(8):
        t0 = time.perf_counter()
        read += read_files(paths[4 * s:4 * s + 4])
        waits.append(ns(t0))
        time.sleep(0.02)  # the forward and backward passes
        with dlprof.region("optimizer_step"):
            time.sleep(0.005)
        if s % 2 == 1:
            t0 = time.perf_counter()
            with open(ckpt, "wb") as f:
                for i in range(0, len(blob), 1 << 20):
                    f.write(blob[i:i + (1 << 20)])
                f.flush()
                os.fsync(f.fileno())
            shutil.copyfile(ckpt, best)
            saves.append(ns(t0))
            written += os.path.getsize(ckpt)
            copied += os.path.getsize(best)
    with open(out, "w") as f:
        json.dump({"waits": waits, "saves": saves, "written": written, "copied": copied,
                   "read": read,
                   "checkpoint": ckpt, "best": best}, f)
    print("done")


if __name__ == "__main__":
    main()
