#!/usr/bin/env python3
"""What GPU tracing costs a launch-bound PyTorch loop (issue 22).

    bench/gpu_overhead.py [--build build] [--python /usr/bin/python3] [--reps 5]
                          [--configs plain,profiler,...] [--focus plain,profiler,io,default]
                          [--focus-reps N] [--json out.jsonl]

Runs bench/gpu_workload.py (many small kernels, a DataLoader whose workers
read one small file per sample) in one process per run, in every
configuration, round-robin: each round runs every configuration once, in an
order rotated by one from the round before, so drift of the machine falls on
all of them alike. The configurations compared (--focus: plain, profiler, io
and default) get more rounds after those (--focus-reps, 3 x --reps by
default): run to run, a step's time varies by about 10 %, which 3 or 5
rounds cannot tell from a tracer's cost. Configurations (--list shows them):

  plain            no tracer
  profiler         torch.profiler (CPU and CUDA activities) around the loop
  io               dlprof without GPU tracing (DLPROF_TRACE without cuda)
  kernel, memcpy, memset, sync, runtime, driver
                   dlprof with that one CUDA record kind (DLPROF_CUDA=kind)
  default          dlprof as shipped (DLPROF_CUDA unset)
  all              dlprof with every record kind
  default-inline, default-8m, default-flush100, default-flush2000,
  default-convert
                   the default with a plugin setting changed (docs/CUDA.md,
                   "Tuning and cost"): translation in CUPTI's callback, 8 MiB
                   activity buffers, a 100 or 2000 ms flush period (500 by
                   default), CUPTI's own clock
                   converted instead of CUPTI calling dlprof's (the same as
                   default where CUDA 13.0 makes `auto` convert already)

It prints, per configuration, ms per step (median and minimum over the
rounds), the loop's slowdown against the plain run of the same round
(median, min-max and interquartile range over the rounds, and the ratio of
the two configurations' fastest runs, the least disturbed by the machine),
and the process's CPU time per step (median and minimum) and its slowdown
(median, and the ratio of the least CPU-hungry runs): CPU time is steadier
than wall time and is where a tracer's cost on the launch path shows. Every dlprof run's trace is decoded (dlprof-dump --format
jsonl) and checked: every sample read by the plain run is read in the trace,
and (for the kinds recorded) every kernel, copy and memset that
torch.profiler saw in the same loop is in the trace between the loop's
markers (torch.profiler's GPU user annotations, such as
Optimizer.step#SGD.step, are no kernels and are not counted). A lost record, a stderr line from the plugin saying it stepped
aside or lost records, or a failed run makes the exit status 1.

On a machine without a CUDA driver, torch or a GPU it says so and exits 2
within seconds, before making anything. DLPROF_DUMP, when set, names the
dlprof-dump to decode with. --device cpu runs the benchmark itself on the CPU
(tests/gpu/gpu_overhead_test.py): no GPU figures.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "gpu_workload.py")
NO_GPU = 2

# name -> (mode, environment for dlprof runs). mode: plain | profiler | dlprof.
# An environment value None removes the variable.
CONFIGS = {
    "plain": ("plain", {}),
    "profiler": ("profiler", {}),
    "io": ("dlprof", {"DLPROF_TRACE": "posix,stdio,mpiio,app"}),
    "kernel": ("dlprof", {"DLPROF_CUDA": "kernel"}),
    "memcpy": ("dlprof", {"DLPROF_CUDA": "memcpy"}),
    "memset": ("dlprof", {"DLPROF_CUDA": "memset"}),
    "sync": ("dlprof", {"DLPROF_CUDA": "sync"}),
    "runtime": ("dlprof", {"DLPROF_CUDA": "runtime"}),
    "driver": ("dlprof", {"DLPROF_CUDA": "driver"}),
    "default": ("dlprof", {}),
    "all": ("dlprof", {"DLPROF_CUDA": "all"}),
    "default-inline": ("dlprof", {"DLPROF_CUPTI_TRANSLATE": "inline"}),
    "default-8m": ("dlprof", {"DLPROF_CUPTI_BUFFER_KB": "8192"}),
    "default-flush100": ("dlprof", {"DLPROF_CUPTI_FLUSH_MS": "100"}),
    "default-flush2000": ("dlprof", {"DLPROF_CUPTI_FLUSH_MS": "2000"}),
    "default-convert": ("dlprof", {"DLPROF_CUPTI_CLOCK": "convert"}),
}
DEFAULT_CONFIGS = ["plain", "profiler", "io", "kernel", "memcpy", "memset", "sync",
                   "runtime", "driver", "default", "all"]
# The configurations the headline compares: more rounds (--focus-reps).
FOCUS_CONFIGS = ["plain", "profiler", "io", "default"]
DEFAULT_KINDS = {"kernel", "memcpy", "memset", "sync"}
ALL_KINDS = {"kernel", "memcpy", "memset", "sync", "runtime", "driver"}

# Counted from the trace: catalogue kind -> count key.
GPU_KINDS = {"kernel": "kernel", "memcpy": "memcpy", "memset": "memset",
             "synchronization": "sync"}
READ_NAMES = {"read", "pread", "pread64", "readv", "preadv", "preadv64", "preadv2",
              "preadv64v2", "__read_chk", "__pread_chk", "__pread64_chk"}
# Lines of the plugin's stderr that mean the run cannot be trusted.
BAD_STDERR = ("GPU activity is not traced", "GPU records lost", "dlprof was built for CUDA")


# --- pure parts (tests/gpu/gpu_overhead_test.py) ---------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        description="GPU tracing overhead on a launch-bound PyTorch loop (bench/RESULTS_GPU.md).")
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"),
                   help="build directory with lib/libdlprof.so, lib/libdlprof_cupti.so and "
                        "tools/dlprof-dump (default: build)")
    p.add_argument("--python", default="/usr/bin/python3",
                   help="the Python with torch and CUDA (default: /usr/bin/python3)")
    p.add_argument("--configs", default=",".join(DEFAULT_CONFIGS),
                   help="comma-separated configurations (default: %(default)s)")
    p.add_argument("--reps", type=int, default=5, help="rounds (default: 5)")
    p.add_argument("--focus", default=",".join(FOCUS_CONFIGS),
                   help="configurations compared, given more rounds (default: %(default)s)")
    p.add_argument("--focus-reps", type=int, default=0,
                   help="rounds of the --focus configurations in all (default: 3 x --reps)")
    p.add_argument("--epochs", type=int, default=6, help="timed epochs per run (default: 6)")
    p.add_argument("--files", type=int, default=4096,
                   help="sample files, one epoch (default: 4096)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers (default: 2)")
    p.add_argument("--depth", type=int, default=12, help="hidden layers (default: 12)")
    p.add_argument("--json", help="append one JSON line per run to this file")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                   help="cpu: a smoke test of the benchmark itself on the CPU (no GPU "
                        "figures; only plain, profiler and io make sense)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--list", action="store_true", help="list the configurations and exit")
    args = p.parse_args(argv)
    args.config_list = parse_configs(args.configs)
    focus = set(parse_configs(args.focus))
    args.focus_list = [c for c in args.config_list if c in focus]
    if args.focus_reps == 0:
        args.focus_reps = 3 * args.reps
    if args.reps < 1 or args.epochs < 1 or args.files < args.batch:
        p.error("--reps and --epochs must be at least 1, --files at least --batch")
    return args


def parse_configs(text):
    """The configurations named in `text`, in order, plain first (every ratio
    is against it); raises ValueError naming an unknown one."""
    names = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise ValueError("unknown configuration %s (known: %s)"
                         % (",".join(unknown), ",".join(CONFIGS)))
    out = ["plain"] + [n for n in dict.fromkeys(names) if n != "plain"]
    return out


def recorded_kinds(config):
    """The CUDA record kinds a configuration's trace holds."""
    mode, env = CONFIGS[config]
    if mode != "dlprof" or "cuda" not in env.get("DLPROF_TRACE", "cuda"):
        return set()
    kinds = env.get("DLPROF_CUDA")
    if kinds is None:
        return set(DEFAULT_KINDS)
    if kinds == "all":
        return set(ALL_KINDS)
    return set(kinds.split(","))


