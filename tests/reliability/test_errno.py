"""Return values and errno: failing calls return exactly what they return
without the tracer, and the trace records them with the right errno.

- programs/errors.c (tests/integration) makes failing calls (ENOENT,
  ENOTDIR, EISDIR, EEXIST, EBADF, EINVAL, ENOTEMPTY; the tests run as root,
  so no EACCES) and successful ones with errno preset, printing each return
  value and errno. Traced and untraced runs must print the same; each
  failing call on a traced path must be in the trace with its return value
  and errno.
- programs/errs.c: 88 calls across the POSIX, directory, map, dup, copy and
  STDIO wrappers fail (EBADF, ENOENT, EISDIR, ENOTDIR, EEXIST, EINVAL,
  ESPIPE, EACCES, ENOTEMPTY), return short counts at end of file, or are
  interrupted (EINTR: SIGALRM without SA_RESTART during a blocking read of a
  pipe, a pipe stream and a FIFO). Traced and untraced runs must print
  exactly the same return values and errno values, successful calls must
  leave a preset errno alone, and each call on something the tracer follows
  must be in the trace with the return value and errno the program saw.
"""

import errno
import os

import dltest
import dltest.reliability as rtest


class ErrnoTest(rtest.RelTestCase):

    def setUp(self):
        super().setUp()
        with open(os.path.join(self.data, "file"), "w") as f:
            f.write("hello, world\n")
        os.mkdir(os.path.join(self.data, "sub"))
        open(os.path.join(self.data, "sub", "inner"), "w").close()

    def test_same_results_as_untraced(self):
        traced, _ = self.assert_same_as_untraced([rtest.program("errs"), self.data])
        cases = []
        kept = []
        for line in traced.stdout.splitlines():
            f = line.split()
            if f[0] == "CASE":
                cases.append((f[1], f[2], int(f[3]), int(f[4])))
            elif f[0] == "KEPT":
                kept.append((f[1], int(f[2])))
        self.assertGreaterEqual(len(cases), 85)
        self.assertEqual({e for _, e in kept}, {77})
        eintr = [c for c in cases if c[0].endswith("_eintr")]
        self.assertEqual({(r, e) for _, _, r, e in eintr}, {(-1, 4)})
        # Each traced case, in program order, among the trace's events.
        events = self.decode().events
        pos = 0
        for name, event, ret, err in cases:
            if event == "-" or (rtest.SANITIZED and event == "fscanf"):
                continue  # (ASan's fscanf interceptor reaches libc's scanf core directly)
            if ret == -1:
                ok_errno = {err}
            elif event.startswith("posix_f"):
                ok_errno = {ret}  # returns the error number; the trace keeps it as errno
            else:
                # Success, or a short count (fread/fwrite): errno 0, or the
                # stream's error where the stream has one (ferror).
                ok_errno = {0, err}
            names = {event}
            if rtest.SANITIZED and event in ("fprintf", "fscanf"):
                names.add("v" + event)  # the sanitizer's interceptor calls the v-form
            while pos < len(events) and not (
                    events[pos]["name"] in names and events[pos]["ret"] == ret
                    and events[pos]["errno"] in ok_errno):
                pos += 1
            self.assertLess(pos, len(events), "%s: no event %s %d %s in the trace"
                            % (name, event, ret, ok_errno))
            pos += 1
        # readdir at the end of the directory: NULL, errno untouched for the
        # program (77 above), and 0 in the trace, not the stale 77.
        readdirs = [e for e in events if e["name"] in ("readdir", "readdir64")]
        self.assertGreaterEqual(len(readdirs), 2)
        self.assertEqual(readdirs[-1]["ret"], -1)
        self.assertEqual({e["errno"] for e in readdirs}, {0})
        traced_cases = [c for c in cases if c[1] != "-"]
        print("RESULT errno cases=%d in_trace=%d kept=%d"
              % (len(cases), len(traced_cases), len(kept)))



class PosixErrnoTest(dltest.TraceTestCase):
    """programs/errors.c."""


    def setUp(self):
        super().setUp()
        with open(os.path.join(self.data, "file"), "w") as f:
            f.write("hello, world\n")
        os.mkdir(os.path.join(self.data, "subdir"))

    def test_same_results_as_untraced(self):
        cmd = [dltest.program("errors"), self.data]
        traced, _ = self.assert_same_as_untraced(cmd)
        self.assertEqual(traced.stdout.splitlines()[0], "START_ERRNO 0")
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
            "efault_open": errno.EFAULT, "efault_stat": errno.EFAULT,
            "efault_access": errno.EFAULT, "efault_rename": errno.EFAULT,
            "efault_readv": errno.EFAULT, "efault_read": errno.EFAULT,
            "efault_pread": errno.EFAULT, "efault_read_dup": errno.EFAULT,
            "enoent_fstatat_empty": errno.ENOENT, "enoent_statx_empty": errno.ENOENT,
            "enoent_openat_empty": errno.ENOENT,
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
        # The calls on memory the kernel could not read: each recorded, with
        # no path where the path or iovec array was that memory (the tracer
        # reads none of it either); a read into such memory with its file,
        # fd and count (it was recorded as "read(0)", with none of them).
        faulted = [(e["name"], e["errno"]) for e in trace.events
                   if e["errno"] == errno.EFAULT]
        self.assertEqual(faulted, [(c[0], errno.EFAULT) for n, c in cases.items()
                                   if n.startswith("efault_")])
        fd = [e["fd"] for e in trace.on(cases["efault_read"][1])
              if e["name"] == "read" and e["ret"] == 4][0]  # ERRNO_KEPT's read
        faulted = [(e["name"], e["path"], e["fd"], e["size"]) for e in trace.events
                   if e["errno"] == errno.EFAULT and "path" in e]
        self.assertEqual(faulted[:2], [("read", cases["efault_read"][1], fd, 4),
                                       ("pread", cases["efault_pread"][1], fd, 4)])
        self.assertEqual(faulted[2][0:2], ("read", cases["efault_read_dup"][1]))
        # The dup's read: at the shared position, 5.
        self.assertEqual([e["offset"] for e in trace.events
                          if e["errno"] == errno.EFAULT and "path" in e][2], 5)
        # Successful calls carry errno 0.
        ok = [e for e in trace.under(self.data) if e["ret"] >= 0]
        self.assertTrue(ok)
        self.assertEqual({e["errno"] for e in ok}, {0})


if __name__ == "__main__":
    dltest.main()
