"""One time base for an MPI job whose hosts disagree about the time.

Two ranks under mpirun (MPMD `:` syntax): rank 0 here, rank 1 on a
simulated host that booted a day earlier (a time namespace, its monotonic
clock a day ahead, and a host name of its own) and whose wall clock is 5 s
ahead (libfaketime, loaded after libdlprof.so, monotonic clocks left alone).
They pass files to each other in a known order (programs/mpi_relay.c: a
barrier between turns). Through the wall clocks, rank 1's calls would land
5 s late; the offsets the ranks measure through MPI at MPI_Init and
MPI_Finalize must put every call in its true order, within the error bound
the summary claims. The same run with DLPROF_MPI_CLOCK=0 shows the wall
clock's 5 s (and that the test can tell). Runs under each MPI family.
Skipped without time namespaces or libfaketime."""

import glob
import json
import os
import shutil
import subprocess

import dltest
import dltest.mpi as mpitest

DAY = 86400
FAKETIME = (glob.glob("/usr/lib/*/faketime/libfaketime.so.1") or [""])[0]
ROUNDS = 3


class MpiClockTest(mpitest.MpiTestCase):

    def setUp(self):
        super().setUp()
        if not FAKETIME:
            self.skipTest("no libfaketime (Debian package faketime)")
        if shutil.which("unshare") is None:
            self.skipTest("no unshare")
        probe = subprocess.run(["unshare", "--uts", "--time", "--monotonic", str(DAY),
                                "--fork", "true"], capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=30)
        if probe.returncode != 0:
            self.skipTest("no time namespaces here: %s" % probe.stderr.decode()[-200:])

    def relay(self, extra):
        """mpi_relay on two ranks, rank 1 on the simulated host; returns the
        decoded trace and the summary as JSON."""
        prog = self.program("mpi_relay")
        env = ["DLPROF_DIR=" + self.traces, "DLPROF_RUN_ID=relay", "DLPROF_QUIET=1"] + extra
        rank0 = ["env"] + env + ["LD_PRELOAD=" + dltest.LIB, prog, self.data, str(ROUNDS)]
        rank1 = ["unshare", "--uts", "--time", "--monotonic", str(DAY), "--fork", "sh", "-c",
                 "hostname nodeB && exec env %s LD_PRELOAD=%s:%s FAKETIME=+5s "
                 "FAKETIME_DONT_FAKE_MONOTONIC=1 %s %s %d"
                 % (" ".join(env), dltest.LIB, FAKETIME, prog, self.data, ROUNDS)]
        # The tracer reaches the ranks through `env` only: the launcher,
        # unshare and sh stay untraced.
        cmd = mpitest.launcher_args(1, {}) + rank0 + [":", "-n", "1"] + rank1
        p = dltest.run(cmd, mpitest.launcher_env(), timeout=90)
        self.assertEqual(p.returncode, 0, "%s\n%s\n%s" % (cmd, p.stdout[-3000:], p.stderr[-3000:]))
        trace = self.decode(wait_for_pids=False)
        summary = subprocess.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                                 capture_output=True, text=True, timeout=60)
        self.assertEqual(summary.returncode, 0, summary.stderr)
        return trace, json.loads(summary.stdout)

    def token_calls(self, trace):
        """The reads and writes of the token files, in their true order:
        per round, rank 0 writes token.k.0, rank 1 reads it and writes
        token.k.1."""
        calls = []
        for k in range(ROUNDS):
            for rank, name, token in ((0, "write", "%d.0" % k), (1, "read", "%d.0" % k),
                                      (1, "write", "%d.1" % k)):
                path = os.path.join(self.data, "token." + token)
                got = [e for e in trace.on(path) if e["name"] == name]
                self.assertEqual(len(got), 1, (path, name, got))
                self.assertEqual(got[0]["rank"], rank)
                self.assertEqual(got[0]["bytes"], 4096)
                calls.append(got[0])
        return calls

    def test_measured_offsets_keep_the_true_order(self):
        trace, summary = self.relay([])
        self.assertEqual(sorted(h["rank"] for h in trace.headers), [0, 1])
        hosts = {e["rank"]: e["host"] for e in trace.events}
        self.assertEqual(hosts[1], "nodeB")
        self.assertNotEqual(hosts[0], "nodeB")
        clocks = summary["clocks"]
        self.assertEqual(clocks["method"], "mpi")
        by_host = {d["host"]: d for d in clocks["domains"]}
        node_b = by_host["nodeB"]
        self.assertEqual(node_b["method"], "mpi")
        self.assertEqual(node_b["measurements"], 2)  # at MPI_Init and MPI_Finalize
        self.assertTrue(by_host[hosts[0]]["reference"])
        error = node_b["error_ns"]
        # Half the best round trip between two processes of one machine:
        # microseconds on a quiet one, tens of milliseconds on a CI runner
        # whose cores are all busy; far below the wall clock's 5 s always.
        self.assertGreater(error, 0)
        self.assertLess(error, 10**9)
        calls = self.token_calls(trace)
        for before, after in zip(calls, calls[1:]):
            if before["rank"] == after["rank"]:
                self.assertLessEqual(before["ts"] + before["dur"], after["ts"])
            else:
                self.assertLessEqual(before["ts"] + before["dur"], after["ts"] + error,
                                     (before, after))
        # The run lasts well under a second, not a day or 5 s.
        span = max(e["ts"] for e in trace.events) - min(e["ts"] for e in trace.events)
        self.assertLess(span, 5 * 10**9)
        # One measurement event per phase, in rank 1's trace only.
        offsets = [e for e in trace.events if e["name"] == "clock_offset"]
        self.assertEqual([(e["rank"], e["ret"]) for e in offsets], [(1, 0), (1, 1)])

    def test_without_mpi_offsets_the_wall_clock_is_5_s_off(self):
        trace, summary = self.relay(["DLPROF_MPI_CLOCK=0"])
        self.assertEqual(summary["clocks"]["method"], "wall clock")
        self.assertEqual([e for e in trace.events if e["name"] == "clock_offset"], [])
        calls = self.token_calls(trace)
        # Rank 0's write of token.0.0 and rank 1's read of it: 5 s apart
        # through the wall clocks, where the truth is milliseconds.
        gap = calls[1]["ts"] - calls[0]["ts"]
        self.assertGreater(gap, 4 * 10**9)
        self.assertLess(gap, 6 * 10**9)


if __name__ == "__main__":
    dltest.main()
