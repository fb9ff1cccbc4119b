"""The harness for the reliability tests (tests/reliability): exact counts
over traces of millions of events (trace_check), the tracer's own messages,
and what a sanitizer run must leave out.

Besides what the harness reads from the environment (dltest's docstring),
ctest sets for these tests:

  DLPROF_TRACE_CHECK   the trace_check tool (exact counts over big traces)
  DLPROF_FAKECLOCK     the clock shim of the symlink test
  DLPROF_SLOW_FD_SWEEPS  close_range and dup2 that pause before the real call

and scripts/sanitize.sh may set DLPROF_TEST_PRELOAD_PREFIX (the sanitizer
runtime that precedes the library, dltest.PRELOAD_PREFIX).
"""

import collections
import json
import os
import re
import subprocess

import dltest
from dltest import base_env, program, traced_env  # noqa: F401

TRACE_CHECK = os.environ.get("DLPROF_TRACE_CHECK", "")
FAKECLOCK = os.environ.get("DLPROF_FAKECLOCK", "")
SLOW_FD_SWEEPS = os.environ.get("DLPROF_SLOW_FD_SWEEPS", "")
SANITIZED = bool(dltest.PRELOAD_PREFIX)
ASAN = "libasan" in dltest.PRELOAD_PREFIX
TSAN = "libtsan" in dltest.PRELOAD_PREFIX


def skip_forks_under_tsan(test):
    """TSan cannot follow the child of a multi-threaded fork that starts a
    thread: the tracer's flusher thread of the parent is still registered in
    the child, the child's new flusher gets the same thread id, and TSan
    reports "dup thread with used id" and makes the child exit with 66."""
    if TSAN:
        test.skipTest("TSan: a forked child of a threaded process may not start threads")


def skip_forks_under_asan(test):
    """gcc 12's ASan runtime does not hold its allocator locks across fork():
    when the parent's flusher thread is inside malloc at the fork, the
    child's first thread start (our flusher: ASan allocates for it) waits for
    that lock forever. glibc's malloc takes its locks around fork, and so
    does the ASan of LLVM 16 and later."""
    if ASAN:
        test.skipTest("ASan of gcc 12: allocator not fork-safe in threaded processes")


def trace_check(paths, seq=(), raw=None):
    """Runs trace_check over trace files/dirs; returns its JSON."""
    cmd = [TRACE_CHECK]
    for name in seq:
        cmd += ["--seq", name]
    if raw:
        cmd += ["--raw", raw]
    cmd += list(paths) if isinstance(paths, (list, tuple)) else [paths]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=300, check=True).stdout
    return json.loads(out)


def summary_json(trace_dir):
    """dlprof-dump --summary --format json: (rc, summary dict, stderr)."""
    p = subprocess.run([dltest.DUMP, "--summary", "--format", "json", trace_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else {}), p.stderr


dropped_from_warnings = dltest.dropped_from_warnings


_EXIT_LINE = re.compile(r"^dlprof: trace .*: \d+ events written, \d+ dropped$")


def tracer_lines(stderr):
    """The tracer's own lines in a program's stderr, but for the line each
    process prints at exit (the tests that read messages run without
    DLPROF_QUIET, which silences every line)."""
    return [l for l in stderr.splitlines()
            if l.startswith("dlprof:") and not _EXIT_LINE.match(l)]


def without_tracer_lines(stderr):
    return "\n".join(l for l in stderr.splitlines() if not l.startswith("dlprof:"))


class RelTestCase(dltest.TraceTestCase):
    """dltest.TraceTestCase plus the reliability tools."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not TRACE_CHECK or not os.path.exists(TRACE_CHECK):
            raise RuntimeError("DLPROF_TRACE_CHECK not set: run through ctest -L reliability")

    def make_file(self, name, size, pattern=None):
        path = os.path.join(self.data, name)
        with open(path, "wb") as f:
            if pattern is None:
                f.write(bytes(i % 251 for i in range(size)))
            else:
                f.write((pattern * (size // len(pattern) + 1))[:size])
        return path

    def check(self, trace_dir=None, seq=()):
        return trace_check(trace_dir or self.traces, seq=seq)

    def assert_clean(self, result):
        """Every trace file opened, has its end marker and no damaged block."""
        for p in result["processes"]:
            self.assertTrue(p["opened"], p)
            self.assertEqual(p["messages"], [], p["file"])
            self.assertTrue(p["final"], "no end marker in %s" % p["file"])
            self.assertEqual(p["damaged"], 0, p["file"])

    def seq_by_tid(self, result, name, pid=None):
        return {(s["pid"], s["tid"]): s for s in result["seq"][name]
                if pid is None or s["pid"] == pid}


def counter(items):
    return collections.Counter(items)
