"""A process that makes a new user namespace, or enters a mount namespace,
does so as untraced, and keeps its events (lib/intercept/namespaces.cc).

The kernel refuses unshare(CLONE_NEWUSER) and setns into a user, mount or
time namespace to a process of more than one thread, and the tracer's
flusher thread made every traced process (and each forked child) one of
two: the calls failed with EINVAL under the tracer alone, and `unshare -U
id` printed "unshare failed: Invalid argument". programs/namespaces.c
makes the calls between reads of a file in sizes of their own: the same
output as untraced (each call's return value and errno: a successful one
leaves errno as it was, where the flusher's stop once left ESRCH), and every read in
the trace, phase by phase. Skipped where the calls fail untraced too (no
user namespaces, no CAP_SYS_ADMIN for setns).
"""

import collections
import os
import shutil

import dltest
import dltest.reliability as rtest


class NamespacesTest(rtest.RelTestCase):

    def setUp(self):
        super().setUp()
        self.file = self.make_file("input.bin", 4096)

    def run_both(self, cmd, trace_dir=None):
        untraced = dltest.run(cmd, rtest.base_env())
        traced = dltest.run(cmd, rtest.traced_env(trace_dir or self.traces), timeout=60)
        self.assertEqual(untraced.returncode, 0, untraced.stderr)
        return traced, untraced

    def check_program(self, mode, refused):
        traced, untraced = self.run_both([rtest.program("namespaces"), mode, self.file])
        if refused in untraced.stdout:
            self.skipTest("refused untraced too: " + untraced.stdout)
        self.assertEqual(traced.returncode, 0, traced.stderr)
        self.assertEqual(traced.stderr, "")
        # The same lines, errno among them: a successful call leaves the
        # program's (4242, set before it) as untraced.
        self.assertEqual(traced.stdout, untraced.stdout)
        trace = self.decode()  # clean: every block, the end marker
        sizes = collections.Counter(
            (e["pid"], e.get("size")) for e in trace.events
            if e.get("path") == self.file and e["name"] in ("pread", "pread64"))
        return trace, sizes

    def test_unshare_user(self):
        trace, sizes = self.check_program("unshare", "UNSHARE -1")
        (pid,) = {p for p, _ in sizes}
        self.assertEqual(sizes, {(pid, 11): 3, (pid, 13): 5})

    def test_unshare_user_by_number(self):
        trace, sizes = self.check_program("syscall", "SYS_UNSHARE -1")
        (pid,) = {p for p, _ in sizes}
        self.assertEqual(sizes, {(pid, 11): 3, (pid, 13): 5})

    def test_unshare_user_in_forked_child(self):
        trace, sizes = self.check_program("fork", "UNSHARE -1")
        self.assertEqual(len(dltest.trace_files(self.traces)), 2)
        by_pid = collections.defaultdict(dict)
        for (pid, size), n in sizes.items():
            by_pid[pid][size] = n
        self.assertEqual(sorted(by_pid.values(), key=min),
                         [{11: 3, 13: 5}, {17: 7, 19: 4}])

    def test_setns_own_mount_namespace(self):
        trace, sizes = self.check_program("setns", "SETNS -1")
        (pid,) = {p for p, _ in sizes}
        self.assertEqual(sizes, {(pid, 11): 3, (pid, 13): 5})

    def test_unshare_command(self):
        unshare = shutil.which("unshare")
        if unshare is None:
            self.skipTest("no unshare")
        # -r: root in the new namespace (uid_map written), then cat reads.
        text = self.make_file("text.txt", 4096, b"0123456789abcde\n")
        for cmd, traces in (([unshare, "-U", "id", "-u"], os.path.join(self.tmp, "id")),
                            ([unshare, "-r", "cat", text], self.traces)):
            traced, untraced = self.run_both(cmd, traces)
            self.assertEqual((traced.returncode, traced.stdout, traced.stderr),
                             (0, untraced.stdout, ""), cmd)
        reads = [e.get("bytes") for e in self.decode().events  # cat's
                 if e.get("path") == text and e["name"] == "read"]
        self.assertEqual(sum(b for b in reads if b), 4096)

    def test_mount_over_the_trace_directory(self):
        # programs/mount_over.c: unshare(CLONE_NEWUSER|CLONE_NEWNS), then a
        # tmpfs over the traces' directory, then reads from new threads.
        # Right after the unshare the copied mount namespace still showed
        # the trace's path, the kept descriptor was given back, and the
        # mount hid the path: "was removed while the program ran; its events
        # are lost", 0 events written (105 of 301 preads in the rings).
        os.makedirs(self.traces, exist_ok=True)  # (the untraced run mounts on it too)
        cmd = [rtest.program("mount_over"), self.file, self.traces]
        traced, untraced = self.run_both(cmd)
        if "UNSHARE -1" in untraced.stdout or "MOUNT -1" in untraced.stdout:
            self.skipTest("refused untraced too: " + untraced.stdout)
        self.assertEqual((traced.returncode, traced.stdout, traced.stderr),
                         (0, untraced.stdout, ""))
        self.assertIn("PREADS 301\n", untraced.stdout)  # the program's own count
        sizes = collections.Counter(
            e.get("size") for e in self.decode().events
            if e.get("path") == self.file and e["name"] in ("pread", "pread64"))
        self.assertEqual(sizes, {2: 1, 7: 200, 9: 100})


if __name__ == "__main__":
    dltest.main()
