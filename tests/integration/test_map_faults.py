"""Reading through memory maps: page faults on mapped files, exact.

programs/map_touch.c evicts a file's pages, maps it and touches chosen
pages, printing for each touch its file offset, the major faults it took
(getrusage) and when it began and ended (CLOCK_MONOTONIC_RAW, the trace's
clock). The trace must hold a major_fault event for exactly the touches
that faulted, with their offsets, on the file, inside the touch, and
timed like the touches; a region the faults fell in must say how many
there were and how long the thread was off the CPU, as the program
measured. programs/no_perf_events.c refuses perf_event_open (a seccomp
filter, as a container's profile would): the trace then says so in its
header and the regions still carry the faults and the time.
"""

import os

import dltest

MB = 1 << 20
# The CPU time of the work at a region's ends between the program's clock
# reads and the library's (a Python call, getrusage, the event), and the
# TSC's conversion (integration.clock): what off-CPU brackets allow either
# side. 10 us held on a quiet machine; with every core busy, the caches the
# other processes evict stretched it past 13 us (2 of 10 runs of
# scripts/stress-tests.sh, and the CI clone's suite beside them), so 100 us:
# small beside the time a region's 9 or 10 faults keep it off the CPU
# (0.35 to 20 ms).
OFF_CPU_NS = 100000
# A fault's start may lie this far before the clock read just before the
# code that took it (lib/core/map_faults.h, kFaultEntryNs), and a recorded
# end this far past a clock read just after (the TSC's conversion:
# integration.clock).
FAULT_ENTRY_NS = 50000 + 4000
CLOCK_NS = 4000


def lines(stdout, tag):
    return [dltest.parse_fields(l.replace(tag + "\t", "EV\t", 1))
            for l in stdout.splitlines() if l.startswith(tag + "\t")]