def schedule(configs, reps, focus=(), focus_reps=0):
    """(round, config) in run order: every round runs each configuration
    once, rotated by one place from the round before; rounds from `reps` to
    `focus_reps` run only the `focus` configurations (in the order of
    `configs`), rotated the same way."""
    out = []
    for r in range(max(reps, focus_reps)):
        these = configs if r < reps else [c for c in configs if c in focus]
        if not these:
            break
        k = r % len(these)
        out.extend((r, c) for c in these[k:] + these[:k])
    return out


def quantile(values, q):
    """Linear-interpolated quantile of a non-empty list, q in [0, 1]."""
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def ratio_summary(times, config, base="plain"):
    """Slowdown of `config` against `base`, one ratio per round that has
    both: {n, median, min, max, q1, q3} or None. times: {config: {round: ns}}."""
    rounds = sorted(set(times.get(config, {})) & set(times.get(base, {})))
    ratios = [times[config][r] / times[base][r] for r in rounds if times[base][r] > 0]
    if not ratios:
        return None
    return {"n": len(ratios), "median": quantile(ratios, 0.5), "min": min(ratios),
            "max": max(ratios), "q1": quantile(ratios, 0.25), "q3": quantile(ratios, 0.75)}


def min_ratio(times, config, base="plain"):
    """The fastest run of `config` over the fastest of `base`, or None."""
    a, b = times.get(config, {}).values(), times.get(base, {}).values()
    return min(a) / min(b) if a and b and min(b) > 0 else None


