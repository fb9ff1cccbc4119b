#!/usr/bin/python3
"""Run DLIO (argonne-lcf/dlio_benchmark), unmodified, under dlprof, and set
DLIO's own measurements beside dlprof's verdict (issue 48's DLIO test).

    bench/dlio/run_dlio.py --dlio /work/scratch/dlio [--work /work/scratch/dlio-runs]
        [--workloads npz,hdf5,io-only] [--shapes a,b,c] [--ranks 2]
        [--build build] [--set ++workload.KEY=VALUE ...] [--keep]

For each workload it generates a small data set once (DLIO's own generator,
untraced), then runs DLIO's PyTorch training for each shape, traced with
LD_PRELOAD=BUILD/lib/libdlprof.so and DLPROF_DIR=RUN/trace:

  a  one process, no mpirun (as DLIO's docs run it);
  b  `mpirun -n RANKS` (Open MPI);
  c  one process with checkpointing (a save every 5 steps: DLIO's
     `checkpoint.steps_between_checkpoints`, an 8 MiB model), 2 read
     threads and non-persistent workers over 3 epochs, so that every epoch
     waits for its workers' start-up (DLIO always makes its workers
     persistent: plugins/dlio_plugins/nonpersistent.py, loaded through DLIO's
     `reader.data_loader_classname`, changes only that);
  c2 shape c under `mpirun -n RANKS` (not run unless asked).

Workloads: `npz` and `hdf5` (DLIO's readers of those formats: np.load and
h5py), `io-only` (npz with `computation_time=0`: the loop does nothing but
wait for batches; DLIO's AU is 0 by its definition) and `npz-odirect`
(DLIO's O_DIRECT npz reader, `reader.odirect=True`; not run unless asked).
Every run has `++workload.output.metric.exclude_start_steps=0`, so that
DLIO's AU counts the first step, as the verdict does.

Each run's folder (WORK/runs/WORKLOAD-SHAPE) keeps DLIO's output folder
(`out/`: RANK_output.json, RANK_per_epoch_stats.json, summary.json, dlio.log,
.hydra/), its console (`console.txt`), the trace (`trace/`), the summary
(`summary.json`, `headline.txt`) and the comparison (`compare.json`, printed
as a table by compare.py). WORK/results.json gathers them all.

How DLIO's figures relate to the verdict's, AU included: dlio_truth.py.
DLIO runs on Debian's python3 (torch 1.13) with the stand-ins of
bench/dlio/standins for hydra-core and pydftracer (bench/dlio/README.md).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from compare import compare_run, format_table  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's, with torch, mpi4py, h5py, omegaconf
DLIO_BIN = os.path.join(HERE, "bin", "dlio_benchmark")
MPIRUN = "mpirun.openmpi"

WORKLOADS = {
    # name: (data set format, overrides)
    "npz": ("npz", []),
    "hdf5": ("hdf5", []),
    "io-only": ("npz", ["++workload.train.computation_time=0"]),
    "npz-odirect": ("npz", ["++workload.reader.odirect=True"]),
}
DEFAULT_WORKLOADS = "npz,hdf5,io-only"

NONPERSISTENT = "dlio_plugins.nonpersistent.NonPersistentTorchDataLoader"
CHECKPOINTING = [
    "++workload.workflow.checkpoint=True",
    "++workload.checkpoint.steps_between_checkpoints=5",
    "++workload.model.model_size_bytes=8388608",
    "++workload.reader.read_threads=2",
    "++workload.train.epochs=3",
    f"++workload.reader.data_loader_classname={NONPERSISTENT}",
    "++workload.reader.data_loader_sampler=index",
]
SHAPES = {
    # name: (ranks or None for --ranks, overrides, description)
    "a": (1, [], "one process, no mpirun"),
    "b": (None, [], "mpirun -n RANKS"),
    "c": (1, CHECKPOINTING, "one process; checkpoints every 5 steps, 2 non-persistent workers, 3 epochs"),
    "c2": (None, CHECKPOINTING, "shape c under mpirun -n RANKS"),
}
DEFAULT_SHAPES = "a,b,c"

# Small enough for well under a minute a run on 2 cores: 64 files of 1 MiB,
# batches of 4 (16 steps an epoch in one process), 10 ms of emulated compute.
DATASET = [
    "++workload.dataset.num_files_train=64",
    "++workload.dataset.num_files_eval=0",
    "++workload.dataset.num_subfolders_train=0",
    "++workload.dataset.num_subfolders_eval=0",
    "++workload.dataset.record_length_bytes=1048576",
    "++workload.dataset.record_length_bytes_stdev=0",
]
TRAINING = [
    "++workload.workflow.evaluation=False",
    "++workload.reader.batch_size=4",
    "++workload.reader.read_threads=1",
    "++workload.train.epochs=2",
    "++workload.train.computation_time=0.01",
    "++workload.output.metric.exclude_start_steps=0",
]


def base_env(dlio):
    env = dict(os.environ)
    paths = [dlio, os.path.join(HERE, "standins"), os.path.join(HERE, "plugins")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.pop("LD_PRELOAD", None)
    env.pop("DLPROF_DIR", None)
    return env


def check_setup(dlio, lib, dump):
    problems = []
    if not os.path.isfile(os.path.join(dlio, "dlio_benchmark", "main.py")):
        problems.append(f"{dlio} is not a DLIO checkout (no dlio_benchmark/main.py); see bench/dlio/README.md")
    for path in (lib, dump):
        if not os.path.exists(path):
            problems.append(f"{path} is missing: build dlprof first (scripts/build.sh)")
    missing = subprocess.run(
        [PYTHON, "-c", "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] "
         "if u.find_spec(m) is None))", "torch", "numpy", "pandas", "mpi4py", "h5py", "omegaconf",
         "psutil", "yaml"], capture_output=True, text=True).stdout.split()
    if missing:
        problems.append(f"{PYTHON} lacks {', '.join(missing)}: apt-get install "
                        + " ".join({"h5py": "python3-h5py", "omegaconf": "python3-omegaconf",
                                    "psutil": "python3-psutil", "yaml": "python3-yaml",
                                    "mpi4py": "python3-mpi4py", "torch": "python3-torch",
                                    "pandas": "python3-pandas", "numpy": "python3-numpy"}[m]
                                   for m in missing))
    if shutil.which(MPIRUN) is None:
        problems.append(f"{MPIRUN} not found: apt-get install openmpi-bin")
    if problems:
        sys.exit("run_dlio.py: " + "\n  ".join(problems))


def generate(dlio, work, fmt, extra):
    """DLIO's own generator, untraced, once per format (DLIO's docs generate
    first and train in a second run, so that generation is not measured)."""
    data = os.path.join(work, "data", fmt)
    done = os.path.join(data, ".generated")
    cmd = ["nice", "-n", "5", DLIO_BIN, "workload=default", f"++workload.dataset.data_folder={data}",
           f"++workload.dataset.format={fmt}", *DATASET, *extra,
           "++workload.workflow.generate_data=True", "++workload.workflow.train=False",
           "++workload.workflow.evaluation=False",
           f"hydra.run.dir={os.path.join(work, 'data', fmt + '-generation')}"]
    if os.path.exists(done):
        with open(done, encoding="utf-8") as f:
            if f.read() == " ".join(cmd):
                return data  # made by the same command: reused
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    print(f"-- generating the {fmt} data set in {data}", flush=True)
    if subprocess.run(cmd, env=base_env(dlio), cwd=work, timeout=600,
                      stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit(f"run_dlio.py: DLIO could not generate the {fmt} data set (its message above); "
                 f"the command: {' '.join(cmd)}")
    with open(done, "w", encoding="utf-8") as f:
        f.write(" ".join(cmd))
    return data


def record_checkpoint_files(run_dir):
    """The files DLIO's saves wrote and their sizes: the truth for the
    verdict's checkpoint bytes (kept after the files are deleted)."""
    root = os.path.join(run_dir, "checkpoints")
    files = [os.path.join(d, f) for d, _, names in os.walk(root) for f in names]
    if files:
        with open(os.path.join(run_dir, "checkpoint_files.json"), "w", encoding="utf-8") as f:
            json.dump({"files": len(files), "bytes": sum(os.path.getsize(p) for p in files),
                       "folders": len({os.path.dirname(p) for p in files})}, f)


