"""GPU tests: a CUDA program and a PyTorch training step under LD_PRELOAD.

    gpu_test.py cuda_program | torch_step

Each case prints what it checked and exits 0, 1 on a failed check, or 77
("skip", ctest SKIP_RETURN_CODE) with the reason on stdout when the machine
cannot run it: no CUPTI plugin built, no CUDA driver, no GPU, no torch.

Locations come from the environment, as ctest sets it (tests/gpu/CMakeLists.txt):
  DLPROF_LIB, DLPROF_DUMP, DLPROF_CUPTI_PLUGIN, DLPROF_GPU_PROGRAM,
  DLPROF_SYSTEM_PYTHON.
"""

import ctypes
import os
import shutil
import sys
import tempfile

import dltest  # (run, traced_env, decode, READ_NAMES)

HERE = os.path.dirname(os.path.abspath(__file__))

SKIP = 77
PLUGIN = os.environ.get("DLPROF_CUPTI_PLUGIN", "")
PROGRAM = os.environ.get("DLPROF_GPU_PROGRAM", "")


class Skip(Exception):
    pass


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)
    print("ok:", what)


# --- reading GPU events from dlprof-dump --format jsonl -----------------------

KIND_NAMES = {"kernel", "memcpy", "memcpy_p2p", "memset", "synchronization",
              "cuda_runtime", "cuda_driver", "cupti_clock"}


def gpu_kind(e):
    """The catalogue name of a cuda event: the `kind` key, or (dumps that
    print the catalogue name as `name` and the string as `path`) `name`."""
    return e.get("kind") or e["name"]


def gpu_name(e):
    """Kernel name, "memcpy HtoD", ...: `name`, or `path` in older dumps."""
    return e["name"] if "kind" in e else e.get("path", "")


def gpu_events(events, kind):
    return [e for e in events if e.get("cat") == "cuda" and gpu_kind(e) == kind]


def end(e):
    return e["ts"] + e["dur"]


# --- preconditions ----------------------------------------------------------------

def require_tracer():
    for what, path in (("DLPROF_LIB", dltest.LIB), ("DLPROF_DUMP", dltest.DUMP)):
        if not path or not os.path.exists(path):
            raise Failed("%s=%r does not exist: build the project first" % (what, path))
    if not PLUGIN or not os.path.exists(PLUGIN):
        raise Skip("the CUPTI plugin was not built (no CUDA toolkit with CUPTI 13.x at configure time)")


def require_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        raise Skip("no CUDA driver on this machine (libcuda.so.1: %s)" % err)


def run_traced(cmd, tmp, extra=None, timeout=300):
    traces = os.path.join(tmp, "traces")
    env = dltest.traced_env(traces, extra, quiet=False)  # its messages are read below
    p = dltest.run(cmd, env, timeout=timeout)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    if p.returncode == SKIP:
        raise Skip(p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "program skipped")
    if p.returncode != 0:
        raise Failed("%s exited %d" % (cmd, p.returncode))
    if "dlprof was built for CUDA" in p.stderr:
        # e.g. a torch built for CUDA 12 loaded its libcupti first.
        raise Skip("the process's libcupti is not the one dlprof was built for: "
                   + p.stderr.strip())
    if "GPU activity is not traced" in p.stderr:
        raise Failed("the plugin stepped aside: " + p.stderr.strip())
    trace = dltest.decode(traces)
    check(trace.dump_rc == 0, "dlprof-dump decodes the trace (%s)" % trace.dump_stderr.strip())
    return p, trace.events


def between(read, before, after):
    """Prints the margins; true when `read` lies after `before` ends and
    before `after` starts on the common clock."""
    gap_before = read["ts"] - end(before)
    gap_after = after["ts"] - end(read)
    print("   %s ends %d ns before the read; %s starts %d ns after it"
          % (gpu_name(before), gap_before, gpu_name(after), gap_after))
    return gap_before >= 0 and gap_after >= 0


# --- cases --------------------------------------------------------------------------

