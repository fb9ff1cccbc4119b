#!/usr/bin/python3
"""What the bootstrap's records inside a worker's fetch cost (issue 50: at
most 2 us per sample and per transform): one worker makes batches of 256
tiny in-memory samples, each through a torchvision Compose of 4 cheap
transforms, as fast as it can, and the loop only takes them, so that the
loop's time per sample is the worker's. Three settings, every run under the
tracer, alternating (ABCABC...) so that the machine's load falls on all:

  A  DLPROF_PYTHON=0: no bootstrap (nothing recorded inside the fetch);
  B  the bootstrap with DLPROF_PYTHON_SAMPLES=0: batches, fetches and the
     transforms' regions (4 a sample), no sample regions;
  C  the bootstrap as it ships: a sample region and counter per sample too.

(C - B) / samples is a sample's records; (B - A) / (samples x 4) a
transform's (the batch-level regions, one per 256 samples, are in it too).

    bench/python_samples.py [BUILD_DIR] [--runs N] [--samples N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

PYTHON = "/usr/bin/python3"
TRANSFORMS = 4

LOOP = r"""
import sys, time, torch
import torchvision.transforms as T
from torch.utils.data import DataLoader, Dataset
class Plus(torch.nn.Module):
    def forward(self, x): return x + 1
tf = T.Compose([Plus() for _ in range(%(k)d)])
class Tiny(Dataset):
    def __len__(self): return %(n)d
    def __getitem__(self, i): return tf(i)
torch.set_num_threads(1)
dl = DataLoader(Tiny(), batch_size=256, num_workers=1, prefetch_factor=4)
it = iter(dl); next(it)
t0 = time.perf_counter_ns(); n = 0
for b in it:
    n += len(b)
print((time.perf_counter_ns() - t0) / n)
"""


def run(build, setting, samples):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLPROF_")}
    env.pop("PYTHONPATH", None)
    traces = tempfile.mkdtemp(prefix="dlprof-bench-")
    env.update({"LD_PRELOAD": os.path.join(build, "lib", "libdlprof.so"), "DLPROF_DIR": traces,
                "DLPROF_QUIET": "1"})
    if setting == "A":
        env["DLPROF_PYTHON"] = "0"
    elif setting == "B":
        env["DLPROF_PYTHON_SAMPLES"] = "0"
    p = subprocess.run([PYTHON, "-c", LOOP % {"n": samples, "k": TRANSFORMS}], env=env,
                       capture_output=True, text=True, timeout=600)
    subprocess.run(["rm", "-rf", traces])
    if p.returncode != 0:
        sys.exit(p.stderr)
    return float(p.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--samples", type=int, default=100000)
    args = ap.parse_args()
    times = {s: [] for s in "ABC"}
    for _ in range(args.runs):
        for s in "ABC":
            times[s].append(run(args.build, s, args.samples))
    med = {s: statistics.median(v) for s, v in times.items()}
    for s in "ABC":
        print("%s: %.2f us a sample (runs: %s)" % (s, med[s] / 1000,
              ", ".join("%.2f" % (t / 1000) for t in times[s])))
    print("a sample's records (C - B): %.2f us" % ((med["C"] - med["B"]) / 1000))
    print("a transform's region ((B - A) / %d): %.2f us" % (TRANSFORMS, (med["B"] - med["A"]) / 1000 / TRANSFORMS))


if __name__ == "__main__":
    main()
