"""Processes: fork, fork+exec and posix_spawn children are all traced.

Every process writes its own trace file into the same directory, with its
parent's pid; a forked child starts with empty buffers (the parent's pending
events stay the parent's), and _exit, _Exit, exit and exec all flush.
"""

import errno
import json
import os
import re
import signal
import subprocess
import unittest

import dltest


class ForkTest(dltest.TraceTestCase):

    def setUp(self):
        super().setUp()
        self.files = dltest.write_files(self.data, 3, lambda i: 10000 + 1234 * i)
        self.paths = sorted(self.files)

    def run_fork(self, how):
        p = self.run_traced([dltest.program("fork_children"), how] + self.paths)
        parent, parent_bytes = map(int, re.search(r"^PARENT (\d+) (\d+)$",
                                                  p.stdout, re.M).groups())
        children = {}
        for pid, ppid, i, nbytes in re.findall(r"^CHILD (\d+) (\d+) (\d+) (\d+)$",
                                               p.stdout, re.M):
            self.assertEqual(int(ppid), parent)
            children[int(pid)] = (self.paths[int(i)], int(nbytes))
        self.assertEqual(len(children), 3)
        for pid, status in re.findall(r"^WAITED (\d+) (\d+)$", p.stdout, re.M):
            self.assertIn(int(pid), children)
            self.assertEqual(int(status), 0)
        tid, preads = map(int, re.search(r"^THREAD (\d+) (\d+)$", p.stdout, re.M).groups())
        self.assertEqual(parent_bytes, self.files[self.paths[0]])
        return parent, children, tid, preads

    def check_fork(self, how):
        parent, children, tid, preads = self.run_fork(how)
        trace = self.decode()
        # One trace per process: the parent and its three children.
        self.assertEqual(sorted(trace.pids()), sorted([parent] + list(children)))
        self.assertEqual(len(trace.files), 4)
        by_pid = trace.by_pid(trace.under(self.data))
        # The parent: its own read of FILE0 and its thread's preads, once.
        mine = by_pid[parent]
        self.assertEqual(dltest.bytes_by_path(mine, {"read"}),
                         {self.paths[0]: self.files[self.paths[0]]})
        pread_events = [e for e in mine if e["name"] == "pread"]
        self.assertEqual(len(pread_events), preads)
        self.assertEqual({e["tid"] for e in pread_events}, {tid})
        forks = [e for e in trace.events if e["pid"] == parent and e["name"] == "fork"]
        self.assertEqual(sorted(e["ret"] for e in forks), sorted(children))
        for pid, (path, nbytes) in children.items():
            header, = trace.headers_of(pid)
            self.assertEqual(header["ppid"], parent)
            self.assertTrue(header["flags"] & dltest.HEADER_FLAG_FORKED)
            self.assertEqual(nbytes, self.files[path])
            events = by_pid[pid]
            # Only what the child did: open, its reads, close. Nothing the
            # parent or its other thread had pending at the fork.
            self.assertEqual({e["path"] for e in events}, {path})
            self.assertEqual({e["tid"] for e in events}, {pid})
            reads = [e for e in events if e["name"] == "read"]
            self.assertEqual(sum(e["bytes"] for e in reads), nbytes)
            # 1000-byte reads, then the one that finds the end of the file.
            self.assertEqual([e["offset"] for e in reads],
                             list(range(0, nbytes, 1000)) + [nbytes])
            self.assertEqual([e["name"] for e in events],
                             ["open"] + ["read"] * len(reads) + ["close"])

    def test_children_leave_with__exit(self):
        self.check_fork("_exit")

    def test_children_leave_with__Exit(self):
        self.check_fork("_Exit")

    def test_children_leave_with_exit(self):
        self.check_fork("exit")

    def test_children_return_from_main(self):
        self.check_fork("return")

    def test_children_leave_with_quick_exit(self):
        # glibc's quick_exit ends through its own _exit (before: no end
        # marker, the sidecar left behind).
        self.check_fork("quick_exit")

    def test_daemon(self):
        # glibc's daemon() forks and _exits inside libc. The parent's trace
        # has the fork (ret: the daemon's pid) and its end marker; the
        # daemon's is its own, complete (before: the parent had no fork
        # event and no end marker, and left its sidecar).
        path = os.path.join(self.data, "input.bin")
        with open(path, "wb") as f:
            f.write(bytes(range(256)) * 16)
        out = os.path.join(self.tmp, "daemon.out")
        p = self.run_traced([dltest.program("daemon_child"), path, out])
        parent = int(re.search(r"^PARENT (\d+)$", p.stdout, re.M).group(1))
        dltest.wait_until(lambda: os.path.exists(out), 60, "the daemon never wrote")
        with open(out) as f:
            daemon, its_parent, sid = map(int, re.match(r"^DAEMON (\d+) (\d+) (\d+)$",
                                                        f.read()).groups())
        self.assertEqual((its_parent, sid), (parent, daemon))
        trace = self.decode()
        self.assertEqual(trace.pids(), {parent, daemon})
        self.assertEqual(trace.ppid_of(daemon), parent)
        forks = [e for e in trace.by_pid()[parent] if e["name"] == "fork"]
        self.assertEqual([e["ret"] for e in forks], [daemon])
        by_pid = trace.by_pid(trace.on(path))
        self.assertEqual([e["name"] for e in by_pid[parent]], ["open", "read"])
        self.assertEqual([(e["name"], e.get("offset")) for e in by_pid[daemon]],
                         [("pread", k * 100) for k in range(10)] + [("close", None)])
        self.assertEqual([n for _, _, names in os.walk(self.traces) for n in names
                          if n.endswith(".rings")], [])