def run_one(dlio, work, build, workload, shape, ranks, extra, keep):
    fmt, w_over = WORKLOADS[workload]
    n, s_over, desc = SHAPES[shape]
    n = n or ranks
    data = generate(dlio, work, fmt, extra)
    run_dir = os.path.join(work, "runs", f"{workload}-{shape}")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    overrides = ["workload=default", f"++workload.model.name=dlprof_{workload}",
                 f"++workload.dataset.data_folder={data}", f"++workload.dataset.format={fmt}",
                 *DATASET, *TRAINING, *w_over, *s_over, *extra,
                 f"++workload.checkpoint.checkpoint_folder={os.path.join(run_dir, 'checkpoints')}",
                 f"hydra.run.dir={os.path.join(run_dir, 'out')}"]
    env = base_env(dlio)
    env["LD_PRELOAD"] = os.path.join(build, "lib", "libdlprof.so")
    env["DLPROF_DIR"] = os.path.join(run_dir, "trace")
    launch = ["nice", "-n", "5"]
    if n > 1:
        launch += [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-n", str(n),
                   "-x", "LD_PRELOAD", "-x", "DLPROF_DIR", "-x", "PYTHONPATH"]
    cmd = launch + [DLIO_BIN] + overrides
    with open(os.path.join(run_dir, "command.txt"), "w", encoding="utf-8") as f:
        f.write(" ".join(cmd) + "\n")
    print(f"-- {workload}-{shape}: {desc.replace('RANKS', str(n))}", flush=True)
    t0 = time.time()
    with open(os.path.join(run_dir, "console.txt"), "w", encoding="utf-8") as console:
        rc = subprocess.run(cmd, env=env, cwd=run_dir, stdout=console, stderr=subprocess.STDOUT,
                            timeout=600).returncode
    wall = time.time() - t0
    record_checkpoint_files(run_dir)
    if not keep:
        shutil.rmtree(os.path.join(run_dir, "checkpoints"), ignore_errors=True)
    if rc != 0:
        print(f"   DLIO failed (exit {rc}); see {run_dir}/console.txt", flush=True)
        return {"run": f"{workload}-{shape}", "error": f"exit {rc}", "wall_s": wall}
    result = compare_run(run_dir, os.path.join(build, "tools", "dlprof-dump"))
    result.update({"run": f"{workload}-{shape}", "shape": desc.replace("RANKS", str(n)),
                   "processes": n, "wall_s": wall, "run_dir": run_dir})
    print(format_table(f"{workload}-{shape} ({result['shape']}; {wall:.1f} s)", result), flush=True)
    return result


