"""python3 multiprocessing.Pool: every worker is traced, bytes add up.

scripts/mp_pool.py runs Pool(3) (fork, spawn and forkserver) whose workers
read files and report which pid read what. Every worker must have a trace
whose ppid is the pool's parent (for forkserver: the fork server, a child of
the parent), and each file's bytes must appear exactly
once, in the worker that read it -- also when leaving `with Pool()` calls
terminate() and the workers end by SIGTERM with their events still in memory.
"""

import json
import sys

import dltest


class PoolTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.files = dltest.write_files(self.data, 24, lambda i: 1000 + 517 * i)

    def check_pool(self, method, ending, env=None):
        """`method` fork/spawn: the workers are the parent's children;
        forkserver: children of the fork server, itself the parent's child."""
        p = self.run_traced(
            [sys.executable, dltest.script("mp_pool.py"), method, ending]
            + sorted(self.files), env=env, timeout=120)
        out = json.loads(p.stdout)
        parent, workers = out["parent"], out["workers"]
        self.assertEqual(len(workers), 3)
        trace = self.decode()
        # Every worker has a trace, as a child of the pool's parent.
        for pid in workers:
            self.assertTrue(trace.headers_of(pid), "worker %d has no trace" % pid)
            ppid = trace.ppid_of(pid)
            if method == "forkserver":
                self.assertEqual(trace.ppid_of(ppid), parent)
            else:
                self.assertEqual(ppid, parent)
        # Each file was read once, by the worker that says it read it, and
        # its bytes in the trace are the file's size.
        self.assertEqual(sorted(r[1] for r in out["results"]), sorted(self.files))
        events = trace.under(self.data)
        by_pid = trace.by_pid(events)
        self.assertNotIn(parent, {e["pid"] for e in events
                                  if e["name"] in dltest.READ_NAMES})
        for pid, path, nbytes in out["results"]:
            self.assertIn(pid, workers)
            self.assertEqual(nbytes, self.files[path])
            self.assertEqual(dltest.bytes_by_path(by_pid[pid]).get(path), nbytes,
                             "bytes of %s in worker %d" % (path, pid))
        self.assertEqual(dltest.bytes_by_path(events), self.files)
        return trace, out

    def test_fork_close_join(self):
        self.check_pool("fork", "close")

    def test_spawn_close_join(self):
        self.check_pool("spawn", "close")

    def test_forkserver_close_join(self):
        self.check_pool("forkserver", "close")

    # With a flush interval far longer than the run, the workers' events are
    # still in their buffers when terminate() sends SIGTERM: only the
    # tracer's termination handler can write them.
    def test_fork_terminate(self):
        self.check_pool("fork", "terminate", env={"DLPROF_FLUSH_MS": "600000"})

    def test_spawn_terminate(self):
        self.check_pool("spawn", "terminate", env={"DLPROF_FLUSH_MS": "600000"})

    def test_forkserver_terminate(self):
        self.check_pool("forkserver", "terminate", env={"DLPROF_FLUSH_MS": "600000"})


if __name__ == "__main__":
    dltest.main()
