"""dlprof-dump --format perfetto in Perfetto's own model of processes,
threads and machines, so that its trace processor fills its process, thread
and machine tables (SQL by pid, the UI's process groups, thread_slice).

Real programs (a parent and its forked children, threads whose reads are
counted, a child that exec's, ranks) are traced; the .pftrace is decoded
with `protoc --decode` against perfetto_trace.proto (Perfetto's published
field numbers) and read by dltest.perfetto as the trace processor reads
it. Checked against what the programs did and against the jsonl events of
the same traces: a process descriptor per process with its pid, name and
command line; a thread descriptor per thread with its pid and tid; every
slice on the thread track of the thread that made the call; and, for
three hosts (UTS namespaces, two in pid namespaces of their own so that
their pids collide), a machine per host, each host's processes on its own;
ranks a launcher's shell gives at exec named on both timelines; and a pid
reused on one host, two processes.
"""

import collections
import json
import os
import re
import shutil
import socket
import subprocess

import dltest
from dltest.perfetto import PerfettoTrace, fields, protoc_decode, require_protoc


class PerfettoProcessesTest(dltest.TraceTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        require_protoc()

    def perfetto(self):
        """The trace of self.traces: decoded by protoc (no field the .proto
        does not name), and as the trace processor reads it."""
        out = os.path.join(self.tmp, "job.pftrace")
        p = subprocess.run([dltest.DUMP, "--format", "perfetto", "--perfetto-compression",
                            "none", "-o", out, self.traces], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        with open(out, "rb") as f:
            data = f.read()
        p = protoc_decode(data)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        text = p.stdout.decode()
        self.assertEqual([l for l in text.splitlines() if re.match(r"\s*\d+: ", l)], [])
        for name in ("process {", "thread {", "pid: ", "tid: ", "process_name: ", "cmdline: ",
                     "process_ordering: PROCESS_ORDERING_EXPLICIT", "system_info {"):
            self.assertTrue(name in text, "no %r in protoc's output" % name)
        trace = PerfettoTrace(data)
        self.assertEqual(trace.open_at_end, 0)
        return trace, text

    def processes(self, trace):
        """(machine name, pid) -> the process track of each process."""
        out = {}
        for t in trace.tracks.values():
            if "pid" in t and "tid" not in t:
                key = (trace.machines[t["machine"]], t["pid"])
                self.assertNotIn(key, out)  # a descriptor per process
                out[key] = t
        return out

    def slices_by_thread(self, trace):
        """Each slice on a thread's track as (machine name, pid, tid, name, ts)."""
        got = collections.Counter()
        for s in trace.slices:
            thread = trace.thread_of(s["track"])
            if thread is not None:
                t = trace.tracks[thread]
                got[(trace.machines[t["machine"]], t["pid"], t["tid"], s["name"], s["ts"])] += 1
        return got

    def events_by_thread(self):
        return collections.Counter((e["host"], e["pid"], e["tid"], e["name"], e["ts"])
                                   for e in dltest.decode(self.traces).events
                                   if e["name"] != "stack")

    def test_a_descriptor_per_process_and_thread(self):
        env = {"DLPROF_RUN_ID": "perfetto-processes"}
        files = sorted(dltest.write_files(self.data, 3, lambda i: 20000 + i))
        self.run_traced([dltest.program("fork_children"), "_exit"] + files, env=env)
        threads = self.run_traced([dltest.program("threads_pread"), files[0], "3", "200"],
                                  env=dict(env, RANK="1"))
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.mkdir(elsewhere)
        # (The program exec'ed under a name its trace's file sorts first by:
        # the process is named after the image that ran first all the same.)
        first_by_name = os.path.join(self.tmp, "a_write_file")
        shutil.copy(dltest.program("write_file"), first_by_name)
        self.run_traced([dltest.program("fork_exec"), self.data, elsewhere,
                         first_by_name, os.path.join(self.data, "exec.dat"),
                         "25000", "4096"], env=env)
        trace, _ = self.perfetto()
        decoded = dltest.decode(self.traces)
        events = decoded.events
        headers = [dict(h, **dltest.read_header_strings(h["file"])) for h in decoded.headers]

        # One machine (this host), a process per (host, pid): the child that
        # exec'ed is one process of two images.
        self.assertEqual(list(trace.machines.values()), [socket.gethostname()])
        processes = self.processes(trace)
        self.assertEqual(set(processes), {(e["host"], e["pid"]) for e in events})
        self.assertEqual(len(processes), len({h["pid"] for h in headers}))
        self.assertLess(len(processes), len(headers))  # the exec'ed child
        for (host, pid), t in processes.items():
            images = [h for h in headers if h["pid"] == pid]
            first = min(images, key=lambda h: h["process_start_ns"])
            self.assertEqual(t["cmdline"], first["cmdline"].split("\0"), images)
            rank = {e["rank"] for e in events if e["pid"] == pid}
            self.assertEqual(len(rank), 1)
            (rank,) = rank
            self.assertEqual(t["process_name"].endswith(" [rank %d]" % rank), rank >= 0, t)
            self.assertEqual(t["name"], "%s [rank %d] (pid %d)" % (t["process_name"][:-9], rank,
                                                                   pid)
                             if rank >= 0 else "%s (pid %d)" % (t["process_name"], pid))

        # A thread descriptor per thread that made a call, of its process;
        # the main thread named after the executable.
        thread_tracks = [t for t in trace.tracks.values() if "tid" in t]
        self.assertEqual(sorted((trace.machines[t["machine"]], t["pid"], t["tid"])
                                for t in thread_tracks),
                         sorted({(e["host"], e["pid"], e["tid"]) for e in events}))
        for t in thread_tracks:
            process = processes[(trace.machines[t["machine"]], t["pid"])]
            self.assertEqual(trace.tracks[trace.process_of(t["parent"])], process)
            if t["tid"] == t["pid"]:
                self.assertTrue(t["thread_name"], t)
        # threads_pread's 3 threads: 200 preads each, on their own tracks.
        reads = {int(m.group(1)): int(m.group(2))
                 for m in re.finditer(r"TID (\d+) (\d+) \d+", threads.stdout)}
        self.assertEqual(len(reads), 3)
        by_tid = collections.Counter(trace.tracks[trace.thread_of(s["track"])]["tid"]
                                     for s in trace.slices if s["name"] == "pread")
        for tid, n in reads.items():
            self.assertEqual(by_tid[tid], n)

        # Every slice on the track of the thread that made the call.
        self.assertEqual(self.slices_by_thread(trace), self.events_by_thread())

    def test_workers_follow_their_rank_with_their_parent(self):
        """A rank's forked workers (fork_children under RANK=1, three children)
        come right after their rank's process, and a ProcessTree entry per
        process gives each worker its parent (the trace processor's
        process.parent_upid); a process whose parent is not traced has none."""
        env = {"DLPROF_RUN_ID": "perfetto-workers"}
        files = sorted(dltest.write_files(self.data, 3, lambda i: 8192 + i))
        parent = self.run_traced([dltest.program("fork_children"), "_exit"] + files,
                                 env=dict(env, RANK="1"))
        parent_pid = int(re.search(r"PARENT (\d+)", parent.stdout).group(1))
        self.run_traced([dltest.program("threads_pread"), files[0], "2", "10"],
                        env=dict(env, RANK="0"))
        self.run_traced([dltest.program("read_files"), files[1]], env=env)
        trace, text = self.perfetto()
        self.assertIn("process_tree {", text)
        events = dltest.decode(self.traces).events
        pids = {e["pid"] for e in events}
        workers = sorted({e["pid"] for e in events if e["rank"] == 1} - {parent_pid})
        self.assertEqual(len(workers), 3)
        # A ProcessTree entry per process, the workers' parent the rank's process.
        self.assertEqual(set(trace.process_tree), {(0, pid) for pid in pids})
        # Its command line is the descriptor's process name alone: the trace
        # processor names a process after it, and keeps that name over the
        # descriptor's (which has the rank).
        processes = self.processes(trace)
        for (_, pid), entry in trace.process_tree.items():
            self.assertEqual(entry["ppid"], parent_pid if pid in workers else None, (pid, entry))
            self.assertEqual(entry["cmdline"], [processes[(socket.gethostname(), pid)]["process_name"]])
        # The job's order: rank 0, then rank 1's process and its workers, then
        # the process without a rank.
        order = [t["pid"] for t in sorted(processes.values(), key=lambda t: t["rank"])]
        (rank0,) = {e["pid"] for e in events if e["rank"] == 0}
        self.assertEqual(order[0], rank0)
        self.assertEqual(order[1:5], [parent_pid] + workers)
        self.assertEqual(len(order), 6)

    def test_a_machine_per_host_keeps_colliding_pids_apart(self):
        # Three "hosts" (UTS namespaces), the other two in pid namespaces of
        # their own, so that pids collide, as test_clock_domains.py does.
        if shutil.which("unshare") is None:
            self.skipTest("no unshare")
        env = {"DLPROF_RUN_ID": "perfetto-hosts"}

        def on_host(host, cmd):
            return ["unshare", "--uts", "--pid", "--mount-proc", "--fork", "sh", "-c",
                    "hostname %s && LD_PRELOAD=%s exec %s" % (host, dltest.LIB, cmd)]
        probe = dltest.run(on_host("probe", "true"),
                           dltest.traced_env(os.path.join(self.tmp, "probe"), preload=False))
        if probe.returncode != 0:
            self.skipTest("no namespaces here: %s" % probe.stderr[-200:])
        a = os.path.join(self.data, "a")
        self.run_traced(["dd", "if=/dev/zero", "of=" + a, "bs=4096", "count=10"], env)
        for host in ("nodeC", "nodeB"):
            self.run_traced(on_host(host, "dd if=%s of=/dev/null bs=4096" % a), env,
                            preload=False)
        trace, text = self.perfetto()

        # A machine per host, named after it, numbered in the hosts' order
        # (machine 0, the first, carries no machine_id).
        hosts = sorted([socket.gethostname(), "nodeB", "nodeC"])
        self.assertEqual(trace.machines, dict(enumerate(hosts)))
        self.assertIn("machine_id: 2", text)
        self.assertEqual(set(trace.roots), {0, 1, 2})  # each with its process ordering
        # The namespaced dd's are both pid 1, and stay two processes: one on
        # each machine (the reader checks every event's track is on the
        # event's machine, as Perfetto resolves uuids per machine).
        processes = self.processes(trace)
        self.assertEqual(len(processes), 3)
        self.assertIn(("nodeB", 1), processes)
        self.assertIn(("nodeC", 1), processes)
        for (host, _), t in processes.items():
            self.assertTrue(t["name"].startswith(host + ": "), t)
            self.assertTrue(t["process_name"].startswith("dd "), t)
        # Each machine's slices on a sequence of its own.
        sequences = collections.defaultdict(set)
        for raw in trace.packet_list:
            f = dict((k, v) for k, _, v in fields(raw))
            if 10 in f:
                sequences[f[10]].add(f.get(98, 0))
        self.assertTrue(all(len(m) == 1 for m in sequences.values()), sequences)
        self.assertEqual(set().union(*sequences.values()), {0, 1, 2})
        # A track per host, in the hosts' order.
        host_tracks = sorted((t["rank"], t["name"]) for t in trace.tracks.values()
                             if t["parent"] == 0 and "pid" not in t)
        self.assertEqual([n for _, n in host_tracks], hosts)
        # Every slice on its host's process's thread.
        want = self.events_by_thread()
        self.assertGreater(sum(want.values()), 30)
        self.assertEqual(self.slices_by_thread(trace), want)


    def test_a_rank_given_at_exec_names_its_process(self):
        """A launcher script starts its ranks as `RANK=i prog &`: bash forks
        (an image with no rank, bash's command line) and the child execs prog
        with RANK=i. Each of those processes is of its rank on both
        timelines: Perfetto's process_name, track name and ProcessTree entry,
        its place in the job's order, and the Chrome JSON's process_name."""
        if shutil.which("bash") is None:
            self.skipTest("no bash")
        env = {"DLPROF_RUN_ID": "perfetto-exec-ranks"}
        writer = dltest.program("write_file")
        script = " ".join("RANK=%d %s %s %d &" % (r, writer, os.path.join(self.data, "r%d" % r),
                                                   1000 * (r + 1)) for r in range(3)) + " wait"
        launch = self.run_traced(["bash", "-c", script], env=env)
        # What each rank's process wrote says which it was: rank r, (r+1) kB.
        wrote = [tuple(int(v) for v in m.groups())
                 for m in re.finditer(r"WROTE (\d+) (\d+) (\d+)", launch.stdout)]
        self.assertEqual(len(wrote), 3, launch.stdout)
        ranks = {pid: nbytes // 1000 - 1 for pid, _, nbytes in wrote}
        self.assertEqual(sorted(ranks.values()), [0, 1, 2])
        (bash,) = {ppid for _, ppid, _ in wrote}
        trace, _ = self.perfetto()
        processes = self.processes(trace)
        host = socket.gethostname()
        self.assertEqual(set(processes), {(host, pid) for pid in list(ranks) + [bash]})
        for pid, rank in ranks.items():
            t = processes[(host, pid)]
            self.assertTrue(t["process_name"].endswith(" [rank %d]" % rank), t)
            self.assertEqual(t["name"], "%s (pid %d)" % (t["process_name"], pid))
            self.assertEqual(trace.process_tree[(0, pid)]["cmdline"], [t["process_name"]])
        self.assertNotIn("[rank", processes[(host, bash)]["process_name"])
        # The job's order: ranks 0, 1, 2, then the launcher, which has none.
        order = [t["pid"] for t in sorted(processes.values(), key=lambda t: t["rank"])]
        self.assertEqual(order, sorted(ranks, key=ranks.get) + [bash])
        chrome = json.loads(subprocess.run(
            [dltest.DUMP, "--format", "chrome", self.traces], stdout=subprocess.PIPE,
            check=True, timeout=120).stdout)["traceEvents"]
        names = {e["pid"]: e["args"]["name"] for e in chrome
                 if e["ph"] == "M" and e["name"] == "process_name"}
        self.assertEqual(set(names), set(ranks) | {bash})
        for pid, rank in ranks.items():
            self.assertTrue(names[pid].endswith(" [rank %d] (pid %d)" % (rank, pid)), names)

    def test_a_pid_reused_on_a_host_is_two_processes(self):
        """In a pid namespace of its own, a traced shell sets ns_last_pid so
        that both the programs it runs get pid 10 (one after the other):
        two processes of one host with one pid. The trace processor looks
        processes up by pid on their machine, so the later one has a pid of
        its own there (its name says "pid 10#2", the summary's numbering),
        its threads with it, and each process holds its own program's
        writes; both are the shell's children in the ProcessTree."""
        if shutil.which("unshare") is None:
            self.skipTest("no unshare")
        env = {"DLPROF_RUN_ID": "perfetto-reuse"}
        last_pid = "echo 9 > /proc/sys/kernel/ns_last_pid"
        writer = dltest.program("write_file")
        # (The second starts tens of ms after the first: the kernel's start
        # time, in ticks of 10 ms, tells a process from an exec'd image of
        # one; two in one tick are read as one process. A loop of the
        # shell's own, which starts no process of its own.)
        spin = "i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done"
        inner = " && ".join([last_pid, "%s %s 3000" % (writer, os.path.join(self.data, "a")),
                             spin, last_pid,
                             "%s %s 7000" % (writer, os.path.join(self.data, "b")),
                             "echo done"])
        p = self.run_traced(["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
                             "LD_PRELOAD=%s exec sh -c '%s'" % (dltest.LIB, inner)],
                            env=env, preload=False, expect_rc=None)
        if p.returncode != 0:
            self.skipTest("no pid namespace or ns_last_pid here: %s" % p.stderr[-200:])
        # Each program's pid, parent and writes (1000 bytes each).
        wrote = [tuple(int(v) for v in m.groups())
                 for m in re.finditer(r"WROTE (\d+) (\d+) \d+ (\d+)", p.stdout)]
        self.assertEqual([(pid, ppid) for pid, ppid, _ in wrote], [(10, 1), (10, 1)], p.stdout)
        self.assertEqual([n for _, _, n in wrote], [3, 7])
        trace, text = self.perfetto()
        processes = self.processes(trace)
        host = socket.gethostname()
        # The shell (pid 1) and two processes of pid 10: the first keeps its
        # pid, the later one gets one that no process of the machine has.
        self.assertEqual(len(processes), 3, processes)
        self.assertIn((host, 1), processes)
        writes = collections.Counter()
        for s in trace.slices:
            thread = trace.thread_of(s["track"])
            if s["name"] == "write" and thread is not None:
                t = trace.tracks[thread]
                self.assertEqual(t["tid"], 10, t)
                writes[trace.tracks[trace.process_of(thread)]["pid"]] += 1
        self.assertEqual(len(writes), 2, writes)
        (later,) = set(writes) - {10}
        self.assertEqual(writes, {10: 3, later: 7})
        self.assertNotIn(later, (1, 10))
        self.assertTrue(processes[(host, 10)]["name"].endswith(" (pid 10)"), processes)
        self.assertTrue(processes[(host, later)]["name"].endswith(" (pid 10#2)"), processes)
        # Both the shell's children (ProcessTree ppid: the trace processor's
        # parent_upid), each entry named as its descriptor.
        for pid in (10, later):
            self.assertEqual(trace.process_tree[(0, pid)],
                             {"ppid": 1, "cmdline": [processes[(host, pid)]["process_name"]]})
        # The Chrome JSON tells them apart by name too.
        chrome = json.loads(subprocess.run(
            [dltest.DUMP, "--format", "chrome", self.traces], stdout=subprocess.PIPE,
            check=True, timeout=120).stdout)["traceEvents"]
        names = sorted(e["args"]["name"] for e in chrome
                       if e["ph"] == "M" and e["name"] == "process_name")
        self.assertEqual(len(set(names)), 3, names)
        self.assertEqual(sum(n.endswith(" (pid 10#2)") for n in names), 1, names)


if __name__ == "__main__":
    dltest.main()
