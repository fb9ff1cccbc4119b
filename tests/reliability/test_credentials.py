"""A process that changes its credentials runs on as untraced, and keeps its
events (lib/core/trace_sink_credentials.cc).

glibc makes a set-id call on each thread of the process and aborts it when
the call fails on one thread only: `setpriv --reuid=65534 --regid=65534
--clear-groups cat /etc/hostname` died of SIGABRT under the tracer, whose
flusher thread had lost the capability setpriv's own thread kept
(PR_SET_KEEPCAPS is per thread). And a root process that became another
user could no longer open its trace (0600, root's): tracing stopped with
"Permission denied". programs/change_user.c gives up root without exec and
then writes a file: the same exit status and output as untraced, and the
write in the trace; with a second thread reading meanwhile, every one of its
reads too; a child it forks afterwards holds no descriptor of ours (it runs
untraced, its user cannot create a trace in root's directory: silently, as
DLPROF_QUIET asks). Root only (skipped otherwise).
"""

import os
import shutil

import dltest
import dltest.reliability as rtest

NOBODY = 65534


class CredentialsTest(rtest.RelTestCase):

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("needs root")
        # The program's directory is the other user's to write; the traces'
        # stay root's (0700).
        os.chmod(self.tmp, 0o755)
        os.chmod(self.data, 0o777)

    def run_both(self, cmd):
        untraced = dltest.run(cmd, rtest.base_env())
        for name in os.listdir(self.data):
            os.unlink(os.path.join(self.data, name))
        traced = dltest.run(cmd, rtest.traced_env(self.traces), timeout=60)
        self.assertEqual(untraced.returncode, 0, untraced.stderr)
        self.assertEqual(traced.returncode, 0, traced.stderr)
        self.assertEqual(traced.stderr, "")
        return traced, untraced

    def events_on(self, trace, name):
        return [e for e in trace.events if e.get("path") == os.path.join(self.data, name)]

    def check_change(self, mode):
        cmd = [rtest.program("change_user"), mode, self.data, str(NOBODY), str(NOBODY)]
        traced, untraced = self.run_both(cmd)
        strip = lambda out: [l for l in out.splitlines() if not l.startswith("PREADS ")]
        self.assertEqual(strip(traced.stdout), strip(untraced.stdout))
        self.assertIn("IDS %d %d %d %d" % ((NOBODY,) * 4), traced.stdout)
        self.assertIn("ERRNO 4242\n", untraced.stdout)  # successful calls leave errno be
        trace = self.decode()  # clean: every block, the end marker
        pids = {h["pid"] for h in trace.headers if h["ppid"] != 0}
        before = [(e["name"], e.get("bytes")) for e in self.events_on(trace, "before.bin")
                  if e["name"] == "write"]
        self.assertEqual(before, [("write", 100)])
        after = [(e["name"], e.get("bytes")) for e in self.events_on(trace, "after.bin")
                 if e["name"] in ("open", "open64", "openat", "write", "close")]
        self.assertEqual([n for n, _ in after][1:], ["write", "close"])
        self.assertEqual(after[1][1], 4096)
        return trace, traced

    def test_setresuid_then_write(self):
        self.check_change("setresuid")

    def test_keepcaps_as_setpriv_does(self):
        self.check_change("keepcaps")

    def test_a_thread_reads_while_the_user_changes(self):
        trace, traced = self.check_change("threads")
        (n,) = [int(l.split()[1]) for l in traced.stdout.splitlines() if l.startswith("PREADS ")]
        preads = [e for e in self.events_on(trace, "before.bin") if e["name"] in ("pread", "pread64")]
        self.assertEqual(len(preads), n)

    def test_a_child_forked_afterwards(self):
        trace, traced = self.check_change("fork")
        self.assertIn("CHILD FDS 0 1 2\n", traced.stdout)
        self.assertIn("CHILD STATUS 0\n", traced.stdout)
        self.assertEqual(len(dltest.trace_files(self.traces)), 1)  # the child's could not be made

    def test_setpriv(self):
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            self.skipTest("no setpriv")
        cmd = [setpriv, "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
               "cat", "/etc/hostname"]
        traced, untraced = self.run_both(cmd)
        self.assertEqual(traced.stdout, untraced.stdout)
        self.assertTrue(traced.stdout.strip())
        # setpriv's trace, whole (cat, nobody, could make none in root's directory).
        files = dltest.trace_files(self.traces)
        self.assertEqual(len(files), 1)
        self.assertEqual([e["name"] for e in self.decode().events], ["exec"])


if __name__ == "__main__":
    dltest.main()
