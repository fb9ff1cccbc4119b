"""Helpers of the tests in tests/annotations.

The locations of what is under test come from the environment, as ctest sets
it (tests/annotations/CMakeLists.txt):

  DLPROF_LIB        the preload library        DLPROF_DUMP      dlprof-dump
  DLPROF_INSPECT    dlprof_annotations_inspect (the decoder's view of regions
                    and stacks, tools/dump/regions.cc and stacks.cc)
  DLPROF_LAUNCHER   the `dlprof` launcher      DLPROF_ANNOT_BIN the test programs
  DLPROF_PYTHON_DIR build/python (import dlprof)
  DLPROF_SYSTEM_PYTHON  a Python with torch, if any
  DLPROF_HAVE_NVTX  1 when the NVTX test program was built
"""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")

LIB = os.environ.get("DLPROF_LIB", "")
DUMP = os.environ.get("DLPROF_DUMP", "")
INSPECT = os.environ.get("DLPROF_INSPECT", "")
LAUNCHER = os.environ.get("DLPROF_LAUNCHER", "")
BIN = os.environ.get("DLPROF_ANNOT_BIN", "")
PYDIR = os.environ.get("DLPROF_PYTHON_DIR", "")
SYSTEM_PYTHON = os.environ.get("DLPROF_SYSTEM_PYTHON", "/usr/bin/python3")
HAVE_NVTX = os.environ.get("DLPROF_HAVE_NVTX", "0") == "1"


def check_environment():
    missing = [n for n, v in (("DLPROF_LIB", LIB), ("DLPROF_DUMP", DUMP),
                              ("DLPROF_INSPECT", INSPECT),
                              ("DLPROF_LAUNCHER", LAUNCHER),
                              ("DLPROF_ANNOT_BIN", BIN),
                              ("DLPROF_PYTHON_DIR", PYDIR)) if not v]
    if missing:
        raise RuntimeError("%s not set: run these tests through ctest "
                           "(ctest -L annotations)" % ", ".join(missing))
    for path in (LIB, DUMP, INSPECT, LAUNCHER, BIN, PYDIR):
        if not os.path.exists(path):
            raise RuntimeError("%s does not exist: build the project first" % path)


def program(name):
    return os.path.join(BIN, name)


def script(name):
    return os.path.join(SCRIPTS, name)


def base_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DLPROF_") and k not in
           ("LD_PRELOAD", "NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH",
            "PYTHONPATH")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONSTARTUP", None)
    for var in ("RANK", "WORLD_SIZE", "SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS",
                "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid",
                "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "PMIX_SIZE", "PMIX_NAMESPACE",
                "PALS_RANKID", "PALS_SIZE", "FLUX_TASK_RANK", "FLUX_JOB_SIZE",
                "JSM_NAMESPACE_RANK", "JSM_NAMESPACE_SIZE", "MV2_COMM_WORLD_RANK",
                "MV2_COMM_WORLD_SIZE", "ALPS_APP_PE", "TORCHELASTIC_RUN_ID"):
        env.pop(var, None)
    return env


def traced_env(trace_dir, extra=None, preload=True, pythonpath=True):
    env = base_env()
    if preload:
        env["LD_PRELOAD"] = LIB
    env["DLPROF_DIR"] = trace_dir
    env["DLPROF_QUIET"] = "1"
    if pythonpath:
        env["PYTHONPATH"] = PYDIR
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run(cmd, env, timeout=120, cwd=None):
    return subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, text=True)


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


def trace_files(trace_dir):
    if not os.path.isdir(trace_dir):
        return []
    # At any depth: DLPROF_DIR/<run id>/<host>/ (docs/USER_GUIDE.md, "Runs").
    return sorted(os.path.join(root, n) for root, _dirs, names in os.walk(trace_dir)
                  for n in names if n.endswith(".dlprof"))


def write_file(path, size):
    with open(path, "wb") as f:
        f.write(bytes(i % 251 for i in range(size)))
    return path


class AnnotTestCase(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        check_environment()

    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="dlprof-annot-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.data = os.path.join(self.tmp, "data")
        os.mkdir(self.data)
        self.traces = os.path.join(self.tmp, "traces")

    def run_traced(self, cmd, extra=None, expect_rc=0, timeout=120, preload=True,
                   trace_dir=None):
        p = run(cmd, traced_env(trace_dir or self.traces, extra, preload), timeout)
        if expect_rc is not None:
            self.assertEqual(p.returncode, expect_rc,
                             "%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (cmd, p.returncode, p.stdout[-4000:], p.stderr[-4000:]))
        return p

    def inspect(self, *flags, trace_dir=None, clean=True):
        v = inspect(trace_dir or self.traces, *flags)
        if clean:
            self.assertEqual(v.rc, 0, v.stderr)
        return v
