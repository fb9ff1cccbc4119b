"""The harness for the tests of tests/annotations: annotation regions (C API,
Python module, NVTX), call stacks and the launcher, checked through the
decoder's view of the traces (dlprof_annotations_inspect, which uses
lib/read/regions.cc and lib/read/stacks.cc).

Besides what the harness reads from the environment (dltest's docstring),
ctest sets for these tests:

  DLPROF_INSPECT    dlprof_annotations_inspect
  DLPROF_HAVE_NVTX  1 when the NVTX test program was built

A traced program here runs with the dlprof package (build/python) alone on
its PYTHONPATH and without any launcher's rank variables or injection
paths: what it records comes from its own annotations.
"""

import json
import os
import subprocess

import dltest
from dltest import (DUMP, LAUNCHER, LIB, SYSTEM_PYTHON, has_torch, program, run,  # noqa: F401
                    script, trace_files)

INSPECT = os.environ.get("DLPROF_INSPECT", "")
PYDIR = dltest.PYTHON_DIR
HAVE_NVTX = os.environ.get("DLPROF_HAVE_NVTX", "0") == "1"
HERE = os.path.join(dltest.TESTS, "annotations")


def check_environment():
    dltest.check_environment()
    missing = [n for n, v in (("DLPROF_INSPECT", INSPECT), ("DLPROF_LAUNCHER", LAUNCHER),
                              ("DLPROF_PYTHON_DIR", PYDIR)) if not v]
    if missing:
        raise RuntimeError("%s not set: run these tests through ctest "
                           "(ctest -L annotations)" % ", ".join(missing))
    for path in (INSPECT, LAUNCHER, PYDIR):
        if not os.path.exists(path):
            raise RuntimeError("%s does not exist: build the project first" % path)


def base_env():
    env = dltest.base_env()
    for var in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH", "PYTHONPATH",
                "RANK", "WORLD_SIZE", "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid",
                "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "PMIX_SIZE", "PMIX_NAMESPACE",
                "PALS_RANKID", "PALS_SIZE", "FLUX_TASK_RANK", "FLUX_JOB_SIZE",
                "JSM_NAMESPACE_RANK", "JSM_NAMESPACE_SIZE", "MV2_COMM_WORLD_RANK",
                "MV2_COMM_WORLD_SIZE", "ALPS_APP_PE", "TORCHELASTIC_RUN_ID"):
        env.pop(var, None)
    return env


def traced_env(trace_dir, extra=None, preload=True, pythonpath=True, quiet=True):
    env = base_env()
    if pythonpath:
        env["PYTHONPATH"] = PYDIR
    return dltest.traced_env(trace_dir, extra, quiet, preload, base=env)


class View:
    """What dlprof_annotations_inspect printed for a trace directory."""

    def __init__(self, lines, rc, stderr):
        self.rc = rc
        self.stderr = stderr
        self.events = [l for l in lines if l["type"] == "event"]
        self.region_stats = [l for l in lines if l["type"] == "region_stats"]
        self.call_sites = [l for l in lines if l["type"] == "call_site"]
        self.totals = [l for l in lines if l["type"] == "totals"][0]

    def io(self, names=None):
        return [e for e in self.events if e["io"] and
                (names is None or e["name"] in names)]

    def app(self, name=None):
        return [e for e in self.events if e["cat"] == "app" and
                (name is None or e["name"] == name)]

    def stats(self, name):
        for r in self.region_stats:
            if not r["outside"] and r["name"] == name:
                return r
        return None

    def outside(self):
        for r in self.region_stats:
            if r["outside"]:
                return r
        return None


def inspect(trace_dir, *flags):
    p = subprocess.run([INSPECT] + list(flags) + [trace_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=300)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return View(lines, p.returncode, p.stderr)


def dump_jsonl(trace_dir):
    p = subprocess.run([DUMP, "--format", "jsonl", trace_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    events = []
    for line in p.stdout.splitlines():
        if line.strip():
            events.append(json.loads(line.decode("utf-8", "replace")))
    return events, p.returncode


def write_file(path, size):
    with open(path, "wb") as f:
        f.write(bytes(i % 251 for i in range(size)))
    return path


class AnnotTestCase(dltest.TraceTestCase):
    """dltest.TraceTestCase with the annotation suite's environment and the
    decoder's view of the trace (inspect)."""

    @classmethod
    def setUpClass(cls):
        check_environment()

    def traced_env(self, trace_dir, extra=None, quiet=True, preload=True):
        return traced_env(trace_dir, extra, preload, quiet=quiet)

    def inspect(self, *flags, trace_dir=None, clean=True):
        v = inspect(trace_dir or self.traces, *flags)
        if clean:
            self.assertEqual(v.rc, 0, v.stderr)
        return v
