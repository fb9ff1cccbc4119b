"""What a traced program sees of dlprof in its environment, and what its
children get (lib/core/child_env.h, docs/USER_GUIDE.md "Runs" and
"What the program sees").

- A traced program's own environment is the one it was given: no
  DLPROF_RUN_ID, DLPROF_RUN_ID_AUTO or rewritten DLPROF_DIR; only
  LD_PRELOAD and the CUDA/NVTX injection variables, which libraries read
  in-process.
- Every child it starts (each exec, posix_spawn, system, popen), whatever
  environment the program hands it, lands in the run and the trace
  directory of its parent, and a Python child finds the bootstrap first on
  its PYTHONPATH; yet the child's own environment is the one it has
  untraced, but for those same in-process variables: what the tracer hands
  it (DLPROF_INHERITED_*, the markers) is taken out before the child's
  program runs.
- bash, which defines its own getenv/setenv, stays in the run that started
  it; dlprof-dump shows the job, not a stray run started inside it.
- A Python interpreter has the bootstrap first on PYTHONPATH from its start
  (DIR, or DIR:OLD), unless DLPROF_PYTHON=0.
- DLPROF_QUIET=1: nothing of ours reaches the program's stderr; otherwise
  "runs untraced" is said once for a tree of processes, not per process.
"""

import json
import os
import shutil
import subprocess
import sys
import unittest

import dltest

