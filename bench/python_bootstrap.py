"""The cost of dlprof's Python bootstrap (dlprof-python/sitecustomize.py and
dlprof/_torch.py), against DLPROF_PYTHON=0, every run under the tracer:

  * start-up: `python3 -c pass` (a process that never imports torch);
  * `python3 -c "import torch"` (the bootstrap's finder, loading dlprof and
    patching torch.utils.data and the optimizers);
  * per batch: next() on a DataLoader of tiny in-memory samples, with
    num_workers=0 (the main process's load_batch region, marks) and with 2
    workers (adds the flows and the workers' fetch_batch); per optimizer
    step (SGD on a 4x4 linear layer).

    bench/python_bootstrap.py [BUILD_DIR] [--runs N]

Runs alternate between the two settings (ABAB...) so that the machine's
load falls on both alike; medians of wall-clock and CPU time (the process's
user + system time, less sensitive to a loaded machine) are printed.
`python3 -X importtime -c pass` shows the bootstrap's own import alone (the
`sitecustomize` line whose own time excludes the user's sitecustomize). Before the runtime puts the
bootstrap on PYTHONPATH itself, "with" sets PYTHONPATH=<lib dir>/dlprof-python
as the runtime does; "without" sets DLPROF_PYTHON=0 and leaves PYTHONPATH unset.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"

LOOP = r"""
import sys, time, torch
from torch.utils.data import DataLoader, Dataset
class Tiny(Dataset):
    def __len__(self): return %(n)d
    def __getitem__(self, i): return i
torch.set_num_threads(1)
out = []
for workers in (0, 2):
    dl = DataLoader(Tiny(), batch_size=1, num_workers=workers)
    it = iter(dl); next(it)  # workers started, first batch in
    t0 = time.perf_counter_ns(); n = 0
    for b in it:
        n += 1
    out.append((time.perf_counter_ns() - t0) / n)
m = torch.nn.Linear(4, 4); opt = torch.optim.SGD(m.parameters(), lr=0.0)
for p in m.parameters(): p.grad = torch.zeros_like(p)
t0 = time.perf_counter_ns()
for _ in range(%(n)d):
    opt.step()
out.append((time.perf_counter_ns() - t0) / %(n)d)
print(" ".join("%%.0f" %% v for v in out))
"""


def env_for(build, with_bootstrap, traces):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DLPROF_") and k not in ("LD_PRELOAD", "PYTHONPATH")}
    env.update(LD_PRELOAD=os.path.join(build, "lib", "libdlprof.so"), DLPROF_DIR=traces,
               DLPROF_QUIET="1", PYTHONDONTWRITEBYTECODE="1")
    if with_bootstrap:
        env["PYTHONPATH"] = os.path.join(build, "lib", "dlprof-python")
    else:
        env["DLPROF_PYTHON"] = "0"
    return env


def timed(cmd, env):
    """(wall ns, CPU ns of the process and its children, stdout)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter_ns()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter_ns() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e9
    if p.returncode != 0:
        sys.exit("%s failed:\n%s" % (cmd, p.stderr[-2000:]))
    return dt, cpu, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--batches", type=int, default=20000)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    with tempfile.TemporaryDirectory(prefix="dlprof-bench-") as tmp:
        results = {}
        for label, cmd, runs in (
                ("python3 -c pass", [PYTHON, "-c", "pass"], args.runs),
                ("python3 -c 'import torch'", [PYTHON, "-c", "import torch"], max(3, args.runs // 4)),
        ):
            for mode in (False, True):
                results[(label, mode)] = []
            for i in range(runs):
                for mode in ((False, True) if i % 2 == 0 else (True, False)):
                    d = os.path.join(tmp, "t%d" % len(os.listdir(tmp)))
                    dt, cpu, _ = timed(cmd, env_for(build, mode, d))
                    results[(label, mode)].append((dt, cpu))
            for k, what in ((0, "wall"), (1, "CPU ")):
                a = statistics.median(r[k] for r in results[(label, False)]) / 1e6
                b = statistics.median(r[k] for r in results[(label, True)]) / 1e6
                print("%-28s %s DLPROF_PYTHON=0 %8.2f ms   bootstrap %8.2f ms   cost %+7.2f ms"
                      " (%+.1f %%)" % (label, what, a, b, b - a, 100 * (b - a) / a))
        loop = LOOP % {"n": args.batches}
        per = {False: [], True: []}
        for i in range(max(3, args.runs // 4)):
            for mode in ((False, True) if i % 2 == 0 else (True, False)):
                d = os.path.join(tmp, "l%d" % len(os.listdir(tmp)))
                _, _, out = timed([PYTHON, "-c", loop], env_for(build, mode, d))
                per[mode].append([float(v) for v in out.split()])
        for k, label in enumerate(("next(), num_workers=0", "next(), 2 workers",
                                   "optimizer.step()")):
            a = statistics.median(r[k] for r in per[False]) / 1e3
            b = statistics.median(r[k] for r in per[True]) / 1e3
            print("%-28s DLPROF_PYTHON=0 %8.2f us   bootstrap %8.2f us   cost %+7.2f us"
                  % (label, a, b, b - a))


if __name__ == "__main__":
    main()