def count_trace(events, data_dir, marks_dir):
    """Counts in a decoded trace (dicts of dlprof-dump --format jsonl):
    reads of the sample files that moved bytes, over the whole trace (the
    loader's worker processes included), and the GPU records that started
    between the `begin` and `end` markers."""
    begin_path = os.path.join(marks_dir, "begin")
    end_path = os.path.join(marks_dir, "end")
    prefix = data_dir.rstrip("/") + "/"
    begin = end = None
    reads = 0
    gpu = []
    for e in events:
        path = e.get("path", "")
        if e.get("cat") == "cuda":
            kind = GPU_KINDS.get(e.get("kind", ""))
            if kind:
                gpu.append((e["ts"], kind))
        elif path == begin_path and e.get("name", "").startswith("open"):
            begin = e["ts"]
        elif path == end_path and e.get("name", "").startswith("open"):
            end = e["ts"]
        elif e.get("name") in READ_NAMES and path.startswith(prefix) and e.get("bytes", 0) > 0:
            reads += 1
    counts = {"reads": reads, "marks": begin is not None and end is not None}
    for k in GPU_KINDS.values():
        counts[k] = 0
    if counts["marks"]:
        for ts, kind in gpu:
            if begin <= ts <= end:
                counts[kind] += 1
    return counts


def check_counts(config, counts, expected):
    """Problems (strings) with one dlprof run's counts. expected: reads
    (samples of the plain run) and, when a profiler run gave them, kernel,
    memcpy and memset."""
    problems = []
    if counts["reads"] != expected["reads"]:
        problems.append("%s: %d sample reads in the trace, the plain run read %d"
                        % (config, counts["reads"], expected["reads"]))
    kinds = recorded_kinds(config)
    if kinds and not counts["marks"]:
        problems.append("%s: the loop's markers are not in the trace" % config)
        return problems
    for kind in ("kernel", "memcpy", "memset"):
        if kind in kinds and kind in expected and counts[kind] != expected[kind]:
            problems.append("%s: %d %s records in the loop, torch.profiler saw %d"
                            % (config, counts[kind], kind, expected[kind]))
    if "sync" in kinds and counts["sync"] == 0:
        problems.append("%s: no synchronization record in a loop that synchronizes every step"
                        % config)
    return problems


