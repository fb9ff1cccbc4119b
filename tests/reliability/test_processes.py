"""Processes: fork storm, fork from a busy multi-threaded parent, vfork,
posix_spawn, exec into an untraced program (programs/forks.c).

Each child that runs traced must leave its own complete trace (end marker,
its parent's pid, exactly its own calls); the parent's trace holds none of
the children's calls; a child started without LD_PRELOAD leaves no trace;
nothing deadlocks (every run has a timeout).
"""

import collections
import os
import re

import dltest
import dltest.reliability as rtest

STORM = 100
BUSY = 50


class ProcessTest(rtest.RelTestCase):

    def setUp(self):
        rtest.skip_forks_under_tsan(self)
        super().setUp()
        self.file = self.make_file("input.bin", 100000 + STORM + 16)

    def children(self, stdout):
        out = {}
        for i, pid, status in re.findall(r"^CHILD (\d+) (\d+) (-?\d+)$", stdout, re.M):
            out[int(i)] = (int(pid), int(status))
        return out

    def test_fork_storm(self):
        rtest.skip_forks_under_asan(self)
        p = self.run_traced([rtest.program("forks"), "storm", self.file, str(STORM)],
                            timeout=120)
        kids = self.children(p.stdout)
        self.assertEqual(len(kids), STORM)
        self.assertEqual({s for _, s in kids.values()}, {0})
        trace = self.decode()
        parent = os.getpid()  # placeholder, replaced below
        parents = [h for h in trace.headers if h["pid"] not in {k for k, _ in kids.values()}]
        self.assertEqual(len(parents), 1)
        parent = parents[0]["pid"]
        self.assertEqual(len(trace.files), STORM + 1)
        by_pid = trace.by_pid(trace.on(self.file))
        for i, (pid, _) in kids.items():
            self.assertEqual(trace.ppid_of(pid), parent)
            self.assertEqual(len(trace.headers_of(pid)), 1)
            self.assertTrue(trace.headers_of(pid)[0]["flags"] & dltest.HEADER_FLAG_FORKED)
            got = [(e["name"], e.get("offset"), e.get("bytes")) for e in by_pid[pid]]
            self.assertEqual(got, [("pread", 3 * i, 1), ("pread", 3 * i + 1, 1),
                                   ("pread", 3 * i + 2, 1), ("open", None, None),
                                   ("pread", 100000 + i, 1), ("close", None, None)], i)
        self.assertEqual([e["name"] for e in by_pid[parent]], ["open", "close"])
        forks = [e for e in trace.by_pid()[parent] if e["name"] == "fork"]
        self.assertEqual(sorted(e["ret"] for e in forks), sorted(p for p, _ in kids.values()))
        check = self.check()
        self.assert_clean(check)  # every child wrote its end marker
        print("RESULT fork_storm processes=%d events=%d"
              % (len(check["processes"]), check["events"]))

    def test_fork_while_threads_record(self):
        rtest.skip_forks_under_asan(self)
        p = self.run_traced([rtest.program("forks"), "busy", self.file, str(BUSY)],
                            timeout=120)
        kids = self.children(p.stdout)
        self.assertEqual(len(kids), BUSY)
        self.assertEqual({s for _, s in kids.values()}, {0})
        workers = {int(t): int(n) for t, n in re.findall(r"^WORKER (\d+) (\d+)$", p.stdout, re.M)}
        self.assertEqual(len(workers), 4)
        kid_pids = {pid: i for i, (pid, _) in kids.items()}
        # The parent's million events: counted per thread by trace_check.
        check = self.check(seq=["pread"])
        self.assert_clean(check)
        self.assertEqual(len(check["processes"]), BUSY + 1)
        parent = [pr for pr in check["processes"] if pr["pid"] not in kid_pids]
        self.assertEqual(len(parent), 1)
        parent = parent[0]["pid"]
        per_tid = {s["tid"]: s["count"] for s in check["seq"]["pread"] if s["pid"] == parent}
        self.assertEqual(per_tid, workers)  # no worker event lost or doubled
        # The children's traces, decoded by dlprof-dump.
        files = [pr["file"] for pr in check["processes"] if pr["pid"] in kid_pids]
        trace = dltest.decode(self.traces, paths=files)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        self.assertEqual(trace.messages(), [])
        child_events = collections.defaultdict(list)
        for e in trace.on(self.file):
            child_events[e["pid"]].append((e["name"], e["offset"]))
        for pid, i in kid_pids.items():
            self.assertEqual(trace.ppid_of(pid), parent)
            self.assertEqual(child_events[pid], [("pread", 5000 + i)] * 2, i)
        print("RESULT busy_fork children=%d worker_preads=%d events=%d"
              % (BUSY, sum(workers.values()), check["events"]))

    def test_vfork_spawn_and_untraced_exec(self):
        p = self.run_traced([rtest.program("forks"), "spawn", self.file,
                             rtest.program("forks")], timeout=60)
        spawned = {tag: (int(pid), int(st)) for tag, pid, st in
                   re.findall(r"^SPAWNED (\w+) (\d+) (-?\d+)$", p.stdout, re.M)}
        ran = {tag: int(pid) for tag, pid in re.findall(r"^CHILDRAN (\w+) (\d+)$", p.stdout, re.M)}
        self.assertEqual(set(spawned), {"vfork", "spawn", "untraced", "vfork_exit"})
        self.assertEqual(spawned["vfork_exit"][1], 7 << 8)
        for tag in ("vfork", "spawn", "untraced"):
            self.assertEqual(spawned[tag], (ran[tag], 0))
        trace = self.decode()
        pids = trace.pids()
        parent = [h["pid"] for h in trace.headers if h["pid"] not in ran.values()]
        self.assertEqual(len(parent), 1)
        parent = parent[0]
        # Traced children: their own trace, the parent's pid recorded.
        for tag in ("vfork", "spawn"):
            pid = ran[tag]
            self.assertIn(pid, pids)
            self.assertEqual(trace.ppid_of(pid), parent)
            got = [(e["name"], e.get("offset")) for e in trace.by_pid(trace.on(self.file))[pid]]
            self.assertEqual(got, [("open", None)] + [("pread", k) for k in range(5)]
                             + [("close", None)])
        # Exec without LD_PRELOAD: the forked child is traced up to its
        # exec (that trace ends there, with its end marker), and the new
        # image is not traced at all.
        untraced = ran["untraced"]
        self.assertEqual(len(trace.headers_of(untraced)), 1)
        self.assertEqual([e["name"] for e in trace.by_pid()[untraced]], ["exec"])
        # A vfork child that only _exit()s writes nothing of its own.
        self.assertNotIn(spawned["vfork_exit"][0], pids)
        self.assertEqual(len(trace.files), 4)
        # The parent went on tracing after all of it.
        mine = [(e["name"], e.get("offset")) for e in trace.by_pid(trace.on(self.file))[parent]]
        self.assertEqual(mine, [("open", None), ("pread", 42), ("close", None)])
        self.assert_clean(self.check())

    def check_clone_vm(self, mode, n=20000):
        # The clone(CLONE_VM) child runs on its parent's thread state and
        # ring: the thread steps aside (before: both filled one ring at
        # once, zero-filled kind_0 events and lost ones, "0 dropped").
        cmd = [rtest.program("forks"), mode, self.file, str(n)]
        p = self.run_traced(cmd, quiet=False, timeout=60)
        status = int(re.search(r"^CLONED \d+ (-?\d+)$", p.stdout, re.M).group(1))
        self.assertEqual(status, 0)  # the child read every byte
        trace = self.decode()
        self.assertEqual(set(trace.pids()), {trace.headers[0]["pid"]})
        self.assertEqual({e["name"] for e in trace.events} - {"open", "pread", "close",
                                                             "thread_start"}, set())
        offsets = collections.Counter(e["offset"] for e in trace.on(self.file)
                                      if e["name"] == "pread")
        return p, offsets

    def test_clone_vm_steps_the_thread_aside(self):
        p, offsets = self.check_clone_vm("clonevm")
        # The 100 preads before the clone, and nothing of either after it.
        self.assertEqual(offsets, collections.Counter(range(100)))
        self.assertEqual(p.stderr.count("shares thread"), 1, p.stderr)

    def test_clone_vm_vfork_steps_aside_until_it_returns(self):
        n = 20000
        p, offsets = self.check_clone_vm("clonevfork", n)
        # Before the clone and after it returned: the parent's; the child's none.
        want = collections.Counter(range(100))
        want.update(2000 + k % 1000 for k in range(n))
        self.assertEqual(offsets, want)
        self.assertNotIn("shares thread", p.stderr)


if __name__ == "__main__":
    dltest.main()
