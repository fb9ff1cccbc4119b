"""A tiny stand-in for a training job's input pipeline.

Writes a small data set, then reads it for two epochs with a pool of worker
processes (forked, like PyTorch DataLoader workers), while the main process
"trains" on what they return. Run it under dlprof to see every worker's reads.

Each epoch is an annotation region (python/dlprof): the summary breaks I/O
down by epoch, the workers' reads included, since a worker's calls count in
the region its parent is in. Without dlprof the annotations do nothing.
"""
import contextlib
import multiprocessing as mp
import os
import sys

# The annotation module from this repository, without writing its bytecode
# there (nor that write into the trace).
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
try:
    from dlprof import region
except ImportError:  # a copy of this file without the repository around it
    def region(name, **attrs):
        return contextlib.nullcontext()


def make_dataset(root, files=64, size=64 * 1024):
    os.makedirs(root, exist_ok=True)
    paths = []
    for i in range(files):
        path = os.path.join(root, f"sample_{i:04d}.bin")
        with open(path, "wb") as f:
            f.write(bytes([i % 251]) * size)
        paths.append(path)
    return paths


def load(path):
    with open(path, "rb", buffering=0) as f:
        total = 0
        while True:
            chunk = f.read(16 * 1024)
            if not chunk:
                return total
            total += len(chunk)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "mini-dataset"
    paths = make_dataset(root)
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        for epoch in range(2):
            with region(f"epoch {epoch}"):
                read = sum(pool.map(load, paths, chunksize=4))
            print(f"epoch {epoch}: read {read} bytes from {len(paths)} files")


if __name__ == "__main__":
    main()
