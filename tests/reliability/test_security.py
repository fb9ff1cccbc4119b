"""Trace files and what they hold.

- The tracer creates its directories 0700 and its files 0600, whatever the
  umask, in the parent and in forked children.
- A symlink planted at the exact path of the trace file a process is about
  to create (the name is made predictable with a clock shim, see
  shim/fakeclock.c) is not followed: the target is neither written nor
  created, the tracer says it cannot create the file, and the program runs
  unchanged.
- The trace never holds buffer contents: a random secret moved through
  write, pwrite, writev, fwrite, fputs, fprintf, a shared mapping, read,
  pread, readv, fread, fgets and getline appears neither in the raw trace
  files, nor in their decompressed blocks, nor in dlprof-dump's output --
  with call stacks on, too.
"""

import os
import secrets
import stat
import subprocess
import time

import dltest
import dltest.reliability as rtest

FAKE_NS = 123456789012345


class SecurityTest(rtest.RelTestCase):

    def test_modes_whatever_the_umask(self):
        rtest.skip_forks_under_tsan(self)  # forked children write traces too
        rtest.skip_forks_under_asan(self)  # a storm of forks from a threaded parent
        traces = os.path.join(self.tmp, "new", "traces")
        ref = subprocess.run([rtest.program("forks"), "storm",
                              self.make_file("in.bin", 100100), "3"],
                             env=rtest.traced_env(traces), preexec_fn=lambda: os.umask(0),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=60)
        self.assertEqual(ref.returncode, 0, ref.stderr)
        files = dltest.trace_files(traces)
        self.assertEqual(len(files), 4)
        # DLPROF_DIR, its missing parent, and the run's and host's directories.
        host_dirs = {os.path.dirname(f) for f in files}
        self.assertEqual(len(host_dirs), 1, host_dirs)
        (host_dir,) = host_dirs
        for d in (os.path.join(self.tmp, "new"), traces, os.path.dirname(host_dir), host_dir):
            self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o700, d)
        for f in files:
            st = os.lstat(f)
            self.assertTrue(stat.S_ISREG(st.st_mode))
            self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, f)

    def start_with_planted_link(self, link_target):
        """Forks; plants a symlink at the trace path the child will use;
        then the child execs workload under the tracer with the fake clock."""
        # Traces go to DLPROF_DIR/<run id>/<host>/: name the run.
        host_dir = os.path.join(self.traces, "planted", os.uname().nodename)
        os.makedirs(host_dir, exist_ok=True)
        # The shim stops CLOCK_MONOTONIC_RAW, whose reading names the file;
        # traced calls read it too (not the TSC, which the tracer would
        # calibrate against the stopped clock: test_clock_faults.py).
        env = rtest.traced_env(self.traces, {"FAKECLOCK_NS": str(FAKE_NS),
                                             "DLPROF_RUN_ID": "planted",
                                             "DLPROF_CLOCK": "clock_gettime"}, quiet=False)
        env["LD_PRELOAD"] = " ".join(
            ([dltest.PRELOAD_PREFIX] if dltest.PRELOAD_PREFIX else [])
            + [rtest.FAKECLOCK, dltest.LIB_PATH])
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        go_r, go_w = os.pipe()
        prog = rtest.program("workload")
        pid = os.fork()
        if pid == 0:  # the child: wait for the link, then become the program
            try:
                os.close(go_w)
                os.read(go_r, 1)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.execve(prog, [prog, "run", self.data, "1000"], env)
            finally:
                os._exit(127)
        for fd in (go_r, out_w, err_w):
            os.close(fd)
        name = "workload-%s-%d-%x.dlprof" % (os.uname().nodename, pid, FAKE_NS)
        link = os.path.join(host_dir, name)
        os.symlink(link_target, link)
        os.write(go_w, b"x")
        os.close(go_w)
        with os.fdopen(out_r) as o, os.fdopen(err_r) as e:
            out, err = o.read(), e.read()
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status), out, err, link

    def check_not_followed(self, target, exists):
        ref = subprocess.run([rtest.program("workload"), "run", self.data, "1000"],
                             env=rtest.base_env(), stdout=subprocess.PIPE, text=True)
        rc, out, err, link = self.start_with_planted_link(target)
        self.assertEqual((rc, out), (0, ref.stdout))
        lines = rtest.tracer_lines(err)
        self.assertEqual(len(lines), 1, err)
        self.assertRegex(lines[0], r"^dlprof: cannot create %s: File exists; "
                                   r"the program runs untraced$" % link)
        self.assertTrue(os.path.islink(link))
        self.assertEqual(os.path.exists(target), exists)

    def test_planted_symlink_to_a_file(self):
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("VICTIM\n")
        before = os.stat(victim)
        self.check_not_followed(victim, True)
        with open(victim) as f:
            self.assertEqual(f.read(), "VICTIM\n")
        self.assertEqual(os.stat(victim).st_mtime_ns, before.st_mtime_ns)

    def test_planted_dangling_symlink(self):
        self.check_not_followed(os.path.join(self.tmp, "would-be-created"), False)

    def check_no_secret(self, env=None):
        secret = "S3CR3T-" + secrets.token_hex(16)
        p = subprocess.run([rtest.program("secret"), self.data],
                           input=secret + "\n", env=rtest.traced_env(self.traces, env),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        n = len(secret) + 1
        self.assertEqual(p.stdout, "OK 1 %d\n" % (7 * n))
        with open(os.path.join(self.data, "data.txt")) as f:
            self.assertEqual(f.read(), (secret + "\n") * 7)
        raw = os.path.join(self.tmp, "raw.bin")
        check = rtest.trace_check(self.traces, raw=raw)
        self.assert_clean(check)
        needles = [secret.encode(), secret[7:].encode(), secret[-12:].encode(),
                   secret[7:19].encode()]
        blobs = {}
        for name, f in [("decompressed blocks", raw)] + [
                (f, f) for f in dltest.trace_files(self.traces)]:
            with open(f, "rb") as fh:
                blobs[name] = fh.read()
        self.assertGreater(len(blobs["decompressed blocks"]), 0)
        dump = subprocess.run([dltest.DUMP, "--format", "jsonl", self.traces],
                              stdout=subprocess.PIPE, timeout=60).stdout
        blobs["dlprof-dump jsonl"] = dump
        for where, blob in blobs.items():
            for needle in needles:
                self.assertNotIn(needle, blob, "secret found in %s" % where)
        # The calls are there, with their sizes.
        trace = self.decode()
        names = {e["name"] for e in trace.on(os.path.join(self.data, "data.txt"))}
        if rtest.SANITIZED and "vfprintf" in names:
            names.add("fprintf")  # the sanitizer's fprintf interceptor calls vfprintf
        for call in ("write", "pwrite", "writev", "fwrite", "fputs", "fprintf", "mmap",
                     "msync", "read", "pread", "readv", "fread", "fgets", "getline"):
            self.assertIn(call, names)
        print("RESULT secret bytes_searched=%d events=%d"
              % (sum(len(b) for b in blobs.values()), check["events"]))

    def test_no_buffer_contents(self):
        self.check_no_secret()

    def test_no_buffer_contents_with_call_stacks(self):
        self.check_no_secret({"DLPROF_STACKS": "1"})


if __name__ == "__main__":
    dltest.main()
