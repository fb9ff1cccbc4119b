"""The trace directory fails the tracer (programs/workload.c).

The directory cannot be created (a path below /proc, a path below a regular
file), is a regular file, has missing parents (created, 0700), is on a
filesystem that fills up (RLIMIT_FSIZE below the trace size, below the trace
header; a 256 KiB tmpfs where mounting is allowed), or is removed while the
program runs. In every case the program runs to completion with the same
output and exit status as without the tracer, and the tracer says what went
wrong in one line on stderr (none where nothing went wrong).
"""

import os
import resource
import shutil
import stat
import subprocess

import dltest
import dltest.reliability as rtest

N = 200000


class TraceDirTest(rtest.RelTestCase):

    def reference(self, mode="run", n=N):
        ref = os.path.join(self.tmp, "ref")
        os.makedirs(ref, exist_ok=True)
        if mode == "readonly":
            shutil.copy(os.path.join(self.data, "out.bin"), ref)
        p = self.run_untraced([rtest.program("workload"), mode, ref, str(n)])
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def run_job(self, trace_dir, mode="run", n=N, fsize=None, env=None):
        def limit():
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        return subprocess.run([rtest.program("workload"), mode, self.data, str(n)],
                              env=rtest.traced_env(trace_dir, env, quiet=False),
                              preexec_fn=limit,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, timeout=60)

    def check_unharmed(self, trace_dir, messages, mode="run", n=N, fsize=None, env=None):
        """Runs the job; same output as untraced; the tracer's lines on
        stderr match `messages` (regexes), one each."""
        ref = self.reference(mode, n)
        p = self.run_job(trace_dir, mode, n, fsize, env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, ref.stdout)
        self.assertEqual(rtest.without_tracer_lines(p.stderr), "")
        lines = rtest.tracer_lines(p.stderr)
        self.assertEqual(len(lines), len(messages), lines)
        for line, pattern in zip(lines, messages):
            self.assertRegex(line, pattern)
        print("RESULT trace_dir message=%r" % (lines,))
        return p

    def test_dir_below_proc(self):
        d = "/proc/dlprof-no-such/traces"
        self.check_unharmed(d, [r"^dlprof: cannot create /proc/dlprof-no-such: .*; "
                                r"the program runs untraced$"])

    def test_dir_is_a_regular_file(self):
        f = os.path.join(self.tmp, "plain")
        open(f, "w").close()
        self.check_unharmed(f, [r"^dlprof: %s is not a directory; the program runs untraced$" % f])
        self.assertEqual(os.path.getsize(f), 0)

    def test_dir_below_a_regular_file(self):
        f = os.path.join(self.tmp, "plain")
        open(f, "w").close()
        self.check_unharmed(os.path.join(f, "traces"),
                            [r"^dlprof: cannot create %s/traces: Not a directory; "
                             r"the program runs untraced$" % f])

    def test_missing_parents_are_created_0700(self):
        d = os.path.join(self.tmp, "a", "b", "c")
        self.check_unharmed(d, [])
        # ... and the run's and host's directories in it (DLPROF_DIR/<run>/<host>/).
        (f,) = dltest.trace_files(d)
        run_dir = os.path.dirname(os.path.dirname(f))
        self.assertEqual(os.path.dirname(run_dir), d)
        for part in (os.path.join(self.tmp, "a"), os.path.join(self.tmp, "a", "b"), d, run_dir,
                     os.path.dirname(f)):
            self.assertEqual(stat.S_IMODE(os.stat(part).st_mode), 0o700, part)
        check = self.check(d)
        self.assert_clean(check)
        self.assertEqual(check["processes"][0]["kinds"]["pread"], N)

    def check_fsize(self, fsize, env=None, mode="run"):
        p = self.check_unharmed(
            self.traces, [r"^dlprof: cannot write trace .*\.dlprof: File too large; "
                          r"tracing stops here, the program continues$"],
            mode=mode, fsize=fsize, env=env)
        # What was written before the limit decodes, and no block is torn:
        # the file is cut back to its last whole block; it stopped at the
        # limit.
        (f,) = dltest.trace_files(self.traces)
        self.assertLessEqual(os.path.getsize(f), fsize)
        check = self.check()
        (proc,) = check["processes"]
        self.assertEqual(proc["damaged"], 0)
        return proc

    def test_filesystem_full_while_running(self):
        proc = self.check_fsize(128 * 1024)
        self.assertGreater(proc["events"], 0)

    def test_filesystem_full_at_exit(self):
        # Every event is still in memory at exit: the final write, from the
        # program's own thread, is the one that fails. SIGXFSZ must not reach
        # the program.
        self.check_fsize(128 * 1024, env={"DLPROF_FLUSH_MS": "3600000",
                                           "DLPROF_BUFFER_KB": "65536"})

    def test_filesystem_full_before_the_header(self):
        with open(os.path.join(self.data, "out.bin"), "wb") as f:
            f.write(bytes(range(256)) * 256)
        p = self.check_unharmed(
            self.traces, [r"^dlprof: cannot write .*\.dlprof: File too large; "
                          r"the program runs untraced$"],
            mode="readonly", n=1000, fsize=16)
        # The half-made trace is removed, and the program kept no fd of ours.
        self.assertEqual(dltest.trace_files(self.traces), [])

    def test_filesystem_without_space(self):
        mnt = os.path.join(self.tmp, "small")
        os.mkdir(mnt)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            self.skipTest("cannot mount a tmpfs here: " + r.stdout.strip())
        try:
            self.check_unharmed(
                os.path.join(mnt, "traces"),
                [r"^dlprof: cannot write trace .*\.dlprof: No space left on device; "
                 r"tracing stops here, the program continues$"], n=2000000)
            check = self.check(os.path.join(mnt, "traces"))
            self.assertLessEqual(check["damaged"], 1)
        finally:
            subprocess.run(["umount", mnt])

    def test_dir_removed_mid_run(self):
        rtest.skip_forks_under_tsan(self)  # the job forks a child after the removal
        ref = self.reference("wait", 1000)
        # untraced reference gave WAITING then DONE after a line on stdin
        p = subprocess.Popen([rtest.program("workload"), "wait", self.data, "1000"],
                             env=rtest.traced_env(self.traces, quiet=False),
                             stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(dltest.read_line(p.stdout), "WAITING\n")
            shutil.rmtree(self.traces)
            out, err = p.communicate("go\n", timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual("WAITING\n" + out, ref.stdout)
        lines = rtest.tracer_lines(err)
        print("RESULT removed_mid_run messages=%r" % lines)
        self.assertEqual(rtest.without_tracer_lines(err), "")
        self.assertEqual(len(lines), 1, lines)
        self.assertRegex(lines[0], r"^dlprof: trace .*\.dlprof was removed while the program ran")


if __name__ == "__main__":
    dltest.main()