def cuda_program(tmp):
    require_tracer()
    if not PROGRAM or not os.path.exists(PROGRAM):
        raise Skip("the CUDA test program was not built (no CUDA compiler at configure time)")
    require_driver()
    data = os.path.join(tmp, "data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(1 << 16))
    p, events = run_traced([PROGRAM, data], tmp)
    facts = dict(l.split(" ", 1) for l in p.stdout.splitlines() if " " in l)
    launched = int(facts["KERNELS"])
    nbytes = int(facts["BYTES"])

    kernels = sorted(gpu_events(events, "kernel"), key=lambda e: e["ts"])
    print("   kernels recorded %d, launched %d" % (len(kernels), launched))
    check(len(kernels) == launched, "every launched kernel is recorded once")
    names = {gpu_name(k) for k in kernels}
    for want in ("fill_kernel", "add_kernel", "scale_kernel"):
        check(any(n.startswith(want + "(") for n in names),
              "kernel %s recorded with its demangled name (%s)" % (want, sorted(names)))
    check(all(k.get("device", k.get("fd", -1)) >= 0 for k in kernels),
          "every kernel names its device")

    copies = gpu_events(events, "memcpy")
    kinds = sorted(gpu_name(c) for c in copies)
    check("memcpy HtoD" in kinds and "memcpy DtoH" in kinds, "copies both ways (%s)" % kinds)
    for c in copies:
        check(c.get("bytes", c.get("size")) == nbytes, "%s moved %d bytes" % (gpu_name(c), nbytes))
    check(len(gpu_events(events, "memset")) == 1, "one memset")
    syncs = gpu_events(events, "synchronization")
    print("   synchronization records: %d (CUDA 13.0 GA records none for "
          "cudaDeviceSynchronize; 13.0 Update 1 fixed it)" % len(syncs))
    clocks = gpu_events(events, "cupti_clock")
    check(clocks, "the clock method is recorded")
    print("   clock method: %s" % gpu_name(clocks[0]))

    reads = [e for e in events if e.get("path") == data and e["name"] in dltest.READ_NAMES]
    check(len(reads) == 1, "the file read is recorded")
    read = reads[0]
    before = [k for k in kernels if gpu_name(k).startswith(facts["BEFORE_READ"] + "(")]
    after = [k for k in kernels if gpu_name(k).startswith(facts["AFTER_READ"] + "(")]
    check(between(read, before[-1], after[0]),
          "the read sits between the last %s and %s on the timeline"
          % (facts["BEFORE_READ"], facts["AFTER_READ"]))


TORCH_PROBE = "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"


def torch_step(tmp):
    require_tracer()
    require_driver()
    python = os.environ.get("DLPROF_SYSTEM_PYTHON", "/usr/bin/python3")
    probe = dltest.run([python, "-c", TORCH_PROBE], dltest.base_env(), timeout=300)
    if probe.returncode != 0:
        raise Skip("%s has no torch with a usable GPU (%s)"
                   % (python, (probe.stderr.strip().splitlines() or ["no CUDA device"])[-1]))
    data = os.path.join(tmp, "batches.bin")
    steps = 5
    p, events = run_traced([python, os.path.join(HERE, "torch_step.py"), data, str(steps)], tmp)
    kernels = sorted(gpu_events(events, "kernel"), key=lambda e: e["ts"])
    print("   kernels recorded: %d" % len(kernels))
    check(len(kernels) >= steps * 3, "forward, backward and optimizer kernels are recorded")
    htod = [c for c in gpu_events(events, "memcpy") if gpu_name(c) == "memcpy HtoD"]
    check(len(htod) >= steps, "each batch is copied to the GPU")
    reads = sorted((e for e in events if e.get("path") == data
                    and e["name"] in dltest.READ_NAMES | {"fread"}), key=lambda e: e["ts"])
    check(len(reads) >= steps, "each batch is read from its file (%d reads)" % len(reads))
    # Batch i+1 is read after step i's kernels ran (the script synchronizes).
    for r in reads[1:]:
        earlier = [k for k in kernels if end(k) <= r["ts"]]
        check(earlier, "kernels of the previous step end before a later read")
        later = [k for k in kernels if k["ts"] >= end(r)]
        check(later, "kernels of the next step start after the read")


def main():
    case = sys.argv[1] if len(sys.argv) > 1 else ""
    cases = {"cuda_program": cuda_program, "torch_step": torch_step}
    if case not in cases:
        print("usage: gpu_test.py %s" % "|".join(cases))
        return 2
    tmp = tempfile.mkdtemp(prefix="dlprof-gpu-")
    try:
        cases[case](tmp)
    except Skip as why:
        print("SKIP:", why)
        return SKIP
    except Failed as what:
        print("FAILED:", what)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
