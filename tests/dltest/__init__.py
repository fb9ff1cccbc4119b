"""dltest: the harness every Python test of dlprof is built on.

Each test runs a real program under LD_PRELOAD=libdlprof.so with its own
temporary trace directory, decodes the traces with `dlprof-dump --format
jsonl`, and compares the events with what the program really did. The
submodules add what some suites need on top: trace_layout (the trace
files' headers and blocks read directly), mpi (launching ranks of either MPI
family), perfetto (a reader of Perfetto traces), annotations (the
decoder's view of regions and stacks), reliability (exact counts over large
traces, sanitizer runs) and pytorch (tests of PyTorch programs).

ctest puts tests/ (this package) and build/python (the dlprof package under
test) on PYTHONPATH and the locations of what is under test in the
environment, for every suite in one place (dlprof_python_test,
tests/CMakeLists.txt):

  DLPROF_LIB            the preload library
  DLPROF_DUMP           the dlprof-dump binary
  DLPROF_LAUNCHER       the `dlprof` launcher
  DLPROF_TEST_BIN       the directories of the built test programs (':')
  DLPROF_PYTHON_DIR     build/python, the dlprof package
  DLPROF_SYSTEM_PYTHON  the Python that has torch (Debian's /usr/bin/python3)

DLPROF_TEST_KEEP_FAILED, where set (scripts/stress-tests.sh sets it), is a
directory that a failing TraceTestCase's temporary directory (the program's
files and its traces) is copied into before it is removed: a failure seen
once in hundreds of runs under load can then be decoded again.

scripts/sanitize.sh may set DLPROF_TEST_PRELOAD_PREFIX: the sanitizer
runtime (one or more paths, space-separated) that must precede the library
in every traced program's LD_PRELOAD.
"""

import collections
import importlib.util
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

# Re-exported: the tests call them as dltest.read_header and so on.
from .trace_layout import (HEADER_FLAG_FORKED, block_headers, flushed_events,  # noqa: F401
                           read_header, read_header_strings, trace_files)

# A suite started with SIGHUP, SIGINT or SIGQUIT ignored (nohup, or `&` in
# a shell without job control) hands SIG_IGN to every program it runs, and
# the tests of what those signals do failed on the untraced runs: the
# programs get the defaults they would get from a terminal.
for _sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT
                      else signal.SIG_DFL)

# tests/ and the repository.
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)
# The Python programs the tests run, by suite (script() looks in each).
SCRIPT_DIRS = [os.path.join(TESTS, suite, "scripts") for suite in ("integration", "annotations")]
SCRIPTS = SCRIPT_DIRS[0]

# The library alone, and what LD_PRELOAD must hold for a traced program: the
# sanitizer runtime first where scripts/sanitize.sh asks for it.
LIB_PATH = os.environ.get("DLPROF_LIB", "")
PRELOAD_PREFIX = os.environ.get("DLPROF_TEST_PRELOAD_PREFIX", "").strip()
LIB = (PRELOAD_PREFIX + " " + LIB_PATH) if PRELOAD_PREFIX and LIB_PATH else LIB_PATH
DUMP = os.environ.get("DLPROF_DUMP", "")
LAUNCHER = os.environ.get("DLPROF_LAUNCHER", "")
PROGRAM_DIRS = [d for d in os.environ.get("DLPROF_TEST_BIN", "").split(os.pathsep) if d]
# The integration suite's programs (programs/<MPI family>/ among them).
BIN = PROGRAM_DIRS[0] if PROGRAM_DIRS else ""
PYTHON_DIR = os.environ.get("DLPROF_PYTHON_DIR", "")
SYSTEM_PYTHON = os.environ.get("DLPROF_SYSTEM_PYTHON", "/usr/bin/python3")
# Where the CUPTI plugin is built: the plugin, the fake libcupti of tests/gpu
# and the "CUDA program" that runs against it (empty otherwise).
CUPTI_PLUGIN = os.environ.get("DLPROF_CUPTI_PLUGIN", "")
FAKE_CUPTI = os.environ.get("DLPROF_FAKE_CUPTI", "")
FAKE_CUDA_APP = os.environ.get("DLPROF_FAKE_CUDA_APP", "")
HAS_FAKE_CUDA = bool(CUPTI_PLUGIN and FAKE_CUPTI and FAKE_CUDA_APP)


