"""Hosts booted at other times, simulated with Linux time namespaces.

Three `dd` processes run one after the other, each reading what the one
before wrote: on this host, then in a time namespace whose monotonic clock is
a day ahead (a node booted a day earlier), under another host name and in a
pid namespace of its own, then in one two days ahead: the last two have the
same pid on their hosts. Their traces must merge on one time base: the run
lasts seconds, not days; the calls keep their true order; the summary says
how the three clock domains were aligned. Without time namespaces (an old
kernel, no privilege) the test is skipped."""

import collections
import json
import os
import shutil
import subprocess
import time

import dltest

DAY = 86400


class ClockDomainTest(dltest.TraceTestCase):

    def unshare(self, seconds, host, cmd):
        """`cmd` as a shell command in a new UTS and time namespace, traced
        (unshare, sh and hostname are not)."""
        return ["unshare", "--uts", "--pid", "--mount-proc", "--time", "--monotonic",
                str(seconds), "--fork",
                "sh", "-c", "hostname %s && LD_PRELOAD=%s exec %s" % (host, dltest.LIB, cmd)]

    def setUp(self):
        super().setUp()
        if shutil.which("unshare") is None:
            self.skipTest("no unshare")
        # (Traced like the test's programs, into the test's own directory.)
        probe = subprocess.run(self.unshare(DAY, "probe", "true"), capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=30,
                               env=dict(os.environ, DLPROF_DIR=os.path.join(self.tmp, "probe")))
        if probe.returncode != 0:
            self.skipTest("no time namespaces here: %s" % probe.stderr.decode()[-200:])

    def test_two_containers_of_one_host_are_two_processes(self):
        # Two ranks in pid namespaces of their own on one host (one container
        # each): both are pid 1, and when they start in one clock tick (about
        # one run in four) only the pid namespace in their headers tells them
        # apart: they were one process of two images, both ranks' I/O in one
        # row. Each says which namespace it is in before it execs dd.
        env = self.traced_env(self.traces, {"DLPROF_RUN_ID": "job-containers"}, preload=False)
        ranks = []
        for r in range(2):
            out = os.path.join(self.data, "out%d" % r)
            ns = os.path.join(self.data, "ns%d" % r)
            cmd = self.unshare(0, "node1", "dd if=/dev/zero of=%s bs=4096 count=%d" % (out, r + 1))
            cmd[-1] = "readlink /proc/self/ns/pid > %s && " % ns + cmd[-1]
            ranks.append((subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE),
                          ns, out))
        for proc, _, _ in ranks:
            _, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0, err)
        truth = {}
        for _, ns, out in ranks:
            with open(ns) as f:
                truth[out] = f.read().strip()
        self.assertEqual(len(set(truth.values())), 2, truth)
        trace = self.decode(wait_for_pids=False)
        self.assertEqual([h["pid"] for h in trace.headers], [1, 1])
        self.assertEqual({e["path"] for e in trace.events if e.get("path") in truth},
                         set(truth))
        self.assertEqual(sorted(dltest.read_header_strings(p)["pid_ns"]
                                for p in dltest.trace_files(self.traces)),
                         sorted(truth.values()))
        s = self.summary()
        self.assertEqual(s["processes"], 2)
        self.assertEqual(sorted(v["write"]["bytes"] for v in s["processes_stats"].values()),
                         [4096, 8192])

    def test_three_hosts_merge_on_one_time_base(self):
        a = os.path.join(self.data, "a")
        b = os.path.join(self.data, "b")
        env = {"DLPROF_RUN_ID": "job-clocks"}
        self.run_traced(["dd", "if=/dev/zero", "of=" + a, "bs=4096", "count=10"], env)
        self.run_traced(self.unshare(DAY, "nodeB", "dd if=%s of=%s bs=4096" % (a, b)), env,
                        preload=False)
        self.run_traced(self.unshare(2 * DAY, "nodeC", "dd if=%s of=/dev/null bs=4096" % b), env,
                        preload=False)

        # (The pids are of other pid namespaces: nothing to wait for here.)
        trace = self.decode(wait_for_pids=False)
        self.assertEqual(len(trace.headers), 3)
        opens = [(e["ts"], e["path"], e["pid"]) for e in trace.events
                 if e["name"] in ("open", "openat") and e.get("path") in (a, b)]
        self.assertEqual(len(opens), 4, opens)
        # The true order: a written; a read and b written; b read. Each
        # process's calls after the one before it, within seconds.
        by_time = sorted(opens)
        self.assertEqual([p for _, p, _ in by_time], [a, a, b, b])
        self.assertEqual(len({pid for _, _, pid in by_time[1:3]}), 1)
        self.assertLess(by_time[-1][0] - by_time[0][0], 60 * 10**9)

        p = subprocess.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = json.loads(p.stdout)
        self.assertEqual(s["processes"], 3)
        # pids of different hosts collide: a process is named with its host.
        self.assertEqual(len({h["pid"] for h in trace.headers}), 2)
        hosts = sorted(k.split(":")[0] for k in s["processes_stats"])
        self.assertEqual(len(hosts), 3)
        ids = {(v["host"], v["pid"]) for v in s["processes_stats"].values()}
        self.assertEqual(len(ids), 3)
        self.assertEqual(sorted(h for h, _ in ids)[:2], ["nodeB", "nodeC"])
        self.assertTrue(all(v["rank"] == -1 for v in s["processes_stats"].values()))
        self.assertEqual(hosts[:2], ["nodeB", "nodeC"])
        self.assertLess(s["run_end_ns"] - s["run_start_ns"], 60 * 10**9)
        self.assertLess(len(s["per_second"]), 61)
        domains = s["clocks"]["domains"]
        self.assertEqual(len(domains), 3)
        self.assertEqual(sorted(d["host"] for d in domains)[:2], ["nodeB", "nodeC"])
        shifts = sorted(round(d["shift_ns"] / 1e9 / DAY) for d in domains)
        # Relative to the reference, the others are a day or two away.
        self.assertIn(shifts, ([-2, -1, 0], [-1, 0, 1], [0, 1, 2]))
        for d in domains:
            self.assertLess(d["error_ns"], 10**6)  # the pairs agree within 1 ms

        # The timeline: a track per process, named with its host, in the
        # true order.
        p = subprocess.run([dltest.DUMP, "--format", "chrome", self.traces],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        chrome = json.loads(p.stdout)["traceEvents"]
        names = {e["pid"]: e["args"]["name"] for e in chrome
                 if e["ph"] == "M" and e["name"] == "process_name"}
        self.assertEqual(len(names), 3)
        self.assertEqual(sorted(n.split(":")[0] for n in names.values())[:2], ["nodeB", "nodeC"])
        chrome_opens = sorted((float(e["ts"]), e["args"].get("path")) for e in chrome
                              if e["ph"] == "X" and e["name"] in ("open", "openat")
                              and e.get("args", {}).get("path") in (a, b))
        self.assertEqual([p for _, p in chrome_opens], [a, a, b, b])

        # The text summary says how the clocks were aligned.
        text = subprocess.run([dltest.DUMP, "--summary", self.traces], capture_output=True,
                              text=True, timeout=60).stdout
        self.assertIn("3 clock domains", text)
        self.assertIn("through their wall clocks", text)
        for d in domains:
            self.assertEqual(d["method"], "reference" if d["reference"] else "wall clock")

        # The listing names each line's host (the pids collide), in the true
        # order too.
        listing = subprocess.run([dltest.DUMP, self.traces], capture_output=True, text=True,
                                 timeout=60).stdout.splitlines()
        opened = [line.split()[1] for line in listing
                  if ' open' in line and ('"%s"' % a in line or '"%s"' % b in line)]
        self.assertEqual(len(opened), 4, listing[:20])
        self.assertEqual(opened[1:3], ["nodeB", "nodeB"])
        self.assertEqual(opened[3], "nodeC")


    def test_a_bounded_run_on_two_hosts_is_one_time_base(self):
        """DLPROF_KEEP=1s, programs/keep_loop for two seconds on this host,
        then in a time namespace a day ahead (a node booted a day earlier),
        each batch waited for 5 ms longer so that DLPROF_KEEP_WHEN keeps a
        window in each: the whole run from the counters lasts seconds, not
        a day, and the kept windows lie in their true order on the job's
        time base (the second process's after the first's)."""
        data = os.path.join(self.data, "data.bin")
        with open(data, "wb") as f:
            f.truncate(1 << 24)
        keep = {"DLPROF_KEEP": "1s", "DLPROF_KEEP_WHEN": "batch_wait>10%"}
        env = dict(keep, DLPROF_RUN_ID="job-keep-clocks")
        loop = "%s %s 2 2000 0 2 5" % (dltest.program("keep_loop"), data)
        self.run_traced(loop.split(), env)
        self.run_traced(self.unshare(DAY, "nodeB", "env %s %s" % (
            " ".join("%s='%s'" % kv for kv in keep.items()), loop)), env, preload=False)
        p = subprocess.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        s = json.loads(p.stdout)
        w = s["whole_run"]
        self.assertEqual(w["processes"], 2)
        self.assertEqual(len(s["clocks"]["domains"]), 2)
        self.assertLess(w["end_ns"] - w["start_ns"], 60 * 10**9, w)
        self.assertLess(w["kept_event_ns"], 60 * 10**9, w)
        # A window kept in each process (a second one where the loop ran
        # on past the first's end: the rule fires at every interval's end),
        # in the order the processes ran, inside the run.
        kept = sorted((k["from_ns"], k["to_ns"], k["host"]) for k in w["kept"])
        hosts = [host for _, _, host in kept]
        self.assertIn(hosts.count("nodeB"), (1, 2), kept)
        self.assertIn(len(hosts) - hosts.count("nodeB"), (1, 2), kept)
        self.assertEqual(hosts, sorted(hosts, key=lambda h: h == "nodeB"), kept)
        for from_ns, to_ns, _ in kept:
            self.assertTrue(w["start_ns"] <= from_ns < to_ns <= w["end_ns"] + 10**9, (kept, w))

    def test_one_pid_twice_on_a_host_is_two_processes(self):
        """Two dd's one after the other, each pid 1 in a pid namespace of its
        own on one host (as a reused pid): two rows of the summary, each
        with its own reads (they were added up in one row)."""
        a = os.path.join(self.data, "a")
        with open(a, "wb") as f:
            f.write(b"x" * 40960)
        env = {"DLPROF_RUN_ID": "job-pid-reused"}
        for count in (3, 7):
            # (Started in another clock tick than the first: the kernel's
            # start time, in ticks of 10 ms, is what tells a process's
            # images apart from another process of its pid.)
            time.sleep(0.03)
            self.run_traced(self.unshare(0, "nodeB", "dd if=%s of=/dev/null bs=4096 count=%d"
                                         % (a, count)), env, preload=False)
        s = self.summary()
        self.assertEqual(s["processes"], 2)
        reads = {key: row["read"]["bytes"] for key, row in s["processes_stats"].items()}
        self.assertEqual(reads, {"pid 1 (dd)": 3 * 4096, "pid 1 (dd) #2": 7 * 4096})
        # The text listing numbers them as the summary does: a reader can
        # tell whose each read is (both were "pid 1/1").
        p = subprocess.run([dltest.DUMP, "--path", a, self.traces],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        heads = [line.split()[2] for line in p.stdout.splitlines() if line.startswith("# pid ")]
        self.assertEqual(heads, ["1", "1#2"], p.stdout)
        reads = collections.Counter(line.split()[2] for line in p.stdout.splitlines()
                                    if " read(" in line)
        self.assertEqual(reads, {"1/1": 3, "1#2/1": 7}, p.stdout)


if __name__ == "__main__":
    import unittest
    unittest.main()