def _get(result, figure, side):
    for r in result.get("rows", []):
        if r["figure"] == figure:
            return r[side]
    return None


def overview(results):
    """One line a run: the figures the issue's test compares."""
    head = (f"{'run':16} {'DLIO wait s':>11} {'dlprof s':>9} {'ratio':>6} {'DLIO AU %':>9} "
            f"{'DLIO wait %':>11} {'dlprof %':>8} {'ckpt DLIO s':>11} {'dlprof s':>9}  verdict")
    lines = ["", "== overview (DLIO's own clocks / dlprof's verdict)", head]

    def f(x, d=3):
        return "-" if x is None else f"{x:.{d}f}"

    for res in results:
        if "error" in res:
            lines.append(f"{res['run']:16} {res['error']}")
            continue
        w_dlio, w_dlprof = _get(res, "batch wait (s)", "dlio"), _get(res, "batch wait (s)", "dlprof")
        ratio = w_dlprof / w_dlio if w_dlio and w_dlprof is not None else None
        lines.append(
            f"{res['run']:16} {f(w_dlio):>11} {f(w_dlprof):>9} {f(ratio, 2):>6} "
            f"{f(res['dlio']['job']['au_headline_pct'], 1):>9} {f(_get(res, 'batch wait / loop (%)', 'dlio'), 1):>11} "
            f"{f(_get(res, 'batch wait / loop (%)', 'dlprof'), 1):>8} "
            f"{f(_get(res, 'checkpoint time (s)', 'dlio')):>11} "
            f"{f(_get(res, 'checkpoint time (s)', 'dlprof')):>9}  {res['headline'][:90]}")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description="Run DLIO under dlprof and compare its figures with the verdict.",
                                epilog="See bench/dlio/README.md.")
    p.add_argument("--dlio", required=True, help="DLIO checkout (the folder holding dlio_benchmark/)")
    p.add_argument("--work", default="/work/scratch/dlio-runs", help="data sets, runs and traces go here")
    p.add_argument("--build", default=os.path.join(REPO, "build"), help="dlprof's build folder")
    p.add_argument("--workloads", default=DEFAULT_WORKLOADS, help=f"of {', '.join(WORKLOADS)}")
    p.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"of {', '.join(SHAPES)}")
    p.add_argument("--ranks", type=int, default=2, help="ranks of shapes b and c2")
    p.add_argument("--set", action="append", default=[], metavar="OVERRIDE",
                   help="another DLIO override for every run (Hydra syntax), e.g. ++workload.train.epochs=4")
    p.add_argument("--keep", action="store_true", help="keep the checkpoints DLIO wrote")
    a = p.parse_args()
    dlio, work, build = (os.path.abspath(x) for x in (a.dlio, a.work, a.build))
    check_setup(dlio, os.path.join(build, "lib", "libdlprof.so"), os.path.join(build, "tools", "dlprof-dump"))
    workloads = [w for w in a.workloads.split(",") if w]
    shapes = [s for s in a.shapes.split(",") if s]
    for name, table in ((workloads, WORKLOADS), (shapes, SHAPES)):
        unknown = [x for x in name if x not in table]
        if unknown:
            sys.exit(f"run_dlio.py: unknown {', '.join(unknown)} (known: {', '.join(table)})")
    os.makedirs(work, exist_ok=True)
    results = []
    for w in workloads:
        for s in shapes:
            results.append(run_one(dlio, work, build, w, s, a.ranks, a.set, a.keep))
    with open(os.path.join(work, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    print(overview(results))
    print(f"\n(all figures: {os.path.join(work, 'results.json')})")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