# The Python bootstrap (python/bootstrap) beside the preload library: the
# runtime puts it first on PYTHONPATH in Python processes.
BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(LIB_PATH or ".")), "dlprof-python")
_HAS_TORCH = []


def invariant_tsc():
    """Whether this is x86-64 with an invariant TSC (/proc/cpuinfo's
    constant_tsc and nonstop_tsc): where DLPROF_CLOCK=tsc takes the TSC
    (lib/core/tsc_clock.h)."""
    if os.uname().machine != "x86_64":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    words = line.split()
                    return "constant_tsc" in words and "nonstop_tsc" in words
    except OSError:
        pass
    return False


def has_torch():
    """Whether SYSTEM_PYTHON has torch (asked once)."""
    if not _HAS_TORCH:
        p = subprocess.run([SYSTEM_PYTHON, "-c", "import torch.utils.data"],
                           capture_output=True, timeout=120)
        _HAS_TORCH.append(p.returncode == 0)
    return _HAS_TORCH[0]


def fake_cuda_env(extra=None):
    """The environment additions that run a program against the fake
    libcupti: preloaded after libdlprof.so, no real injection."""
    return dict({"LD_PRELOAD": LIB + ":" + FAKE_CUPTI, "CUDA_INJECTION64_PATH": None},
                **(extra or {}))

def check_environment():
    missing = [n for n, v in (("DLPROF_LIB", LIB_PATH), ("DLPROF_DUMP", DUMP),
                              ("DLPROF_TEST_BIN", BIN)) if not v]
    if missing:
        raise RuntimeError(
            "%s not set: run the tests through ctest (ctest -L integration)"
            % ", ".join(missing))
    for path in PRELOAD_PREFIX.split() + [LIB_PATH, DUMP]:
        if not os.path.exists(path):
            raise RuntimeError("%s does not exist: build the project first" % path)
    if not any(os.path.isdir(d) for d in PROGRAM_DIRS):
        raise RuntimeError("none of %s exists: build the project first" % PROGRAM_DIRS)


def _find(name, dirs, what):
    found = [os.path.join(d, name) for d in dirs if os.path.exists(os.path.join(d, name))]
    if len(found) > 1:
        raise RuntimeError("%s %s is in more than one place: %s" % (what, name, found))
    return found[0] if found else os.path.join(dirs[0] if dirs else "", name)


def program(name):
    """Path of a built test program (tests/<suite>/programs/NAME.c), of
    whichever suite builds it."""
    return _find(name, PROGRAM_DIRS, "test program")


def script(name):
    """Path of a Python program of tests/<suite>/scripts."""
    return _find(name, SCRIPT_DIRS, "script")


def load_module(path, name=None):
    """The Python file `path` loaded as a module: a program under test
    (an example, a benchmark's driver) whose functions a test calls."""
    spec = importlib.util.spec_from_file_location(
        name or os.path.splitext(os.path.basename(path))[0], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _own_pythonpath(env):
    """PYTHONPATH without what ctest put there for the test process itself
    (this package and the dlprof package): a program the test runs sees the
    PYTHONPATH it would see outside ctest."""
    ours = {os.path.realpath(p) for p in (TESTS, PYTHON_DIR) if p}
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
            if p and os.path.realpath(p) not in ours]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


def base_env():
    """The environment of the test process without any tracer settings."""
    env = _own_pythonpath({k: v for k, v in os.environ.items()
                           if not k.startswith("DLPROF_") and k != "LD_PRELOAD"})
    # Keep Python children predictable and the source tree clean.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONSTARTUP", None)
    # DLPROF_TEST_CLOCK=tsc runs a suite with the TSC as the events' clock
    # where the machine's clocksource is another (test_clock.py).
    if os.environ.get("DLPROF_TEST_CLOCK"):
        env["DLPROF_CLOCK"] = os.environ["DLPROF_TEST_CLOCK"]
    return env


