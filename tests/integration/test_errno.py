"""Return values and errno: failing calls return exactly what they return
without the tracer, and the trace records them with the right errno.

programs/errors.c makes failing calls (ENOENT, ENOTDIR, EISDIR, EEXIST,
EBADF, EINVAL, ENOTEMPTY; the tests run as root, so no EACCES) and successful
ones with errno preset, printing each return value and errno. Traced and
untraced runs must print the same; each failing call on a traced path must be
in the trace with its return value and errno.
"""

import errno
import os

import dltest


class ErrnoTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        with open(os.path.join(self.data, "file"), "w") as f:
            f.write("hello, world\n")
        os.mkdir(os.path.join(self.data, "subdir"))

    def test_same_results_as_untraced(self):
        cmd = [dltest.program("errors"), self.data]
        traced, _ = self.assert_same_as_untraced(cmd)
        cases = {}
        kept = {}
        for line in traced.stdout.splitlines():
            f = line.split()
            if f[0] == "CASE":
                cases[f[1]] = (f[2], f[3], int(f[4]), int(f[5]))
            elif f[0] == "ERRNO_KEPT":
                kept[f[1]] = int(f[3])
        # The program did what it set out to do.
        want_errno = {
            "enoent": errno.ENOENT, "enotdir": errno.ENOTDIR,
            "eisdir_open": errno.EISDIR, "eexist": errno.EEXIST,
            "ebadf_read": errno.EBADF, "eisdir_read": errno.EISDIR,
            "eisdir_pread": errno.EISDIR, "ebadf_write_rdonly": errno.EBADF,
            "einval_pread": errno.EINVAL, "einval_lseek": errno.EINVAL,
            "enoent_stat": errno.ENOENT, "eexist_mkdir": errno.EEXIST,
            "enotempty_rmdir": errno.ENOTEMPTY,
        }
        for name, e in want_errno.items():
            self.assertEqual(cases[name][2:], (-1, e), name)
        self.assertEqual(kept, {"read": 77, "pread": 78, "fstat": 79,
                                "lseek": 80, "close": 81, "stat": 82})

        # Every failing call on a path in the data dir is in the trace, in
        # order, with its return value and errno.
        trace = self.decode()
        want = [(call, path, ret, err) for call, path, ret, err in cases.values()
                if path != "-"]
        got = [(e["name"], e["path"], e["ret"], e["errno"])
               for e in trace.under(self.data) if e["errno"] != 0]
        self.assertEqual(got, want)
        # Successful calls carry errno 0.
        ok = [e for e in trace.under(self.data) if e["ret"] >= 0]
        self.assertTrue(ok)
        self.assertEqual({e["errno"] for e in ok}, {0})


if __name__ == "__main__":
    dltest.main()