class MapFaultsTest(dltest.TraceTestCase):

    def make_file(self, mb=16):
        path = os.path.join(self.data, "tokens.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(mb * MB))
        return path

    def run_touch(self, mode, prefix=(), env=None):
        path = self.make_file()
        p = self.run_traced(list(prefix) + [dltest.program("map_touch"), mode, path], env=env)
        trace = self.decode()
        return path, lines(p.stdout, "TOUCH"), trace, p.stdout

    def faults(self, trace, path, pid=None):
        return [e for e in trace.events if e["name"] == "major_fault" and e.get("path") == path
                and (pid is None or e["pid"] == pid)]

    def header_faults(self, pid=None):
        """The `faults` header string of map_touch's traces (of `pid`)."""
        out = []
        for f in dltest.trace_files(self.traces):
            strings = dltest.read_header_strings(f)
            if (strings["exe"].endswith("/map_touch")
                    and (pid is None or dltest.read_header(f)["pid"] == pid)):
                out.append(strings["faults"])
        return out

    def assert_faults_match(self, touches, faults):
        """One fault per touch that took a major fault, at its offset, on its
        thread, served inside the touch; and no other."""
        # (A touch may also fault on another file: the program's own code,
        # evicted meanwhile.)
        faulted = [t for t in touches if t["major"] > 0]
        self.assertEqual([e["offset"] for e in faults], [t["offset"] for t in faulted])
        for t, e in zip(faulted, faults):
            self.assertEqual((e["pid"], e["tid"]), (t["pid"], t["tid"]), e)
            self.assertEqual(e["size"], 4096)
            self.assertGreaterEqual(e["bytes"], 4096)
            # Served inside the touch; begun no earlier than the kernel's
            # records allow (map_faults.h: at most 50 us before it stopped).
            end = e["ts"] + e["dur"]
            self.assertLessEqual(end, t["t1"], e)
            self.assertGreater(end, t["t0"], e)
            self.assertGreaterEqual(e["ts"], t["t0"] - 50000, e)

    def assert_off_cpu(self, record, region, touches):
        """A region's time off the CPU (wall less CPU time, the library's
        reads at its ends) against the program's own brackets: no more than
        it measured around the region (its CPU clock read inside its wall
        clock's, so that CPU time just outside the region counts in both),
        no less than its touches inside it spent off the CPU (each CPU
        clock read just outside the wall clock's; the reads' own CPU time in
        addition)."""
        inside = sum(max(0, t["t1"] - t["t0"] - t["cpu"]) for t in touches)
        self.assertEqual(len(touches), 10)
        self.assertLessEqual(inside - OFF_CPU_NS, record["off_cpu_ns"], (record, touches))
        self.assertLessEqual(record["off_cpu_ns"], region["ns"] - region["cpu_ns"] + OFF_CPU_NS,
                             (record, region))

    def test_touched_pages_exact(self):
        path, touches, trace, out = self.run_touch("random")
        self.assertTrue(self.header_faults()[0].startswith("events; "), self.header_faults())
        faults = self.faults(trace, path)
        self.assertEqual(len(faults), 36)
        self.assert_faults_match(touches, faults)
        # MADV_RANDOM: the kernel reads the page alone (a first fault may
        # also read the file's extent map).
        self.assertLessEqual(sum(e["bytes"] for e in faults), 36 * 4096 + 8 * 4096)
        # The time the faults held the thread, against the touches' own clock.
        # (A fault may start up to 50 us before its touch: the program's own
        # work since it came back from the previous one, map_faults.h.) A
        # fault that stopped to wait for its page (a voluntary context switch
        # in its touch) held the thread at least while the touch was off the
        # CPU without waiting for one (its time less its CPU time and its
        # run_delay). Its entry and its read's submission before the wait are
        # not timed (map_faults.h): with every core busy they took half of a
        # touch (30 of 65 us). A fault whose page came in before it had to
        # wait takes no context switch and is not timed at all (a loaded
        # virtual machine's, while the host held its CPU: 28 touches in a
        # row once, each 25-35 us off the CPU with no switch and no
        # run_delay).
        faulted = [t for t in touches if t["major"]]
        waited = [(t, e) for t, e in zip(faulted, faults) if t["waits"] > 0]
        self.assertTrue(waited, touches)
        held_waiting = sum(e["dur"] for t, e in waited)
        blocked = sum(max(0, t["t1"] - t["t0"] - t["cpu"] - t["delay"]) for t, e in waited)
        self.assertGreaterEqual(held_waiting, 0.8 * blocked, (held_waiting, blocked, len(waited)))
        held = sum(e["dur"] for e in faults)
        touched = sum(t["t1"] - t["t0"] for t in faulted)
        self.assertLess(held, touched + 50000 * len(faults))

    def test_regions_carry_their_faults(self):
        path, touches, trace, out = self.run_touch("random")
        regions = lines(out, "REGION")
        records = [e for e in trace.events if e.get("kind") == "region_faults"]
        self.assertEqual([e["name"] for e in records], ["fetch_batch"] * 4)
        self.assertEqual([e["major_faults"] for e in records], [r["major"] for r in regions])
        for k, (e, r) in enumerate(zip(records, regions)):
            self.assertTrue(e["fault_events"], e)
            self.assertLessEqual(e["dur"], r["ns"])
            self.assert_off_cpu(e, r, touches[10 * k:10 * k + 10])

    def test_summary_counts_reads_through_maps(self):
        path, touches, trace, out = self.run_touch("random")
        faults = self.faults(trace, path)
        summary = self.summary()
        row = summary["files"][path]
        # Read through its map only: a data file, never "opened and never read".
        self.assertEqual(row["class"], "data")
        self.assertNotIn(path, [f[0] if isinstance(f, list) else f for f in summary["never_read"]])
        self.assertEqual(row["read"]["ops"], 0)
        maps = row["maps"]
        self.assertEqual(maps["faults"], 36)
        self.assertEqual(maps["bytes"], sum(e["bytes"] for e in faults))
        self.assertEqual(maps["time_ns"], sum(e["dur"] for e in faults))
        # Pages at random, in the program's order: the first is unclassified.
        offsets = [t["offset"] for t in touches if t["major"]]
        sequential = sum(1 for a, b in zip(offsets, offsets[1:]) if b >= a + 4096)
        self.assertEqual((maps["first"], maps["sequential"], maps["random"]),
                         (1, sequential, 35 - sequential))
        self.assertEqual(summary["file_classes"]["data"]["maps"]["faults"], 36)
        details = dltest.run([dltest.DUMP, "--summary", "--details", self.traces], dltest.base_env())
        self.assertIn(" read in 36 major faults, ", details.stdout)

    def test_read_around_bytes(self):
        path, touches, trace, out = self.run_touch("around")
        (io,) = lines(out, "IO")
        faults = self.faults(trace, path)
        self.assert_faults_match(touches, faults)
        # The faults' read-around, and what the kernel read ahead after them.
        got = sum(e["bytes"] for e in trace.on(path) if e["name"] in ("major_fault", "map_readahead"))
        # The kernel read around each fault: the pages brought in, as
        # /proc/self/io counts them.
        self.assertGreater(io["read_bytes"], 2 * len(faults) * 4096)
        self.assertLessEqual(abs(got - io["read_bytes"]), 0.05 * io["read_bytes"], (got, io))

    def test_copies_wait_for_pages_read_ahead(self):
        """Copies out of a map wait for pages the kernel is still reading
        ahead: minor faults, each a map_wait event from the fault taken to
        the fault served. Each lies inside its copy; together they hold at
        least 80 % of the copies' time asleep (off the CPU, not waiting for
        one), as the program measured it (the major faults alone held 2 to
        3 % of it in 384 MiB scans here), and none is the 100 ms sleep just
        before the copies."""
        path = self.make_file(192)
        p = self.run_traced([dltest.program("map_touch"), "copy", path])
        trace = self.decode()
        copies = lines(p.stdout, "COPY")
        self.assertEqual(len(copies), 191)  # (the first MiB, page 0 touched, not copied)
        if not any(c["waits"] for c in copies):
            self.skipTest("no copy waited for a page (storage faster than the copies)")
        waits = [e for e in trace.on(path) if e["name"] == "map_wait"]
        self.assertTrue(waits)
        for e in waits:
            self.assertEqual((e["size"], e["bytes"]), (4096, 0), e)
            self.assertEqual(e["offset"] % 4096, 0)
        timed = waits + [e for e in self.faults(trace, path) if e["offset"] > 0]
        held = 0
        for c in copies:
            # A wait from the fault taken: inside the copy. (A major fault
            # may begin up to a fault's entry before its wait.)
            inside = [e for e in timed if c["t0"] - FAULT_ENTRY_NS <= e["ts"] < c["t1"]]
            for e in inside:
                if e["name"] == "map_wait":
                    self.assertGreaterEqual(e["ts"], c["t0"] - CLOCK_NS, (e, c))
                self.assertLessEqual(e["ts"] + e["dur"], c["t1"] + CLOCK_NS, (e, c))
            held += sum(e["dur"] for e in inside)
        outside = [e for e in timed if not any(
            c["t0"] - FAULT_ENTRY_NS <= e["ts"] < c["t1"] for c in copies)]
        self.assertEqual(outside, [])
        asleep = sum(max(0, c["t1"] - c["t0"] - c["cpu"] - c["delay"]) for c in copies
                     if c["waits"] > 0)
        misses = [(c["offset"] >> 20, c["t1"] - c["t0"] - c["cpu"] - c["delay"], c["waits"])
                  for c in copies if c["waits"] > 0 and not any(
                      c["t0"] - FAULT_ENTRY_NS <= e["ts"] < c["t1"] for e in timed)]
        self.assertGreaterEqual(held, 0.8 * asleep, (held, asleep, misses))
        # Their time is reading through the map, in the file's figures.
        row = self.summary()["files"][path]
        self.assertEqual(row["maps"]["waits"], len(waits))
        self.assertGreaterEqual(row["maps"]["time_ns"], held)

    def test_split_and_moved_mappings(self):
        path, touches, trace, out = self.run_touch("split")
        faults = self.faults(trace, path)
        self.assertEqual(len(faults), sum(1 for t in touches if t["major"]))
        self.assert_faults_match(touches, faults)
        names = [e["name"] for e in trace.on(path) if e["name"] in ("mmap", "munmap", "mremap")]
        self.assertEqual(names, ["mmap", "munmap", "mremap", "munmap", "munmap"])
        (remap,) = [e for e in trace.on(path) if e["name"] == "mremap"]
        self.assertEqual((remap["offset"], remap["size"]), (56 * 4096, 40 * 4096))

    def test_mremap_dontunmap(self):
        # The old range stays mapped beside the new one: faults on both are
        # the file's. (And the new address reaches the kernel: map_touch.c.)
        path, touches, trace, out = self.run_touch("dontunmap")
        if out.startswith("SKIP"):
            self.skipTest(out.strip())
        self.assertEqual(len(touches), 8)
        self.assert_faults_match(touches, self.faults(trace, path))
        self.assertEqual(len(self.faults(trace, path)), sum(1 for t in touches if t["major"]))

    def test_map_inherited_through_fork(self):
        path, touches, trace, out = self.run_touch("fork")
        pids = sorted({t["pid"] for t in touches})
        self.assertEqual(len(pids), 2)
        for pid in pids:
            mine = [t for t in touches if t["pid"] == pid]
            self.assertEqual(len(mine), 12)
            self.assert_faults_match(mine, self.faults(trace, path, pid))
        child = [p for p in pids if trace.ppid_of(p) in pids][0]
        self.assertTrue(self.header_faults(child)[0].startswith("events; "))

    def test_thread_started_before_the_map(self):
        path, touches, trace, out = self.run_touch("thread")
        self.assertEqual(len({t["tid"] for t in touches}), 1)
        self.assertNotEqual(touches[0]["tid"], touches[0]["pid"])
        self.assert_faults_match(touches, self.faults(trace, path))

    def test_populated_map_read_ahead_is_its_own(self):
        # What MAP_POPULATE reads inside mmap is read-ahead for that map,
        # not for the file the thread faulted on last.
        path = self.make_file()
        with open(path + ".b", "wb") as f:
            f.write(os.urandom(8 * MB))
        p = self.run_traced([dltest.program("map_touch"), "populate", path])
        (populated,) = lines(p.stdout, "POPULATE")
        trace = self.decode()
        ahead = [e for e in trace.events if e["name"] == "map_readahead"]
        on_b = sum(e["bytes"] for e in ahead if e.get("path") == path + ".b")
        self.assertGreater(populated["read_bytes"], 4 * MB)
        self.assertGreaterEqual(on_b, 0.9 * populated["read_bytes"], ahead)
        self.assertLess(sum(e["bytes"] for e in ahead if e.get("path") == path), 1 * MB, ahead)
        # Read only by its map's read-ahead (no fault, no call), the file is
        # data read through a map; it was "other" and "opened and never read".
        s = self.summary()
        self.assertEqual(s["files"][path + ".b"]["class"], "data", s["files"][path + ".b"])
        self.assertNotIn(path + ".b", s["never_read"])

    def test_populated_map_right_after_faults_is_its_own(self):
        # The same with no pause: the tracer reads the faults and the reads
        # inside mmap in the same look, and what was read after the mmap
        # began is still that map's, not the faults' (they had taken all of
        # it: a review's 8 MiB read-around given 16 to 24 MiB).
        path = self.make_file()
        with open(path + ".b", "wb") as f:
            f.write(os.urandom(32 * MB))
        p = self.run_traced([dltest.program("map_touch"), "populate_now", path])
        (populated,) = lines(p.stdout, "POPULATE")
        (faulted,) = lines(p.stdout, "FAULTED")
        touches = lines(p.stdout, "TOUCH")
        trace = self.decode()
        self.assert_faults_match(touches, self.faults(trace, path))
        read = [e for e in trace.events if e["name"] in ("major_fault", "map_readahead")]
        on_b = sum(e["bytes"] for e in read if e.get("path") == path + ".b")
        on_a = sum(e["bytes"] for e in read if e.get("path") == path)
        self.assertGreater(populated["read_bytes"], 16 * MB)
        self.assertGreaterEqual(on_b, 0.9 * populated["read_bytes"], (populated, read))
        # No more than the thread read before that mmap (a page a fault at
        # least), nor than the file holds.
        floor = 4096 * sum(1 for t in touches if t["major"])
        self.assertLessEqual(on_a, max(faulted["read_bytes"], floor), (faulted, read))
        self.assertLessEqual(on_a, os.path.getsize(path), read)

    def test_a_faults_bytes_are_no_more_than_its_map_holds(self):
        # A thread faults on a 64 KiB map and at once reads 32 MiB of an
        # excluded file (its calls unrecorded): the tracer reads the fault
        # in a look that counts those storage reads too, and the fault is
        # given no more than its map holds (it had them all).
        path = self.make_file()
        with open(path + ".b", "wb") as f:
            f.write(os.urandom(32 * MB))
        p = self.run_traced([dltest.program("map_touch"), "small_map", path],
                            env={"DLPROF_EXCLUDE": path + ".b:/proc"})
        touches = lines(p.stdout, "TOUCH")
        trace = self.decode()
        faults = self.faults(trace, path)
        self.assert_faults_match(touches, faults)
        self.assertEqual(len(faults), 1, faults)
        self.assertLessEqual(faults[0]["bytes"], 16 * 4096, faults)

    def test_an_untraced_files_faults_are_not_read_ahead(self):
        # Faults on a file dlprof does not trace (a library's pages paged in
        # again, say) read around themselves: not read-ahead for the traced
        # file the thread faulted on before. (Files of 96 KiB: the kernel's
        # default window around a fault, 128 KiB, reads each whole, whatever
        # read_ahead_kb the device has.)
        path = self.make_file()
        os.mkdir(os.path.join(self.data, "untraced"))
        others = [os.path.join(self.data, "untraced", "lib%d.so" % k) for k in range(6)]
        for other in others:
            with open(other, "wb") as f:
                f.write(os.urandom(24 * 4096))
        p = self.run_traced([dltest.program("map_touch"), "untraced", path] + others,
                            env={"DLPROF_EXCLUDE": os.path.join(self.data, "untraced")})
        (untraced,) = lines(p.stdout, "UNTRACED")
        trace = self.decode()
        self.assertEqual(untraced["major"], 6, untraced)
        self.assertEqual(untraced["read_bytes"], 6 * 24 * 4096, untraced)
        self.assertEqual([e for e in trace.events if e["name"] == "map_readahead"], [])
        self.assertEqual([e["bytes"] for e in self.faults(trace, path)], [4096] * 6)

    def run_readers(self, mode, mb=64):
        """Runs a mode whose readers print READER lines; returns the file,
        the lines and the trace."""
        path = self.make_file(mb)
        p = self.run_traced([dltest.program("map_touch"), mode, path])
        return path, lines(p.stdout, "READER"), self.decode()

    def assert_readers_bytes(self, path, readers, trace):
        """Each reader's bytes through the map in the trace (its faults'
        and its read-ahead) are what its own storage reads grew by."""
        for r in readers:
            got = sum(e["bytes"] for e in trace.on(path)
                      if e["name"] in ("major_fault", "map_readahead")
                      and (e["pid"], e["tid"]) == (r["pid"], r["tid"]))
            self.assertLessEqual(abs(got - r["read_bytes"]), 0.05 * r["read_bytes"] + 4096,
                                 (got, r))

    def check_scan(self, mode):
        # One thread's fault reads the first window around page 0; another
        # reader's scan then reads the rest ahead of itself, taking few or
        # no major faults (none at all, on a device that reads ahead 8 MiB):
        # its bytes are the map's all the same.
        path, readers, trace = self.run_readers(mode)
        self.assertEqual([r["role"] for r in readers], ["main", "scan"])
        main, scan = readers
        self.assertEqual(main["major"], 1, readers)
        self.assertGreater(scan["read_bytes"], 32 * MB, readers)
        self.assert_readers_bytes(path, readers, trace)

    def test_scan_by_a_forked_child(self):
        self.check_scan("scan_fork")

    def test_a_threads_reads_of_an_excluded_file_are_not_read_ahead(self):
        # A thread that never touches the map reads an excluded file (its
        # calls unrecorded): its storage reads are no map's. (A thread of the
        # mapping process that scans the map without a major fault is not
        # looked at either: USER_GUIDE_MAPS.md, what it estimates.)
        path = self.make_file()
        with open(path + ".b", "wb") as f:
            f.write(os.urandom(32 * MB))
        p = self.run_traced([dltest.program("map_touch"), "excluded_reads", path],
                            env={"DLPROF_EXCLUDE": path + ".b:/proc"})
        (reader,) = lines(p.stdout, "READER")
        self.assertGreater(reader["read_bytes"], 8 * MB, reader)
        trace = self.decode()
        self.assertEqual(trace.on(path + ".b"), [])
        # None of the reader's 8+ MiB. (The mapping thread's own storage
        # reads around its fault are its read-ahead: under memory pressure a
        # code page of its own paged in again meanwhile counts there too, a
        # page of it seen once in a clean-clone CI run while two builds ran.)
        ahead = [e for e in trace.events if e["name"] == "map_readahead"]
        self.assertLessEqual(sum(e["bytes"] for e in ahead), 64 * 1024, ahead)
        self.assertNotIn(reader["tid"], [e["tid"] for e in ahead])

    def test_a_threads_read_calls_beside_a_map_are_not_its_read_ahead(self):
        # A thread that never touches the map reads half of another file
        # with read(): the kernel reads ahead of its calls, beyond their
        # bytes, and that is no read-ahead of the map's.
        path = self.make_file()
        with open(path + ".b", "wb") as f:
            f.write(os.urandom(32 * MB))
        p = self.run_traced([dltest.program("map_touch"), "reads_beside", path])
        (reader,) = lines(p.stdout, "READER")
        (calls,) = lines(p.stdout, "CALLS")
        trace = self.decode()
        self.assertEqual(calls["bytes"], 16 * MB)
        self.assertGreater(reader["read_bytes"], calls["bytes"], reader)
        self.assertEqual(sum(e["bytes"] for e in trace.on(path + ".b") if e["name"] == "read"),
                         16 * MB)
        self.assertEqual([e for e in trace.events if e["name"] == "map_readahead"], [])
        # MADV_RANDOM: a page a fault (a first fault may also read the
        # file's extent map).
        faults = self.faults(trace, path)
        self.assertEqual(len(faults), 6)
        self.assertLessEqual(sum(e["bytes"] for e in faults), 6 * 4096 + 8 * 4096)

    def test_short_threads_read_around_their_faults(self):
        # Threads that fault once and end at once: what their faults read
        # is taken before they are gone.
        path, readers, trace = self.run_readers("pool_around")
        self.assertEqual(len(readers), 8)
        self.assertEqual(len({r["tid"] for r in readers}), 8)
        self.assertEqual(sum(r["major"] for r in readers), 8, readers)
        self.assertGreater(sum(r["read_bytes"] for r in readers), 8 * 2 * 4096, readers)
        self.assert_readers_bytes(path, readers, trace)

    def test_mremap_with_old_length_zero_keeps_the_old_mapping(self):
        # mremap(old, 0, len, MREMAP_MAYMOVE) of a shared map maps the same
        # pages again and leaves the old mapping: faults on both are the
        # file's, the old one's first page too.
        path, touches, trace, out = self.run_touch("dup")
        self.assertEqual(len(touches), 6)
        faults = self.faults(trace, path)
        self.assertEqual(len(faults), sum(1 for t in touches if t["major"]))
        self.assert_faults_match(touches, faults)

    def test_short_threads_started_after_the_map(self):
        path, touches, trace, out = self.run_touch("pool")
        self.assertEqual(len(touches), 48)
        self.assertEqual(len({t["tid"] for t in touches}), 16)
        faults = self.faults(trace, path)
        # Each thread's own, in its order (threads run side by side).
        for tid in {t["tid"] for t in touches}:
            self.assert_faults_match([t for t in touches if t["tid"] == tid],
                                     [e for e in faults if e["tid"] == tid])
        self.assertEqual(len(faults), sum(1 for t in touches if t["major"]))

    def test_perf_event_open_refused(self):
        refuse = dltest.program("no_perf_events")
        path, touches, trace, out = self.run_touch("random", prefix=[refuse])
        headers = self.header_faults()
        self.assertEqual(len(headers), 1, headers)
        self.assertTrue(headers[0].startswith("counts; perf_event_open refused (Permission denied"),
                        headers)
        self.assertEqual(self.faults(trace, path), [])
        regions = lines(out, "REGION")
        records = [e for e in trace.events if e.get("kind") == "region_faults"]
        self.assertEqual([e["major_faults"] for e in records], [r["major"] for r in regions])
        for k, (e, r) in enumerate(zip(records, regions)):
            self.assertFalse(e["fault_events"], e)
            self.assert_off_cpu(e, r, touches[10 * k:10 * k + 10])

    def test_perf_event_open_would_kill(self):
        # A seccomp filter that kills on a refused call: the tracer asks in a
        # child of its own first, and steps back to counts.
        refuse = dltest.program("no_perf_events")
        path, touches, trace, out = self.run_touch("random", prefix=[refuse, "--kill"])
        self.assertEqual(self.header_faults(),
                         ["counts; under a seccomp filter that kills on perf_event_open"])
        self.assertEqual(self.faults(trace, path), [])
        regions = lines(out, "REGION")
        records = [e for e in trace.events if e.get("kind") == "region_faults"]
        self.assertEqual([e["major_faults"] for e in records], [r["major"] for r in regions])

    def test_seccomp_filter_that_allows_perf_events(self):
        refuse = dltest.program("no_perf_events")
        path, touches, trace, out = self.run_touch("random", prefix=[refuse, "--allow"])
        self.assertTrue(self.header_faults()[0].startswith("events; "), self.header_faults())
        self.assert_faults_match(touches, self.faults(trace, path))

    def test_shared_writable_map_of_a_data_file(self):
        """A data file mapped read-write and shared (np.memmap's default
        mode, "r+") is read through the map. (One of a file in memory,
        /dev/shm, is memory shared between processes, MPI's segments: it
        takes no major faults, and mapping it opens no fault events, whose
        context-switch records overflowed the kernel's buffers of polling
        MPI ranks under load: integration.mpi_shared.)"""
        path, touches, trace, _ = self.run_touch("shared")
        self.assertEqual(len(touches), 12)
        self.assertGreater(sum(t["major"] for t in touches), 0, touches)
        self.assert_faults_match(touches, self.faults(trace, path))
        self.assertEqual([e["name"] for e in trace.on(path) if e["name"] in ("mmap", "munmap")],
                         ["mmap", "munmap"])

    def test_the_mpi_runtimes_own_files_are_not_read_through_a_map(self):
        """A file of the MPI runtime's session directory (Open MPI's and
        PMIx's segments and locks: PMIX_SERVER_TMPDIR in a rank's
        environment) is the runtime's, not data: mapping it starts no fault
        tracking. The data directory plays that directory here."""
        path, touches, trace, _ = self.run_touch("random", env={"PMIX_SERVER_TMPDIR": self.data})
        self.assertGreater(sum(t["major"] for t in touches), 0, touches)
        self.assertEqual(self.faults(trace, path), [])
        self.assertEqual([e for e in trace.events if e.get("kind") == "region_faults"], [])
        self.assertEqual([e["name"] for e in trace.on(path) if e["name"] in ("mmap", "munmap")],
                         ["mmap", "munmap"])
        # (Without it, the same program's faults are there: test_touched_pages_exact.)

    def test_turned_off(self):
        path, touches, trace, out = self.run_touch("random", env={"DLPROF_MAP_FAULTS": "off"})
        self.assertEqual(self.header_faults(), ["off; DLPROF_MAP_FAULTS=off"])
        self.assertEqual(self.faults(trace, path), [])
        self.assertEqual([e for e in trace.events if e.get("kind") == "region_faults"], [])
        # The calls are there as before.
        self.assertEqual([e["name"] for e in trace.on(path) if e["name"] in ("mmap", "munmap")],
                         ["mmap", "munmap"])

    def check_many_maps(self, setting):
        # With no fault to resolve, a mapping's slot in the tracer's table is
        # free again as it ends: the 8193rd map is named like the first.
        path, _, trace, _ = self.run_touch("many", env={"DLPROF_MAP_FAULTS": setting})
        names = [e["name"] for e in trace.on(path) if e["name"] in ("mmap", "munmap")]
        # (Counted: a diff of two lists this long overflows Python's stack.)
        self.assertEqual((len(names), names.count("mmap"), names[-1]), (18000, 9000, "munmap"))

    def test_many_maps_with_faults_off(self):
        self.check_many_maps("off")

    def test_many_maps_with_fault_counts(self):
        self.check_many_maps("counts")

    def test_untraced_the_same(self):
        path = self.make_file()
        cmd = [dltest.program("map_touch"), "split", path]
        untraced = self.run_untraced(cmd)
        traced = self.run_traced(cmd)
        strip = lambda out: [{k: v for k, v in t.items() if k in ("offset", "major")}
                             for t in lines(out, "TOUCH")]
        self.assertEqual(untraced.returncode, 0, untraced.stderr)
        self.assertEqual(strip(traced.stdout), strip(untraced.stdout))


if __name__ == "__main__":
    dltest.main()