def traced_env(trace_dir, extra=None, quiet=True, preload=True, base=None):
    """The environment of a traced program: `base` (base_env()) with the
    tracer's settings, then `extra` (None: remove the variable)."""
    env = dict(base_env() if base is None else base)
    if preload:
        env["LD_PRELOAD"] = LIB
    env["DLPROF_DIR"] = trace_dir
    if quiet:
        env["DLPROF_QUIET"] = "1"
    if extra:
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
    return env


def run(cmd, env, timeout=120, cwd=None):
    return subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, text=True)


def process_alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_gone(pids, timeout=20.0):
    """Waits until none of `pids` runs any more (their traces are complete)."""
    deadline = time.monotonic() + timeout
    pending = [p for p in pids if process_alive(p)]
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
        pending = [p for p in pending if process_alive(p)]
    return pending


def wait_until(condition, timeout, what):
    """Polls `condition()` until it holds; returns the seconds that took.
    Fails the test with `what` after `timeout` seconds: a test waits for the
    state its assertions need, never for a fixed time, and never forever."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError("%s (waited %.0f s)" % (what, timeout))
        time.sleep(0.02)
    return time.monotonic() - start


def read_line(pipe, timeout=60.0):
    """One line from a child's stdout/stderr pipe ('' at end of file), or
    AssertionError after `timeout` seconds. Reads the descriptor a byte at a
    time, so nothing past the line is buffered away from a later
    communicate()."""
    fd = pipe.fileno()
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("no line from the program within %.0f s; got %r"
                                 % (timeout, line))
        if not select.select([fd], [], [], left)[0]:
            continue
        c = os.read(fd, 1)
        if not c:
            break
        line += c
    return line.decode("utf-8", "replace")


# How dlprof-dump begins its note on a bounded run (tools/dump/bounded_note.h).
BOUNDED_NOTE = "dlprof-dump: note: a bounded trace (DLPROF_KEEP)"


class Trace:
    """The decoded traces of one run."""

    def __init__(self, directory, events, headers, dump_rc, dump_stderr):
        self.directory = directory
        self.events = events
        self.headers = headers
        self.dump_rc = dump_rc
        self.dump_stderr = dump_stderr

    @property
    def files(self):
        return [h["file"] for h in self.headers]

    def pids(self):
        return {h["pid"] for h in self.headers}

    def ppid_of(self, pid):
        """The parent pid recorded for `pid` (every file of it agrees)."""
        ppids = {h["ppid"] for h in self.headers if h["pid"] == pid}
        if len(ppids) != 1:
            raise AssertionError("pid %d has headers with ppids %s" % (pid, ppids))
        return ppids.pop()

    def headers_of(self, pid):
        return [h for h in self.headers if h["pid"] == pid]

    def by_pid(self, events=None):
        out = collections.defaultdict(list)
        for e in self.events if events is None else events:
            out[e["pid"]].append(e)
        return out

    def under(self, prefix, events=None):
        """Events naming a path at or below `prefix`."""
        prefix = prefix.rstrip("/")
        return [e for e in (self.events if events is None else events)
                if "path" in e and (e["path"] == prefix
                                    or e["path"].startswith(prefix + "/"))]

    def on(self, path, events=None):
        return [e for e in (self.events if events is None else events)
                if e.get("path") == path]

    def messages(self):
        """dlprof-dump's stderr lines, less its note on a bounded run's
        stretch (and the note's indented lines): no problem, only a fact."""
        out, in_note = [], False
        for l in self.dump_stderr.splitlines():
            in_note = (l.startswith(BOUNDED_NOTE) or (in_note and l.startswith("  ")))
            if l.strip() and not in_note:
                out.append(l)
        return out

    def bounded_note(self):
        """The note's lines ([] when dlprof-dump wrote none)."""
        lines = self.dump_stderr.splitlines()
        for i, l in enumerate(lines):
            if l.startswith(BOUNDED_NOTE):
                end = i + 1
                while end < len(lines) and lines[end].startswith("  "):
                    end += 1
                return lines[i:end]
        return []


def decode(trace_dir, paths=None, keep=None):
    """Runs dlprof-dump --format jsonl over a trace dir (or some files of it).

    `keep(event)`, if given, picks the events to hold on to; the others are
    parsed and dropped (large traces: hundreds of thousands of events)."""
    cmd = [DUMP, "--format", "jsonl"] + (paths or [trace_dir])
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err,
                             stdin=subprocess.DEVNULL)
        events = []
        for line in p.stdout:
            if not line.strip():
                continue
            e = json.loads(line)
            if keep is None or keep(e):
                events.append(e)
        p.stdout.close()
        rc = p.wait(timeout=300)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    headers = [read_header(f) for f in (paths or trace_files(trace_dir))]
    return Trace(trace_dir, events, headers, rc, stderr)