def final_checks(runs, expected):
    """Problems over all runs, once every run is in (a dlprof run may come
    before the round's plain or profiler run). runs: (config, round, counts,
    samples) of the dlprof runs; expected: reads (the plain run's samples)
    and, with a profiler run, kernel, memcpy and memset. Without a profiler
    run the runs that record a kind must at least agree on its count."""
    problems = []
    seen = {}
    for config, rnd, counts, samples in runs:
        if samples != expected.get("reads", samples):
            problems.append("%s round %d: the loop read %d samples, the plain run %d"
                            % (config, rnd, samples, expected["reads"]))
        want = dict(expected, reads=expected.get("reads", samples))
        problems += ["%s (round %d)" % (s, rnd) for s in check_counts(config, counts, want)]
        for kind in ("kernel", "memcpy", "memset"):
            if kind in recorded_kinds(config):
                seen.setdefault(kind, {}).setdefault(counts[kind], []).append(
                    "%s/%d" % (config, rnd))
    for kind, by_count in sorted(seen.items()):
        if len(by_count) > 1 and kind not in expected:
            where = "; ".join("%d in %s" % (n, ",".join(w)) for n, w in sorted(by_count.items()))
            problems.append("%s records differ between runs of one loop: %s" % (kind, where))
    return problems


def table(configs, times, step_ns, cpu_times, cpu_step_ns, walls):
    """The results, one line per configuration: ms/step (median, min), the
    slowdown against plain (median, of the fastest runs, min-max, IQR, the
    rounds compared), CPU ms/step (median, min) and its slowdown (median, of
    the least CPU-hungry runs), wall s."""
    lines = ["%-17s %8s %8s %9s %9s %17s %17s %4s %8s %8s %9s %9s %7s"
             % ("config", "ms/step", "min ms", "slowdown", "min/min", "min-max", "IQR", "n",
                "cpu ms", "cpu min", "cpu slow", "cpu m/m", "wall s")]
    pct = lambda r: "%8.1f%%" % (100 * (r - 1)) if r is not None else "%9s" % "-"  # noqa: E731
    for config in configs:
        if config not in step_ns:
            lines.append("%-17s   (no successful run)" % config)
            continue
        ms = quantile(step_ns[config], 0.5) / 1e6
        least = min(step_ns[config]) / 1e6
        cpu = cpu_step_ns.get(config)
        cpu_ms = ("%8.3f %8.3f" % (quantile(cpu, 0.5) / 1e6, min(cpu) / 1e6) if cpu
                  else "%8s %8s" % ("-", "-"))
        c = ratio_summary(cpu_times, config)
        s = ratio_summary(times, config)
        if s is None:
            lines.append("%-17s %8.3f %8.3f %9s %9s %17s %17s %4s %s %9s %9s %7.1f"
                         % (config, ms, least, "", "", "", "", "", cpu_ms, "", "",
                            quantile(walls[config], 0.5)))
            continue
        lines.append("%-17s %8.3f %8.3f %s %s %7.1f%% to %5.1f%% %7.1f%% to %5.1f%% %4d %s %s %s "
                     "%7.1f"
                     % (config, ms, least, pct(s["median"]), pct(min_ratio(times, config)),
                        100 * (s["min"] - 1), 100 * (s["max"] - 1), 100 * (s["q1"] - 1),
                        100 * (s["q3"] - 1), s["n"], cpu_ms, pct(c["median"] if c else None),
                        pct(min_ratio(cpu_times, config)), quantile(walls[config], 0.5)))
    return "\n".join(lines)


def no_gpu_reason(probe_rc, probe_out):
    """Why the probe says this machine cannot run the benchmark, or None."""
    if probe_rc == 0:
        return None
    last = (probe_out.strip().splitlines() or ["no output"])[-1]
    return last


# --- running ----------------------------------------------------------------------

PROBE = """
import ctypes, sys
try:
    ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print("no CUDA driver (libcuda.so.1: %s)" % e)
    sys.exit(3)
try:
    import torch
except ImportError as e:
    print("no torch (%s)" % e)
    sys.exit(3)
if not torch.cuda.is_available():
    print("torch %s sees no CUDA GPU" % torch.__version__)
    sys.exit(3)
print(torch.cuda.get_device_name(0), "torch", torch.__version__)
"""


