"""One run of a test loop script (tests/integration/scripts/) under
LD_PRELOAD=libdlprof.so, for the benchmarks that set its own measure of
itself against the trace's: bench/worker_estimate.py, bench/wait_split.py.
"""

import json
import os
import shutil
import subprocess

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration",
                       "scripts")


def run(build, script, mode, tmp, *args):
    """Runs SCRIPT MODE DATA OUT.json ARGS... traced into a fresh trace
    directory under `tmp` (the data set in `tmp` is kept from run to run);
    returns the loop's own truth (OUT.json) and the run's summary as JSON."""
    traces = os.path.join(tmp, "traces")
    shutil.rmtree(traces, ignore_errors=True)
    data = os.path.join(tmp, "data")
    os.makedirs(data, exist_ok=True)
    out = os.path.join(tmp, "truth.json")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "lib", "libdlprof.so"),
               DLPROF_DIR=traces, DLPROF_QUIET="1")
    subprocess.run(["/usr/bin/python3", os.path.join(SCRIPTS, script), mode, data, out] +
                   [str(a) for a in args], env=env, check=True, capture_output=True, timeout=600)
    with open(out) as f:
        truth = json.load(f)
    s = subprocess.run([os.path.join(build, "tools", "dlprof-dump"), "--summary", "--format",
                        "json", traces], check=True, capture_output=True, text=True)
    return truth, json.loads(s.stdout)