READ_NAMES = {"read", "pread", "pread64", "readv", "preadv", "preadv64",
              "preadv2", "preadv64v2", "__read_chk", "__pread_chk",
              "__pread64_chk"}
WRITE_NAMES = {"write", "pwrite", "pwrite64", "writev", "pwritev", "pwritev64",
               "pwritev2", "pwritev64v2"}


def bytes_by_path(events, names=READ_NAMES):
    out = collections.Counter()
    for e in events:
        if e["name"] in names and "path" in e:
            out[e["path"]] += e.get("bytes", 0)
    return out


def write_files(directory, count, size_of, prefix="f"):
    """Creates `count` files with sizes size_of(i); returns {path: size}."""
    os.makedirs(directory, exist_ok=True)
    sizes = {}
    for i in range(count):
        path = os.path.join(directory, "%s%04d.bin" % (prefix, i))
        size = size_of(i)
        with open(path, "wb") as f:
            f.write(bytes((i + j) % 251 for j in range(size)))
        sizes[path] = size
    return sizes


def parse_fields(line):
    """'EV<tab>k=v<tab>...' -> {k: v}, numbers as ints."""
    out = {}
    for item in line.split("\t")[1:]:
        k, _, v = item.partition("=")
        try:
            out[k] = int(v)
        except ValueError:
            out[k] = v
    return out


