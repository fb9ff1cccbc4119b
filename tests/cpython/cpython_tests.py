#!/usr/bin/env python3
"""CPython's own regression tests, with and without the tracer (issue 38).

Runs each module of a list with `python3 -m test MODULE` (Debian's
libpython3.11-testsuite) untraced, then with LD_PRELOAD=libdlprof.so, and
compares what happened to every test: pass, fail, error or skip (from
regrtest's JUnit XML), and the module's own verdict (a module that hangs,
crashes or ends with another status differs as a whole). Timings are not
compared. A module that differs is run again both ways, and only the tests
that differ in both attempts, the same way, are reported: CPython has a few
timing-dependent tests that fail now and then on a busy machine, traced or
not. Every traced module's traces must also decode (`dlprof-dump
--summary`).

    cpython_tests.py [--short | --full] [--lib LIB] [--dump DUMP]
                     [--python PY] [--keep DIR] [--attempts N] [MODULE...]

--short is the list ctest runs (label cpython, about a minute on 2 cores),
--full the 45 modules of issue 38 (about 35 minutes on 2 cores, run by
hand: docs/RELIABILITY.md). Prints one line per module and, for each
difference, the test and its two results; exits 1 when any module differs,
77 when CPython's test suite is missing (ctest's skip), 2 on bad arguments.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

# Modules on files, processes, threads and signals. The short list keeps
# the cases issue 38 found (pthread_exit in test_threading's fork tests,
# descriptors in test_subprocess's fd tests: only those of the two modules,
# which take minutes in full) and modules that take seconds.
SHORT = ["test_threading", "test_subprocess", "test_fileio", "test_fcntl", "test_pty",
         "test_wait4", "test_fork1", "test_select", "test_file", "test_glob", "test_stat",
         "test_atexit"]
_SHORT_MATCH = {"test_threading": ["*fork*"],
                "test_subprocess": ["*fds*", "*fd_*", "*pass_fd*"]}

FULL = ["test_os", "test_io", "test_fileio", "test_file", "test_fileinput", "test_subprocess",
        "test_signal", "test_threading", "test_thread", "test_threading_local",
        "test_multiprocessing_fork", "test_pty", "test_tarfile", "test_zipfile", "test_logging",
        "test_posix", "test_faulthandler", "test_compileall", "test_shutil", "test_tempfile",
        "test_glob", "test_pathlib", "test_stat", "test_mmap", "test_select", "test_selectors",
        "test_fcntl", "test_popen", "test_fork1", "test_wait3", "test_wait4",
        "test_concurrent_futures", "test_queue", "test_gzip", "test_bz2", "test_lzma",
        "test_zlib", "test_csv", "test_mailbox", "test_dbm", "test_shelve", "test_filecmp",
        "test_largefile", "test_posixpath", "test_atexit"]


def default_python():
    """Debian's python3: the one libpython3.11-testsuite belongs to."""
    for py in ("/usr/bin/python3", sys.executable):
        if os.path.exists(py) and subprocess.run(
                [py, "-c", "import test.libregrtest"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def parse_junit(path):
    """{test id: pass|fail|error|skip} from regrtest's JUnit XML."""
    results = {}
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        tags = {child.tag for child in case}
        if "error" in tags:
            result = "error"
        elif "failure" in tags:
            result = "fail"
        elif "skipped" in tags:
            result = "skip"
        else:
            result = "pass"
        results[name] = result
    return results


def run_module(args, module, traced, workdir):
    """One run of one module: (verdict, {test: result}, seconds, trace dir)."""
    junit = os.path.join(workdir, "junit.xml")
    tmp = os.path.join(workdir, "tmp")
    traces = os.path.join(workdir, "traces")
    os.makedirs(tmp, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DLPROF_") and k != "LD_PRELOAD"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if traced:
        env["LD_PRELOAD"] = args.lib
        env["DLPROF_DIR"] = traces
        env["DLPROF_QUIET"] = "1"
    cmd = [args.python, "-m", "test", module, "--junit-xml", junit, "--tempdir", tmp,
           "--timeout", str(args.test_timeout)]
    for pattern in (_SHORT_MATCH.get(module, []) if args.short else []):
        cmd += ["-m", pattern]
    start = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, cwd=workdir, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=args.module_timeout)
        out, rc = p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = e.stdout or "", None
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
    seconds = time.monotonic() - start
    if rc is None:
        verdict = "TIMEOUT"
    else:
        verdict = "?"
        for line in out.splitlines():
            if line.startswith("Tests result: "):
                verdict = line[len("Tests result: "):].strip()
        if verdict == "?":
            verdict = "exit %d" % rc
    with open(os.path.join(workdir, "output.txt"), "w") as f:
        f.write(out)
    results = parse_junit(junit) or {}
    return verdict, results, seconds, traces


def decode_ok(args, traces):
    """The traces of a traced run decode without a message (or there are none)."""
    if not os.path.isdir(traces):
        return True, ""
    p = subprocess.run([args.dump, "--summary", "--format", "json", "--quiet", traces],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       errors="replace", timeout=600)
    return p.returncode == 0, p.stderr.strip()


def differences(plain, traced):
    """[(test, untraced result, traced result)] and the verdicts, if they differ."""
    diff = []
    for name in sorted(set(plain[1]) | set(traced[1])):
        a = plain[1].get(name, "missing")
        b = traced[1].get(name, "missing")
        if a != b:
            diff.append((name, a, b))
    if plain[0] != traced[0]:
        diff.append(("(module verdict)", plain[0], traced[0]))
    return diff


def compare_module(args, module, root):
    """Runs a module both ways, up to args.attempts times while it differs;
    returns (differences that persisted, line to print)."""
    persisted = None
    detail = ""
    for attempt in range(args.attempts):
        base = os.path.join(root, module, str(attempt))
        plain = run_module(args, module, False, os.path.join(base, "untraced"))
        traced = run_module(args, module, True, os.path.join(base, "traced"))
        diff = set(differences(plain, traced))
        ok, message = decode_ok(args, traced[3])
        if not ok:
            diff.add(("(dlprof-dump)", "decodes", "fails: " + message.splitlines()[0]
                      if message else "fails"))
        persisted = diff if persisted is None else persisted & diff
        detail = "%s, %d tests, %.0f s untraced, %.0f s traced" % (
            traced[0], len(traced[1]), plain[2], traced[2])
        if not persisted:
            break
    return sorted(persisted), detail


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*")
    ap.add_argument("--short", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--lib", default=os.environ.get("DLPROF_LIB", ""))
    ap.add_argument("--dump", default=os.environ.get("DLPROF_DUMP", ""))
    ap.add_argument("--python", default=None)
    ap.add_argument("--keep", default=None, help="keep every run's output and traces here")
    ap.add_argument("--attempts", type=int, default=2)
    ap.add_argument("--test-timeout", type=int, default=300)
    ap.add_argument("--module-timeout", type=int, default=1200)
    args = ap.parse_args()
    modules = list(args.modules)
    if args.short:
        modules += SHORT
    if args.full or not modules:
        modules += FULL
    args.python = args.python or default_python()
    if args.python is None:
        print("cpython_tests: CPython's test suite is not installed "
              "(Debian: libpython3.11-testsuite)", file=sys.stderr)
        return 77
    for what, path in (("--lib", args.lib), ("--dump", args.dump)):
        if not path or not os.path.exists(path):
            print("cpython_tests: %s: no such file %r" % (what, path), file=sys.stderr)
            return 2
    # Each module runs in a directory of its own: LD_PRELOAD must not be relative.
    args.lib = os.path.abspath(args.lib)
    args.dump = os.path.abspath(args.dump)
    # Started in the background of a shell, this process and its children
    # ignore SIGINT, and test_threading's and test_signal's interrupt tests
    # fail both ways: a handler of our own becomes SIG_DFL in the children.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    root = args.keep or tempfile.mkdtemp(prefix="dlprof-cpython-")
    print("cpython_tests: %s, %d modules, %s" % (args.python, len(modules), args.lib))
    differing = {}
    try:
        for module in modules:
            diff, detail = compare_module(args, module, root)
            print("%-28s %s  (%s)" % (module, "DIFFERS" if diff else "same", detail),
                  flush=True)
            shown = [d for d in diff if d[1] != "missing" and d[2] != "missing"]
            missing = [d for d in diff if d not in shown]
            for name, a, b in shown[:30]:
                print("    %s: untraced %s, traced %s" % (name, a, b), flush=True)
            if len(shown) > 30:
                print("    ... and %d more" % (len(shown) - 30))
            if missing:
                print("    %d tests ran in one run only (first: %s)"
                      % (len(missing), missing[0][0]), flush=True)
            if diff:
                differing[module] = diff
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print("cpython_tests: %d of %d modules the same traced and untraced%s"
          % (len(modules) - len(differing), len(modules),
             "; differing: " + " ".join(differing) if differing else ""))
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
