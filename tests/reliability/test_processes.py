"""Processes: fork storm, fork from a busy multi-threaded parent, vfork,
posix_spawn, exec into an untraced program (programs/forks.c); the rings a
child is given and thread churn leaves behind (programs/forkrings.c).

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
                                                             "thread_start", "exit"}, set())
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

    # The rings sidecar (docs/FORMAT.md): a 4 KiB header and a 1 MiB string
    # log, then one region per ring; DLPROF_BUFFER_KB sets a ring's size.
    RING_KB = 256
    RINGS_BASE = 4096 + (1 << 20)

    def forkrings(self, args, timeout=120):
        p = self.run_traced([rtest.program("forkrings")] + args, timeout=timeout,
                            env={"DLPROF_BUFFER_KB": str(self.RING_KB)})
        kids = {int(k): (int(pid), int(mapped), int(size)) for k, pid, mapped, size in
                re.findall(r"^CHILD (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M)}
        return p, kids

    def test_fork_child_maps_only_its_own_ring(self):
        # A parent whose 64 threads each recorded, then 8 children: each
        # child gets a ring for its one thread, not a copy of every ring
        # the parent had (before: 65 regions in each child's sidecar, 17 MiB
        # here, 130 MB a child of a 256-thread parent), and every event of
        # both is in the trace.
        rtest.skip_forks_under_asan(self)
        threads, children, preads = 64, 8, 500
        path = self.make_file("wide.bin", 100000 + children * preads)
        p, kids = self.forkrings(["wide", path, str(threads), str(children), str(preads)])
        self.assertEqual(sorted(kids), list(range(children)))
        parent = int(re.search(r"^PARENT (\d+)$", p.stdout, re.M).group(1))
        bound = self.RINGS_BASE + 4 * self.RING_KB * 1024
        for k, (pid, mapped, size) in kids.items():
            self.assertLess(mapped, bound, "child %d maps %d bytes of rings" % (k, mapped))
            self.assertLess(size, bound, "child %d's rings file: %d bytes" % (k, size))
        trace = self.decode()
        by_pid = trace.by_pid(trace.on(path))
        self.assertEqual(sorted(e["offset"] for e in by_pid[parent] if e["name"] == "pread"),
                         list(range(threads)))
        for k, (pid, _, _) in kids.items():
            self.assertEqual(trace.ppid_of(pid), parent)
            self.assertEqual([e["offset"] for e in by_pid[pid] if e["name"] == "pread"],
                             [100000 + k * preads + j for j in range(preads)], k)
        self.assert_clean(self.check())
        print("RESULT fork_rings children=%d max_child_mapped=%d max_child_file=%d"
              % (children, max(m for _, m, _ in kids.values()),
                 max(s for _, _, s in kids.values())))

    def test_thread_churn_reuses_rings(self):
        # 3 threads start and join short threads for a second, each of which
        # makes one pread: a new thread takes a ring an ended one left once
        # its events are written, so the rings stay a few more than the
        # threads alive at once (7 here; before: thousands, GBs of sidecar,
        # as the flusher lagged behind the thread starts) -- and a child
        # forked afterwards gets one ring. Every pread of both is in the trace.
        rtest.skip_forks_under_asan(self)
        path = self.make_file("churn.bin", 65536)
        p, kids = self.forkrings(["churn", path, "1000"])
        parent, mapped, size = map(int, re.search(r"^PARENT (\d+) (\d+) (\d+)$",
                                                  p.stdout, re.M).groups())
        n = int(re.search(r"^THREADS (\d+)$", p.stdout, re.M).group(1))
        self.assertGreater(n, 100)
        region = self.RING_KB * 1024 + 4096
        bound = self.RINGS_BASE + 64 * region
        self.assertLess(mapped, bound, "%d threads left %d bytes of rings" % (n, mapped))
        self.assertLess(size, bound, "%d threads left a rings file of %d bytes" % (n, size))
        self.assertEqual(sorted(kids), [0])
        child, child_mapped, child_size = kids[0]
        self.assertLess(child_mapped, self.RINGS_BASE + 4 * self.RING_KB * 1024)
        self.assertLess(child_size, self.RINGS_BASE + 4 * self.RING_KB * 1024)
        check = self.check(seq=["pread"])
        self.assert_clean(check)
        preads = collections.Counter()
        for s in check["seq"]["pread"]:
            preads[s["pid"]] += s["count"]
        self.assertEqual(preads, {parent: n, child: 100})
        print("RESULT thread_churn threads=%d rings_mapped=%d rings_file=%d child_mapped=%d"
              % (n, mapped, size, child_mapped))


if __name__ == "__main__":
    dltest.main()