class ExecTest(dltest.TraceTestCase):

    def test_fork_then_exec(self):
        child_cwd = os.path.join(self.tmp, "elsewhere")
        os.mkdir(child_cwd)
        out = os.path.join(self.data, "exec_child.dat")
        # A relative DLPROF_DIR: the exec'ed child, started in another
        # directory, must still write into <tmp>/traces.
        p = self.run_traced(
            [dltest.program("fork_exec"), self.data, child_cwd,
             dltest.program("write_file"), out, "25000", "4096"],
            trace_dir="traces", cwd=self.tmp)
        parent, child, status = map(int, re.search(
            r"^PARENT (\d+) CHILD (\d+) STATUS (\d+)$", p.stdout, re.M).groups())
        self.assertEqual(status, 0)
        wpid, wppid, wbytes, writes = map(int, re.search(
            r"^WROTE (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M).groups())
        self.assertEqual((wpid, wppid, wbytes, writes), (child, parent, 25000, 7))
        self.assertFalse(os.path.exists(os.path.join(child_cwd, "traces")))
        trace = self.decode()
        self.assertEqual(trace.pids(), {parent, child})
        self.assertEqual(trace.ppid_of(child), parent)
        # The child has two traces: the forked image up to exec, and the
        # program it exec'ed.
        self.assertEqual(len(trace.headers_of(child)), 2)
        self.assertEqual(len(trace.headers_of(parent)), 1)
        writes = dltest.WRITE_NAMES
        by_pid = trace.by_pid(trace.under(self.data))
        self.assertEqual(dltest.bytes_by_path(by_pid[parent], writes),
                         {os.path.join(self.data, "parent.dat"): 5000})
        self.assertEqual(dltest.bytes_by_path(by_pid[child], writes),
                         {os.path.join(self.data, "preexec.dat"): 777, out: 25000})
        exec_events = [e for e in trace.events if e["name"] == "exec"]
        self.assertEqual([e["pid"] for e in exec_events], [child])
        # The exec event names the program; it succeeded (ret 0, errno 0).
        self.assertEqual([(e["path"], e["ret"], e["errno"]) for e in exec_events],
                         [(dltest.program("write_file"), 0, 0)])
        # The exec'ed program's writes come after the exec, at the right offsets.
        mine = [e for e in by_pid[child] if e.get("path") == out and e["name"] == "write"]
        self.assertEqual([e["offset"] for e in mine], list(range(0, 25000, 4096)))
        self.assertGreater(mine[0]["ts"], exec_events[0]["ts"])
        # The summary counts the child once, whatever images it ran: one
        # row naming both, holding both images' writes.
        summary = json.loads(subprocess.run(
            [dltest.DUMP, "--summary", "--format", "json", os.path.join(self.tmp, "traces")],
            capture_output=True, text=True, timeout=60, check=True).stdout)
        self.assertEqual(summary["processes"], 2)
        rows = {r["pid"]: (key, r) for key, r in summary["processes_stats"].items()}
        self.assertEqual(sorted(rows), sorted([parent, child]))
        key, row = rows[child]
        self.assertEqual(key, "pid %d (fork_exec -> write_file) forked" % child)
        self.assertEqual(row["ppid"], parent)
        self.assertEqual(row["write"]["bytes"], 777 + 25000)
        # One track in the timeline, named after its first image.
        chrome = json.loads(subprocess.run(
            [dltest.DUMP, "--format", "chrome", os.path.join(self.tmp, "traces")],
            capture_output=True, text=True, timeout=60, check=True).stdout)["traceEvents"]
        names = [e for e in chrome if e["ph"] == "M" and e["name"] == "process_name"]
        self.assertEqual(sorted(e["pid"] for e in names), sorted([parent, child]))
        self.assertEqual({e["pid"] for e in chrome if e.get("args", {}).get("path") == out},
                         {child})
        # The text summary's row says whose worker it is.
        text = subprocess.run([dltest.DUMP, "--summary", "--details",
                               os.path.join(self.tmp, "traces")],
                              capture_output=True, text=True, timeout=60, check=True).stdout
        self.assertIn("  pid %d (fork_exec -> write_file) forked: worker of pid %d\n"
                      % (child, parent), text)
        # --pid: the summary is of that process alone, both its images (it
        # listed the parent too, as a row of zeros, and said 2 processes).
        summary = json.loads(subprocess.run(
            [dltest.DUMP, "--summary", "--format", "json", "--pid", str(child),
             os.path.join(self.tmp, "traces")],
            capture_output=True, text=True, timeout=60, check=True).stdout)
        self.assertEqual(summary["processes"], 1)
        self.assertEqual([(r["pid"], r["write"]["bytes"])
                          for r in summary["processes_stats"].values()], [(child, 777 + 25000)])
        # The same beside a trace that does not open (a process killed as it
        # started: an empty file), which is no process (it made the count 0).
        run_dir = os.path.dirname(dltest.trace_files(os.path.join(self.tmp, "traces"))[0])
        open(os.path.join(run_dir, "killed-vm-1-1.dlprof"), "w").close()
        p = subprocess.run([dltest.DUMP, "--summary", "--format", "json", "--pid", str(child),
                            os.path.join(self.tmp, "traces")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)  # (the empty trace)
        self.assertEqual(json.loads(p.stdout)["processes"], 1)
        # A pid of no process: no verdict to give, and it says why.
        p = subprocess.run([dltest.DUMP, "--summary", "--pid", "999999",
                            os.path.join(self.tmp, "traces")],
                           capture_output=True, text=True, timeout=60)
        self.assertIn("\ndlprof verdict: none: the selection (--pid, --rank, --host) kept no "
                      "process\n", "\n" + p.stdout)

    def test_failed_exec_goes_on_traced(self):
        p = self.run_traced([dltest.program("exec_fail"), self.data])
        self.assertEqual(p.stdout, "EXEC -1 %d\n" % errno.ENOENT)
        trace = self.decode()
        self.assertEqual(len(trace.files), 1)
        self.assertEqual(dltest.bytes_by_path(trace.events, dltest.WRITE_NAMES), {
            os.path.join(self.data, "before.dat"): 1000,
            os.path.join(self.data, "after.dat"): 2000})
        names = [e["name"] for e in trace.events
                 if e["name"] == "exec" or e.get("path", "").startswith(self.data)]
        self.assertEqual(names, ["open", "write", "close", "exec", "exec",
                                 "open", "write", "close"])
        # The attempt, written before the call, names the program; the
        # call's return then gives the failure, timed from the attempt
        # (before: one event, no program, ret 0 errno 0).
        attempt, result = [e for e in trace.events if e["name"] == "exec"]
        program = "/nonexistent/program"
        self.assertEqual((attempt["path"], attempt["ret"], attempt["errno"]), (program, 0, 0))
        self.assertEqual((result["path"], result["ret"], result["errno"]),
                         (program, -1, errno.ENOENT))
        self.assertEqual(result["ts"], attempt["ts"])
        self.assertGreater(result["dur"], 0)
        # The text and chrome formats name it too.
        text = subprocess.run([dltest.DUMP, self.traces], capture_output=True,
                              text=True, timeout=60, check=True).stdout
        self.assertRegex(text, r'exec\("%s"\) = 0 <[0-9.]+>\n' % program)
        self.assertRegex(text, r'exec\("%s"\) = -1 <[0-9.]+> errno=ENOENT\n' % program)
        chrome = json.loads(subprocess.run(
            [dltest.DUMP, "--format", "chrome", self.traces], capture_output=True,
            text=True, timeout=60, check=True).stdout)
        chrome_execs = [e["args"] for e in chrome["traceEvents"] if e.get("name") == "exec"]
        self.assertEqual([(a["path"], a["ret"], a.get("errno", 0)) for a in chrome_execs],
                         [(program, 0, 0), (program, -1, errno.ENOENT)])

    def test_killed_after_a_failed_exec_has_no_end_marker(self):
        # The failed exec's flush flagged its block final; the process went
        # on and was killed. Not a complete trace: dlprof-dump says it has
        # no end marker (before: no note at all, as if it had ended well).
        p = self.run_traced([dltest.program("exec_fail"), self.data, "kill"],
                            expect_rc=-signal.SIGKILL)
        self.assertEqual(p.stdout, "EXEC -1 %d\n" % errno.ENOENT)
        trace = self.decode(clean=False)
        self.assertEqual(trace.dump_rc, 0, trace.dump_stderr)
        messages = trace.messages()
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("no end marker", messages[0])
        # after.dat's write is in the trace only if a flush came first (the
        # exec's flush took the sidecar away: see the user guide).
        written = dltest.bytes_by_path(trace.events, dltest.WRITE_NAMES)
        self.assertEqual(written[os.path.join(self.data, "before.dat")], 1000)
        self.assertIn(written.get(os.path.join(self.data, "after.dat"), 2000), [2000])


class SpawnTest(dltest.TraceTestCase):

    def check_spawn(self, how):
        out = os.path.join(self.data, "spawned.dat")
        prog = dltest.program("write_file")
        p = self.run_traced(
            [dltest.program("spawn_child"), how, self.data, prog, out, "12345"])
        parent, child, status = map(int, re.search(
            r"^PARENT (\d+) CHILD (\d+) STATUS (\d+)$", p.stdout, re.M).groups())
        self.assertEqual(status, 0)
        wpid, wppid, wbytes, writes = map(int, re.search(
            r"^WROTE (\d+) (\d+) (\d+) (\d+)$", p.stdout, re.M).groups())
        self.assertEqual((wpid, wppid, wbytes), (child, parent, 12345))
        trace = self.decode()
        self.assertEqual(trace.pids(), {parent, child})
        self.assertEqual(trace.ppid_of(child), parent)
        self.assertEqual(len(trace.headers_of(child)), 1)
        by_pid = trace.by_pid(trace.under(self.data))
        self.assertEqual(dltest.bytes_by_path(by_pid[parent], dltest.WRITE_NAMES),
                         {os.path.join(self.data, "spawner.dat"): 3000})
        self.assertEqual(dltest.bytes_by_path(by_pid[child], dltest.WRITE_NAMES),
                         {out: 12345})
        self.assertEqual(len([e for e in by_pid[child] if e["name"] == "write"]),
                         writes)
        # The text summary's row names the traced process that started it
        # (only a fork child's named its parent).
        text = dltest.run([dltest.DUMP, "--summary", "--details", self.traces],
                          dltest.base_env()).stdout
        self.assertIn("  pid %d (write_file): child of pid %d\n" % (child, parent), text)

    def test_posix_spawn(self):
        self.check_spawn("spawn")

    def test_posix_spawnp(self):
        self.check_spawn("spawnp")


class VforkTest(dltest.TraceTestCase):
    """A vfork child runs in its parent's memory until it execs or exits
    (Python's subprocess uses vfork). What it does -- dup2 and close, here --
    must neither show up as the parent's events nor change what the tracer
    knows about the parent's descriptors."""

    def check_vfork(self, how, status=0, clean=True):
        data = os.path.join(self.data, "in.bin")
        out = os.path.join(self.data, "out.bin")
        with open(data, "wb") as f:
            f.write(os.urandom(4000))
        p = self.run_traced([dltest.program("vfork_exec"), data, out, how])
        parent, child, child_status = map(int, re.search(
            r"^PARENT (\d+) CHILD (\d+) STATUS (\d+)$", p.stdout, re.M).groups())
        self.assertEqual(child_status, status)
        self.assertEqual(os.path.getsize(out), 200)
        trace = self.decode(clean=clean)
        events = [(e["pid"], e["name"], e.get("fd"), e.get("offset"), e.get("bytes"))
                  for e in trace.on(data) + trace.on(out)]
        self.assertEqual(sorted(events), sorted([
            (parent, "open", 3, None, None),
            (parent, "read", 3, 0, 1000),
            (parent, "read", 3, 1000, 1000),
            (parent, "close", 3, None, None),
            (parent, "open", 4, None, None),
            (parent, "write", 4, 0, 100),
            (parent, "write", 4, 100, 100),
            (parent, "close", 4, None, None),
        ]))

    # The child runs on the parent's memory and thread state until it
    # execs: its close(3) must not be recorded as the parent's, and its
    # dup2(/dev/null, 4) must not make the tracer lose the parent's writes.
    def test_vfork_then_exec(self):
        self.check_vfork("exec")

    def test_vfork_then__exit(self):
        self.check_vfork("exit")

    # exit() in the child runs the exit handlers in the parent's memory: the
    # tracer's ended the parent's trace, whose later events were lost. Now
    # it leaves the parent's trace be; but glibc marks the handlers run, so
    # the parent's exit runs none (untraced, none of its own either): its
    # trace has no end marker, and its events come from the rings sidecar.
    def test_vfork_then_exit_after_a_failed_exec(self):
        self.check_vfork("exit_after_failed_exec", status=127 << 8, clean=False)
        notes = self.decode(clean=False).messages()
        self.assertEqual(len(notes), 1, notes)
        self.assertIn("no end marker", notes[0])
        self.assertIn("recovered", notes[0])


class VforkOwnFdsTest(dltest.TraceTestCase):
    """A vfork child's read and write on descriptors it opened itself named
    them in its parent's fd table (shared memory), which its skipped close
    never cleared: the parent's next fds of those numbers were taken for
    the child's files. The parent's writes to a mkstemp'd file at fd 4 were
    lost as /dev/null's (0 of 5 recorded), those at fd 3 recorded as writes
    of the child's file at offsets 10..46, and the child's read under the
    parent's pid."""

    def test_child_fds_leave_the_parents_alone(self):
        child_file = os.path.join(self.data, "child.bin")
        with open(child_file, "wb") as f:
            f.write(os.urandom(100))
        p = self.run_traced([dltest.program("vfork_fds"), child_file, self.data])
        parent, child, status = map(int, re.search(
            r"^PARENT (\d+) CHILD (\d+) STATUS (\d+)$", p.stdout, re.M).groups())
        self.assertEqual(status, 0)
        made = {int(fd): path for path, fd in re.findall(r"^FILE (\S+) (\d+)$", p.stdout, re.M)}
        self.assertEqual(sorted(made), [3, 4])
        writes = re.findall(r"^WRITE (\d+) (\d+) (\d+)$", p.stdout, re.M)
        self.assertEqual(len(writes), 10)
        trace = self.decode()
        # Nobody in the parent touched the child's file; the child itself
        # is traced only from its exec on (/bin/true reads none of it).
        self.assertEqual(trace.on(child_file), [])
        for fd, path in made.items():
            expected = [(parent, "write", fd, int(at), int(n))
                        for wfd, at, n in writes if int(wfd) == fd]
            expected.append((parent, "close", fd, None, None))
            got = [(e["pid"], e["name"], e.get("fd"), e.get("offset"), e.get("bytes"))
                   for e in trace.on(path)]
            self.assertEqual(got, expected)


class UnpreparedForkTest(dltest.TraceTestCase):
    """_Fork and a fork by system call run no pthread_atfork handler: the
    child wrote into its parent's rings (shared through the sidecar) -- a
    corrupt trace, a crashed flusher. Now it steps aside until it execs:
    the parent's writes are all recorded, exactly, the child's none, and
    the image it execs is traced as any child's."""

    def check(self, how):
        out = os.path.join(self.data, "out.bin")
        p = self.run_traced([dltest.program("fork_unprepared"), how, out,
                             dltest.program("write_file")], env={"DLPROF_FLUSH_MS": "1"})
        parent, child, status = map(int, re.search(
            r"^PARENT (\d+) CHILD (\d+) STATUS (\d+)$", p.stdout, re.M).groups())
        self.assertEqual(status, 0)
        trace = self.decode()
        writes = [e for e in trace.on(out) if e["name"] == "write"]
        self.assertEqual([(e["pid"], e["offset"], e["bytes"]) for e in writes],
                         [(parent, 100 * i, 100) for i in range(2000)])
        self.assertEqual(trace.on(out + ".child"), [])
        # None of the child's writes taken for its parent's (its events went
        # into the parent's rings, under the parent's pid, path unknown).
        self.assertEqual(len([e for e in trace.events if e["name"] == "write"
                              and e["pid"] == parent and e.get("size") == 100]), 2000)
        execed = [e for e in trace.on(out + ".exec") if e["name"] == "write"]
        self.assertEqual(len(execed), 5)
        self.assertEqual({e["pid"] for e in execed}, {child})
        self.assertNotIn("kind_", " ".join(e["name"] for e in trace.events))

    def test__Fork(self):
        self.check("_Fork")

    def check_storm(self, how):
        # A child made while the parent's flusher held a descriptor low
        # opens as untraced: it does not wait for the parent's flusher,
        # which it does not have (it waited for ever: 3 of 3 runs).
        out = os.path.join(self.data, "out.bin")
        p = self.run_traced([dltest.program("fork_unprepared"), how, out],
                            env={"DLPROF_FLUSH_MS": "1"}, timeout=60)
        self.assertIn("STORM 300", p.stdout)
        self.assertEqual(len([e for e in self.decode().on(out) if e["name"] == "write"]), 300)

    def test__Fork_while_the_tracer_holds_a_descriptor(self):
        self.check_storm("storm")

    def test_clone_while_the_tracer_holds_a_descriptor(self):
        self.check_storm("clone_storm")

    def test_fork_by_system_call(self):
        self.check("syscall")


if __name__ == "__main__":
    dltest.main()