class TraceTestCase(unittest.TestCase):
    """A test with a fresh temporary directory: self.tmp, self.data (for the
    program's files) and self.traces (DLPROF_DIR), removed afterwards."""

    maxDiff = None

    @classmethod
    def setUpClass(cls):
        check_environment()

    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="dlprof-it-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.addCleanup(self._keep_if_failed)  # (cleanups run last first)
        self.data = os.path.join(self.tmp, "data")
        os.mkdir(self.data)
        self.traces = os.path.join(self.tmp, "traces")

    def _keep_if_failed(self):
        keep = os.environ.get("DLPROF_TEST_KEEP_FAILED")
        # (A cleanup runs as a test part of its own, with its own success:
        # the test's failures are in the result.)
        result = getattr(getattr(self, "_outcome", None), "result", None)
        failed = [t for t, _ in getattr(result, "failures", []) + getattr(result, "errors", [])]
        if not keep or self not in failed:
            return
        dest = os.path.join(keep, "%s-%d-%d" % (self.id(), int(time.time()), os.getpid()))
        shutil.copytree(self.tmp, dest, symlinks=True, ignore_dangling_symlinks=True,
                        dirs_exist_ok=True)
        print("dltest: the failed test's files are kept in %s" % dest)

    # --- running ---------------------------------------------------------

    def traced_env(self, trace_dir, extra=None, quiet=True, preload=True):
        """The environment of a traced run (a suite's test case may add its
        own rules: annotations.AnnotTestCase)."""
        return traced_env(trace_dir, extra, quiet, preload)

    def run_traced(self, cmd, env=None, trace_dir=None, quiet=True,
                   expect_rc=0, timeout=120, cwd=None, preload=True):
        """Runs `cmd` under the tracer; checks its exit status (None: any)."""
        trace_dir = trace_dir or self.traces
        p = run(cmd, self.traced_env(trace_dir, env, quiet, preload), timeout, cwd)
        if expect_rc is not None:
            self.assertEqual(
                p.returncode, expect_rc,
                "traced %s exited %d\nstdout:\n%s\nstderr:\n%s"
                % (cmd, p.returncode, p.stdout[-4000:], p.stderr[-4000:]))
        return p

    def trace_gpu_steps(self, run_id, ranks=(0, 1), env=None):
        """Ranks of the fake CUDA program's "steps" mode traced into
        self.traces as one run: four steps each, a load_batch around a read
        while the GPU idles, then two kernels (tests/gpu/fake_cuda_app.c).
        `env` adds to each rank's environment."""
        data = os.path.join(self.data, "steps.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 8192)
        for rank in ranks:
            self.run_traced([FAKE_CUDA_APP, CUPTI_PLUGIN, data, "steps"],
                            fake_cuda_env(dict({"RANK": str(rank), "DLPROF_RUN_ID": run_id},
                                               **(env or {}))),
                            timeout=60)

    def run_untraced(self, cmd, env=None, timeout=120, cwd=None):
        e = base_env()
        if env:
            e.update(env)
        return run(cmd, e, timeout, cwd)

    def assert_same_as_untraced(self, cmd, env=None, expect_rc=0, timeout=120,
                                cwd=None, compare_stderr=True):
        """Runs `cmd` with and without the tracer: same status and output."""
        untraced = self.run_untraced(cmd, env, timeout, cwd)
        traced = self.run_traced(cmd, env, expect_rc=None, timeout=timeout,
                                 cwd=cwd)
        self.assertEqual(untraced.returncode, expect_rc,
                         "untraced run failed:\n" + untraced.stderr[-4000:])
        self.assertEqual(traced.returncode, untraced.returncode,
                         "traced stderr:\n" + traced.stderr[-4000:])
        self.assertEqual(traced.stdout, untraced.stdout)
        if compare_stderr:
            self.assertEqual(traced.stderr, untraced.stderr)
        return traced, untraced

    # --- decoding --------------------------------------------------------

    def summary(self, trace_dir=None, text=False):
        """`dlprof-dump --summary --format json` of a run as a dict (the text
        summary with `text`)."""
        cmd = [DUMP, "--summary"] + ([] if text else ["--format", "json"])
        p = run(cmd + [trace_dir or self.traces], base_env(), timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout if text else json.loads(p.stdout)

    def decode(self, trace_dir=None, clean=True, wait_for_pids=True, keep=None):
        """Decodes a run's traces. `clean`: every file decodes without any
        message (all blocks intact, every process wrote its end marker)."""
        trace_dir = trace_dir or self.traces
        files = trace_files(trace_dir)
        self.assertTrue(files, "no trace file in %s" % trace_dir)
        if wait_for_pids:
            # Orphaned helpers (e.g. multiprocessing's resource tracker) may
            # still be finishing their traces.
            left = wait_gone({read_header(f)["pid"] for f in files})
            self.assertEqual(left, [], "traced processes still running")
        t = decode(trace_dir, keep=keep)
        if clean:
            self.assertEqual(t.dump_rc, 0, t.dump_stderr)
            self.assertEqual(t.messages(), [], "dlprof-dump reported problems")
        return t

    def decode_counting_drops(self, trace_dir=None):
        """decode(), where the one message allowed is the count of events a
        trace's blocks say the tracer dropped: the kernel's page-fault
        buffers (64 KiB a thread) overflow when the flusher is off a CPU for
        ~100 ms while a thread faults every few microseconds (a loaded CI
        machine), and the tracer says so and counts them. Returns the trace
        and the drops, summed."""
        t = self.decode(trace_dir, clean=False)
        self.assertEqual(t.dump_rc, 0, t.dump_stderr)
        self.assertEqual([m for m in t.messages() if not _DROPPED.search(m)], [],
                         "dlprof-dump reported problems")
        return t, sum(dropped_from_warnings(t.dump_stderr).values())


def is_end(e):
    """A decoded event that is the record of how its process ended (an
    exit status or a signal: docs/FORMAT_EVENTS.md), every process's last."""
    return e.get("cat") == "dlprof" and e.get("name") in ("exit", "signal")


_DROPPED = re.compile(r"warning: (.*): (\d+) events were dropped")


def dropped_from_warnings(stderr):
    """{trace file: dropped count} from dlprof-dump's warnings."""
    return {m.group(1): int(m.group(2)) for m in _DROPPED.finditer(stderr)}


def main():
    unittest.main(verbosity=2)