def probe_gpu(python):
    try:
        p = subprocess.run([python, "-c", PROBE], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=180)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 1, "cannot run %s: %s" % (python, err)
    return p.returncode, p.stdout


def make_data(data_dir, files, features=256):
    """Sample files of `features` float32 values in [-1, 1)."""
    import array
    import random
    rng = random.Random(22)
    os.makedirs(data_dir)
    for i in range(files):
        values = array.array("f", (rng.uniform(-1, 1) for _ in range(features)))
        with open(os.path.join(data_dir, "s%06d.bin" % i), "wb") as f:
            f.write(values.tobytes())


def run_env(config, lib, trace_dir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DLPROF_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    mode, extra = CONFIGS[config]
    if mode == "dlprof":
        env.update(LD_PRELOAD=lib, DLPROF_DIR=trace_dir, DLPROF_QUIET="1")
        env.update(extra)
    return env


def decode_counts(dump, trace_dir, data_dir, marks_dir):
    """Counts of a trace directory, streamed from dlprof-dump --format jsonl
    (a run's trace holds a few hundred thousand events)."""
    with tempfile.TemporaryFile(mode="w+") as err, \
            subprocess.Popen([dump, "--format", "jsonl", trace_dir], stdout=subprocess.PIPE,
                             stderr=err, text=True) as p:
        counts = count_trace((json.loads(line) for line in p.stdout), data_dir, marks_dir)
        rc = p.wait()
        err.seek(0)
        return counts, rc, err.read()


def main(argv):
    try:
        args = parse_args(argv)
    except ValueError as err:
        print("gpu_overhead: %s" % err, file=sys.stderr)
        return 64
    if args.list:
        for name in CONFIGS:
            mode, env = CONFIGS[name]
            print("%-17s %-8s %s" % (name, mode, " ".join("%s=%s" % kv for kv in env.items())))
        return 0

    if args.device == "cuda":
        rc, out = probe_gpu(args.python)
        why = no_gpu_reason(rc, out)
        if why:
            print("gpu_overhead: this machine cannot run the GPU benchmark: %s. "
                  "Nothing was measured; run it on a machine with an NVIDIA GPU, its driver "
                  "and torch with CUDA (--python)." % why, file=sys.stderr)
            return NO_GPU
        print("GPU: %s" % out.strip())

    build = os.path.abspath(args.build)
    lib = os.path.join(build, "lib", "libdlprof.so")
    plugin = os.path.join(build, "lib", "libdlprof_cupti.so")
    dump = os.path.join(build, "tools", "dlprof-dump")
    if args.device == "cpu":
        plugin = lib  # no GPU records either way
    dump = os.environ.get("DLPROF_DUMP", dump)
    for what in (lib, plugin, dump):
        if not os.path.exists(what):
            print("gpu_overhead: %s is missing: build dlprof with the CUDA toolkit first"
                  % what, file=sys.stderr)
            return 1

    work = tempfile.mkdtemp(prefix="dlprof-gpu-bench-")
    data_dir = os.path.join(work, "data")
    make_data(data_dir, args.files)
    jsonl = open(args.json, "a") if args.json else None
    times, step_ns, expected, problems, runs, walls = {}, {}, {}, [], [], {}
    cpu_times, cpu_step_ns = {}, {}
    plan = schedule(args.config_list, args.reps, args.focus_list, args.focus_reps)
    more = ""
    if args.focus_reps > args.reps and args.focus_list:
        more = ", %d more of %s" % (args.focus_reps - args.reps, ",".join(args.focus_list))
    print("%d runs: %d rounds of %s%s" % (len(plan), args.reps, ",".join(args.config_list), more))
    try:
        for i, (rnd, config) in enumerate(plan):
            marks = os.path.join(work, "marks-%d-%s" % (rnd, config))
            traces = os.path.join(work, "traces-%d-%s" % (rnd, config))
            os.makedirs(marks)
            cmd = [args.python, WORKLOAD, "--data", data_dir, "--marks", marks,
                   "--epochs", str(args.epochs), "--batch", str(args.batch),
                   "--workers", str(args.workers), "--depth", str(args.depth),
                   "--device", args.device]
            if CONFIGS[config][0] == "profiler":
                cmd.append("--profiler")
            t0 = time.monotonic()
            p = subprocess.run(cmd, env=run_env(config, lib, traces), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=900)
            wall = time.monotonic() - t0
            lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
            if p.returncode != 0 or not lines:
                problems.append("%s round %d: exit %d: %s" % (config, rnd, p.returncode,
                                                              p.stderr.strip()[-2000:]))
                print("  [%d/%d] %-17s FAILED (exit %d)" % (i + 1, len(plan), config,
                                                          p.returncode))
                continue
            res = json.loads(lines[-1])
            times.setdefault(config, {})[rnd] = res["loop_ns"]
            step_ns.setdefault(config, []).append(res["loop_ns"] / res["steps"])
            if "cpu_ns" in res:
                cpu_times.setdefault(config, {})[rnd] = res["cpu_ns"]
                cpu_step_ns.setdefault(config, []).append(res["cpu_ns"] / res["steps"])
            walls.setdefault(config, []).append(wall)
            note = ""
            if config == "plain":
                expected.setdefault("reads", res["samples"])
            if "profiler" in res:
                for k in ("kernel", "memcpy", "memset"):
                    if expected.setdefault(k, res["profiler"][k]) != res["profiler"][k]:
                        problems.append("profiler round %d saw %d %s records, an earlier "
                                        "round %d" % (rnd, res["profiler"][k], k, expected[k]))
                note = (" profiler saw %(kernel)d kernels, %(memcpy)d copies "
                        "(and %(annotation)d GPU annotations)" % res["profiler"])
            if CONFIGS[config][0] == "dlprof":
                for line in p.stderr.splitlines():
                    if any(b in line for b in BAD_STDERR):
                        problems.append("%s round %d: %s" % (config, rnd, line.strip()))
                counts, drc, derr = decode_counts(dump, traces, data_dir, marks)
                if drc != 0:
                    problems.append("%s round %d: dlprof-dump exit %d: %s"
                                    % (config, rnd, drc, derr.strip()[-500:]))
                res["counts"] = counts
                runs.append((config, rnd, counts, res["samples"]))
                note = (" reads %(reads)d kernels %(kernel)d copies %(memcpy)d sync %(sync)d"
                        % counts)
                shutil.rmtree(traces, ignore_errors=True)
            print("  [%d/%d] %-17s %7.3f ms/step  %.1f s wall%s"
                  % (i + 1, len(plan), config, res["loop_ns"] / res["steps"] / 1e6, wall, note),
                  flush=True)
            if jsonl:
                jsonl.write(json.dumps(dict(res, config=config, round=rnd, wall_s=wall)) + "\n")
                jsonl.flush()
    finally:
        if jsonl:
            jsonl.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    problems += final_checks(runs, expected)
    print()
    print(table(args.config_list, times, step_ns, cpu_times, cpu_step_ns, walls))
    if "default" in times and "profiler" in times:
        d, t = ratio_summary(times, "default"), ratio_summary(times, "profiler")
        if d and t:
            print("\ndefault vs torch.profiler: %.1f%% vs %.1f%% (target: at most half); "
                  "fastest runs: %.1f%% vs %.1f%%"
                  % (100 * (d["median"] - 1), 100 * (t["median"] - 1),
                     100 * (min_ratio(times, "default") - 1),
                     100 * (min_ratio(times, "profiler") - 1)))
        dc, tc = ratio_summary(cpu_times, "default"), ratio_summary(cpu_times, "profiler")
        if dc and tc:
            print("CPU time per step: %.1f%% vs %.1f%%; least CPU-hungry runs: %.1f%% vs %.1f%%"
                  % (100 * (dc["median"] - 1), 100 * (tc["median"] - 1),
                     100 * (min_ratio(cpu_times, "default") - 1),
                     100 * (min_ratio(cpu_times, "profiler") - 1)))
    if problems:
        print("\nPROBLEMS (%d):" % len(problems))
        for s in problems:
            print("  " + s)
        return 1
    print("\nno record lost: every read, kernel, copy and memset counted")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