# Variables that libraries read in the process itself: a traced program
# may see them (docs/USER_GUIDE_TRACING.md, "What the program sees").
IN_PROCESS = ("LD_PRELOAD", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")
RUN_VARS = ("DLPROF_RUN_ID", "DLPROF_RUN_ID_AUTO", "PYTHONPATH")
PYTHON = sys.executable

# A stand-in for issue 30's bootstrap (python/ installs the real one): it
# logs what it found and takes itself off PYTHONPATH and sys.path as the
# real one does.
FAKE_SITECUSTOMIZE = r'''
import json, os, sys
_dir = os.path.dirname(os.path.abspath(__file__))
_log = os.environ.get("DLPROF_TEST_BOOT_LOG")
_found = os.environ.get("PYTHONPATH")
if _found == _dir:
    del os.environ["PYTHONPATH"]
elif _found is not None and _found.startswith(_dir + ":"):
    os.environ["PYTHONPATH"] = _found[len(_dir) + 1:]
if _dir in sys.path:
    sys.path.remove(_dir)
if _log:
    with open(_log, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "found": _found}) + "\n")
'''


def env_lines(out):
    return [l[4:] for l in out.splitlines() if l.startswith("ENV ")]


def env_dict(out):
    return dict(l.split("=", 1) for l in env_lines(out))


class ChildEnvTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        # libdlprof.so with a bootstrap directory beside it.
        self.lib_dir = os.path.join(self.tmp, "lib")
        self.boot_dir = os.path.join(self.lib_dir, "dlprof-python")
        os.makedirs(self.boot_dir)
        self.lib = os.path.join(self.lib_dir, "libdlprof.so")
        shutil.copy(dltest.LIB, self.lib)
        with open(os.path.join(self.boot_dir, "sitecustomize.py"), "w") as f:
            f.write(FAKE_SITECUSTOMIZE)
        self.boot_log = os.path.join(self.tmp, "boot.log")

    def env(self, **extra):
        e = {k: None for k in RUN_VARS}
        e["LD_PRELOAD"] = self.lib
        e["DLPROF_TEST_BOOT_LOG"] = self.boot_log
        e.update(extra)
        return e

    def run_ids(self):
        return {dltest.read_header_strings(f)["run_id"] for f in dltest.trace_files(self.traces)}

    def boots(self):
        if not os.path.exists(self.boot_log):
            return []
        with open(self.boot_log) as f:
            return [json.loads(l) for l in f]

    # --- the program's own environment ---------------------------------

    def assert_own_environment(self, cmd, parse, extra):
        """`cmd` prints its environment; traced it prints what it prints
        untraced, but for IN_PROCESS."""
        env = dltest.traced_env("traces", self.env(**extra))  # relative DLPROF_DIR
        untraced = dltest.run(cmd, {k: v for k, v in env.items() if k != "LD_PRELOAD"},
                              cwd=self.tmp)
        traced = dltest.run(cmd, env, cwd=self.tmp)
        self.assertEqual(untraced.returncode, 0, untraced.stderr)
        self.assertEqual(traced.returncode, 0, traced.stderr)
        self.assertEqual(traced.stderr, "")
        keep = lambda pairs: [(k, v) for k, v in pairs if k not in IN_PROCESS]
        self.assertEqual(keep(parse(traced.stdout)), keep(parse(untraced.stdout)))
        self.assertTrue(dltest.trace_files(os.path.join(self.tmp, "traces")))
        return parse(traced.stdout)

    def test_a_c_program_sees_the_environment_it_was_given(self):
        pairs = self.assert_own_environment(
            [dltest.program("print_env"), "getenv", "DLPROF_RUN_ID", "DLPROF_DIR"],
            lambda out: [tuple(l.split("=", 1)) for l in env_lines(out)] +
                        [("getenv " + l[7:], "") for l in out.splitlines()
                         if l.startswith("GETENV ")],
            {"PYTHONPATH": "/old"})
        self.assertIn(("DLPROF_DIR", "traces"), pairs)
        self.assertIn(("getenv DLPROF_RUN_ID unset", ""), pairs)
        self.assertIn(("getenv DLPROF_DIR=traces", ""), pairs)
        self.assertIn(("PYTHONPATH", "/old"), pairs)  # not a Python process

    def test_python_sees_the_environment_it_was_given(self):
        script = "import json, os; print(json.dumps(sorted(os.environ.items())))"
        self.assert_own_environment([PYTHON, "-c", script],
                                    lambda out: [tuple(p) for p in json.loads(out)],
                                    {"PYTHONPATH": "/old"})
        # The bootstrap ran, found itself first, and took itself off.
        (boot,) = self.boots()
        self.assertEqual(boot["found"], self.boot_dir + ":/old")

    # --- the bootstrap in a Python process ------------------------------

    def python_path_at_start(self, **extra):
        open(self.boot_log, "w").close()
        self.run_traced([PYTHON, "-c", "pass"], env=self.env(**extra))
        return [b["found"] for b in self.boots()]

    def test_python_gets_the_bootstrap_first_on_its_path(self):
        d = self.boot_dir
        self.assertEqual(self.python_path_at_start(), [d])
        self.assertEqual(self.python_path_at_start(PYTHONPATH=""), [d + ":"])
        self.assertEqual(self.python_path_at_start(PYTHONPATH="/a:/b"), [d + ":/a:/b"])
        # Led by it already (a child of a traced process): as it is.
        self.assertEqual(self.python_path_at_start(PYTHONPATH=d + ":/a"), [d + ":/a"])

    def test_dlprof_python_0_leaves_python_alone(self):
        self.assertEqual(self.python_path_at_start(DLPROF_PYTHON="0"), [])
        p = self.run_traced([PYTHON, "-c", "import os; print(os.environ.get('PYTHONPATH'))"],
                            env=self.env(DLPROF_PYTHON="0", PYTHONPATH="/a"))
        self.assertEqual(p.stdout, "/a\n")
        p = self.run_traced([dltest.program("start_child"), "execve", dltest.program("print_env")],
                            env=self.env(DLPROF_PYTHON="0", PYTHONPATH="/a"))
        self.assertEqual(env_dict(p.stdout)["PYTHONPATH"], "/a")

    def test_no_bootstrap_directory_no_change(self):
        # The library as built (no dlprof-python beside it in this tree, or
        # one: either way a C program's own PYTHONPATH stays).
        p = self.run_traced([dltest.program("print_env")],
                            env=self.env(LD_PRELOAD=dltest.LIB, PYTHONPATH="/a"))
        self.assertEqual(env_dict(p.stdout)["PYTHONPATH"], "/a")

    def test_the_bootstrap_goes_on_to_python_children(self):
        # Python starts Python with its (stripped) environment: the child
        # finds the bootstrap first again, before the parent's own path.
        script = ("import os, subprocess, sys;"
                  "subprocess.run([sys.executable, '-c', 'pass'], check=True);"
                  "subprocess.run([sys.executable, '-c', 'pass'], env=dict(os.environ),"
                  " check=True)")
        self.run_traced([PYTHON, "-c", script], env=self.env(PYTHONPATH="/a"))
        self.assertEqual([b["found"] for b in self.boots()], [self.boot_dir + ":/a"] * 3)
        self.assertEqual(len(self.run_ids()), 1)

    # --- what children get ------------------------------------------------

    MODES = ("execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve",
             "execve_own", "posix_spawn", "posix_spawnp", "system", "popen")

    def test_every_child_sees_its_environment_as_untraced_and_stays_in_the_run(self):
        # A relative DLPROF_DIR, as the program was given it: the children
        # write into the one directory the first process made absolute.
        for old in ("/a:/b", None):
            for mode in self.MODES:
                with self.subTest(mode=mode, pythonpath=old):
                    traces = os.path.join(self.tmp, "traces")
                    shutil.rmtree(traces, ignore_errors=True)
                    cmd = [dltest.program("start_child"), mode, dltest.program("print_env")]
                    env = dltest.traced_env("traces", self.env(PYTHONPATH=old))
                    traced = dltest.run(cmd, env, cwd=self.tmp)
                    untraced = dltest.run(cmd, {k: v for k, v in env.items()
                                                if k != "LD_PRELOAD"}, cwd=self.tmp)
                    self.assertEqual(traced.returncode, 0, traced.stderr)
                    self.assertEqual(untraced.returncode, 0, untraced.stderr)
                    # (execve_own's child lacks DLPROF_QUIET: it says its
                    # exit line.)
                    said = [l for l in traced.stderr.splitlines()
                            if not (mode == "execve_own" and l.startswith("dlprof: trace "))]
                    self.assertEqual(said, [])
                    child = env_dict(traced.stdout)
                    self.assertEqual(child.pop("LD_PRELOAD"), self.lib)
                    for name in IN_PROCESS:
                        child.pop(name, None)
                    self.assertEqual(child, env_dict(untraced.stdout))
                    if mode == "popen":
                        self.assertIn("PCLOSE 0\n", traced.stdout)
                    # The starter and the child (and the shell) wrote
                    # traces, of one run, in the one directory.
                    want_traces = 3 if mode in ("system", "popen") else 2
                    files = dltest.trace_files(traces)
                    self.assertEqual(len(files), want_traces)
                    self.assertEqual(len({dltest.read_header_strings(f)["run_id"]
                                          for f in files}), 1)

    @unittest.skipUnless(dltest.LAUNCHER, "the dlprof launcher is not built")
    def test_dlprof_run_started_inside_a_run_stays_in_it(self):
        # The launcher is traced (LD_PRELOAD goes on) and sees no run id in
        # its environment: it takes the one its tracer was handed.
        cmd = ["sh", "-c", "%s run --no-summary -- %s" % (dltest.LAUNCHER,
                                                          dltest.program("print_env"))]
        self.run_traced(cmd, env=self.env(LD_PRELOAD=dltest.LIB))
        exes = sorted(os.path.basename(f).split("-")[0] for f in dltest.trace_files(self.traces))
        self.assertEqual(exes.count("print_env"), 1, exes)
        self.assertIn("dlprof", exes)  # the launcher (and its fork before the exec)
        self.assertEqual(len(self.run_ids()), 1)

    def test_a_run_id_the_program_sets_for_its_child_stays(self):
        script = ("import os, subprocess, sys;"
                  "subprocess.run([sys.argv[1]], env=dict(os.environ, DLPROF_RUN_ID='mine'),"
                  " check=True)")
        p = self.run_traced([PYTHON, "-c", script, dltest.program("print_env")], env=self.env())
        child = env_dict(p.stdout)
        self.assertEqual(child["DLPROF_RUN_ID"], "mine")
        self.assertNotIn("DLPROF_RUN_ID_AUTO", child)
        self.assertEqual(len(self.run_ids()), 2)

    def test_system_and_popen_keep_their_results(self):
        # Exit statuses, a command that is not there, popen both ways.
        out = os.path.join(self.data, "popen.out")
        cases = [(["system", "exit", "3"], 3, ""),
                 (["system", "no-such-command-x", "2>/dev/null"], 127, ""),
                 (["popen", "echo", "hi;", "exit", "5"], 0, "hi\nPCLOSE 1280\n"),
                 (["popen_w", "cat", ">", out], 0, "PCLOSE 0\n"),
                 # The second child must not hold the first pipe: the first
                 # cat would never see the end of its input.
                 (["popen_two", "cat", ">>", out + "2"], 0, "PCLOSE 0\nPCLOSE 0\n")]
        for args, rc, stdout in cases:
            with self.subTest(args=args):
                cmd = [dltest.program("start_child")] + args
                traced = self.run_traced(cmd, env=self.env(), expect_rc=rc)
                self.assertEqual(traced.stdout, stdout)
                self.assertEqual(traced.stderr, "")
                untraced = self.run_untraced(cmd)
                self.assertEqual((untraced.returncode, untraced.stdout), (rc, stdout))
        with open(out) as f:
            self.assertEqual(f.read(), "data\n")
        with open(out + "2") as f:
            self.assertEqual(f.read(), "one\ntwo\n" * 2)  # traced, then untraced

    def test_a_file_on_the_number_a_popen_pipe_had_is_traced(self):
        # pclose left the pipe's number in the fd table as a pipe (not
        # traced): the file mkstemp opened next on it (glibc's own open,
        # which no wrapper sees) went untraced, its 10 writes lost.
        p = self.run_traced([dltest.program("start_child"), "popen_mkstemp",
                             os.path.join(self.data, "ckpt")], env=self.env())
        path = p.stdout.split()[1]
        writes = [e for e in self.decode().on(path) if e["name"] == "write"]
        self.assertEqual([(e["offset"], e["bytes"]) for e in writes],
                         [(100 * i, 100) for i in range(10)])

    # --- bash --------------------------------------------------------------

    def test_bash_stays_in_the_run_that_started_it(self):
        if not shutil.which("bash"):
            self.skipTest("no bash")
        data = os.path.join(self.data, "f.txt")
        with open(data, "w") as f:
            f.write("x" * 1000)
        script = ("import subprocess;"
                  "subprocess.run(['bash', '-c', 'cat %s >/dev/null; cat %s >/dev/null'],"
                  " check=True)" % (data, data))
        self.run_traced([PYTHON, "-c", script], env=self.env(DLPROF_PYTHON="0"))
        files = dltest.trace_files(self.traces)
        exes = sorted(os.path.basename(f).split("-")[0] for f in files)
        # python, bash, two forked copies of bash, each then cat.
        self.assertEqual(exes.count("cat"), 2, exes)
        self.assertGreaterEqual(exes.count("bash"), 3, exes)
        self.assertEqual(len(self.run_ids()), 1, sorted(
            (os.path.basename(f), dltest.read_header_strings(f)["run_id"]) for f in files))
        t = self.decode()
        self.assertEqual(sum(e.get("bytes", 0) for e in t.on(data)
                             if e["name"] in dltest.READ_NAMES), 2000)

    def test_dump_shows_the_job_not_a_stray_run_inside_it(self):
        # The job writes 300 times, starts a child that is a run of its own
        # (2 events), and writes on.
        script = ("import os, subprocess, sys\n"
                  "def burst(tag):\n"
                  "    for i in range(150):\n"
                  "        with open(os.path.join(sys.argv[1], '%s%d' % (tag, i)), 'w') as f:\n"
                  "            f.write('x')\n"
                  "burst('a')\n"
                  "subprocess.run([sys.argv[2], os.path.join(sys.argv[1], 'stray'), '10'],\n"
                  "               env=dict(os.environ, DLPROF_RUN_ID='stray'), check=True)\n"
                  "burst('b')\n")
        self.run_traced([PYTHON, "-c", script, self.data, dltest.program("write_file")],
                        env=self.env(DLPROF_PYTHON="0"))
        self.assertEqual(len(self.run_ids()), 2)
        t = dltest.decode(self.traces)
        self.assertEqual(t.dump_rc, 0, t.dump_stderr)
        self.assertIn("the largest of the runs that overlap the latest (stray", t.dump_stderr)
        written = [e for e in t.under(self.data) if e["name"] == "write"]
        self.assertEqual(len(written), 300)
        p = dltest.run([dltest.DUMP, "--run", "stray", "--format", "jsonl", self.traces], None)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual({json.loads(l)["path"] for l in p.stdout.splitlines()
                          if json.loads(l).get("name") == "write"},
                         {os.path.join(self.data, "stray")})

    # --- messages ------------------------------------------------------------

    def untraced_tree(self, quiet):
        """A tree of processes that cannot write their traces: Python
        starts a shell as another user (as test_subprocess.test_user does),
        which runs two programs."""
        if os.geteuid() != 0:
            self.skipTest("needs root")
        os.chmod(self.tmp, 0o755)
        os.makedirs(self.traces, mode=0o700)
        pe = dltest.program("print_env")
        script = ("import subprocess, sys;"
                  "subprocess.run(['sh', '-c', sys.argv[1]], user=65534, group=65534,"
                  " extra_groups=[], check=True)")
        env = dltest.traced_env(self.traces, self.env(LD_PRELOAD=dltest.LIB, DLPROF_PYTHON="0"),
                                quiet=quiet)
        return dltest.run([PYTHON, "-c", script, "%s >/dev/null; %s >/dev/null" % (pe, pe)], env)

    def test_quiet_keeps_every_message_off_the_programs_stderr(self):
        p = self.untraced_tree(quiet=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")

    def test_runs_untraced_is_said_once_for_a_tree(self):
        p = self.untraced_tree(quiet=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        said = [l for l in p.stderr.splitlines() if "runs untraced" in l]
        self.assertEqual(len(said), 1, p.stderr)
        self.assertIn("Permission denied", said[0])


if __name__ == "__main__":
    dltest.main()
