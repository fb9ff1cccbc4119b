"""MPI-IO from C on 2 ranks (programs/mpi_io.c, mpi_bytes_moved.c) and on
one with thousands of files (mpi_many_files.c), under Open MPI and MPICH.

Both ranks' traces, with their ranks; each rank's MPI-IO events exactly the
calls it made (bytes, byte offsets through the file view, collective flag,
communicator size); the POSIX calls MPI makes underneath recorded as
nested, inside their MPI call; the summary's MPI and read/write bytes counted
once. Registered once per MPI family CMake found (mpitest.py).
"""

import collections
import json
import os
import resource
import subprocess

import dltest
import dltest.mpi as mpitest


class MpiIoTest(mpitest.MpiTestCase):

    def run_program(self):
        prog = self.program("mpi_io")
        expected, trace = self.mpirun([prog, self.data, self.logs])
        return expected, trace, os.path.join(self.data, "shared.dat")

    def test_ranks_and_events(self):
        expected, trace, path = self.run_program()
        self.check_ranks(trace)
        mpi = self.check_mpiio_events(trace, expected, path)
        names = {e["name"] for e in mpi}
        for n in ("MPI_File_write_at", "MPI_File_write_at_all",
                  "MPI_File_read_at_all", "MPI_File_set_view",
                  "MPI_File_read_all", "MPI_File_seek", "MPI_File_read",
                  "MPI_File_iwrite_at", "MPI_File_read_all_begin",
                  "MPI_File_read_all_end", "MPI_File_get_size",
                  "MPI_File_sync", "MPI_File_close", "MPI_File_open"):
            self.assertIn(n, names)
        # Values stated here as well as by the program: byte offsets through
        # the view of ints that starts at 1024 + 64 * rank.
        for rank in (0, 1):
            got = {(e["name"], e.get("offset")): e for e in mpi if e["rank"] == rank}
            disp = 1024 + 64 * rank
            self.assertEqual(got[("MPI_File_read_all", disp)]["bytes"], 64)
            self.assertIn(("MPI_File_seek", disp + 256), got)
            self.assertEqual(got[("MPI_File_read", disp + 256)]["bytes"], 64)
            self.assertEqual(got[("MPI_File_write_at", 4096 * rank)]["bytes"], 4096)
            self.assertEqual(got[("MPI_File_write_at_all", 8192 + 1024 * rank)]["size"], 1024)
            self.assertEqual(got[("MPI_File_get_size", None)]["size"], 16384)
        self.assertEqual(os.path.getsize(path), 16384)

    def test_ranks_inside_a_slurm_allocation(self):
        # mpirun in an sbatch script: every rank inherits the batch step's
        # SLURM_PROCID and SLURM_NTASKS; the trace's ranks are MPI's.
        prog = self.program("mpi_io")
        expected, trace = self.mpirun([prog, self.data, self.logs],
                                      env={"SLURM_PROCID": "0", "SLURM_NTASKS": "1"})
        self.check_ranks(trace)
        ranks = self.summary()["ranks"]
        self.assertEqual(sorted(r["rank"] for r in ranks.values()), [0, 1], ranks)

    def test_nested_posix_calls(self):
        expected, trace, path = self.run_program()
        rw, owners = self.check_nested(trace, path)
        # An independent blocking call's pread/pwrite are its own bytes.
        for e in trace.on(path):
            if e["cat"] != "mpiio" or e["name"] not in ("MPI_File_write_at", "MPI_File_read"):
                continue
            inner = [x for x in rw if owners[id(x)] is e]
            self.assertEqual(sum(x["bytes"] for x in inner), e["bytes"], e)
            self.assertTrue(all(x["offset"] == e["offset"] for x in inner[:1]), inner)

    def test_summary(self):
        expected, trace, path = self.run_program()
        s = self.check_summary(expected, path)
        self.assertEqual(s["run"]["mpi"]["collective_bytes"], 2 * (1024 + 500 + 64 + 300))
        self.assertEqual(s["run"]["mpi"]["independent_bytes"], 2 * (4096 + 64 + 2048))

    def test_exported_preload_is_one_job(self):
        """`export LD_PRELOAD=libdlprof.so` before the launcher: the launcher
        and its daemons are traced too, and make a run id before the job has
        one; the ranks take the job's. One job, one run: the launcher's run
        joins its ranks' (issue 36, item 6)."""
        prog = self.program("mpi_io")
        env = mpitest.launcher_env()
        env.update({"LD_PRELOAD": dltest.LIB, "DLPROF_DIR": self.traces, "DLPROF_QUIET": "1"})
        cmd = mpitest.launcher_args(2, {}) + [prog, self.data, self.logs]
        p = dltest.run(cmd, env, 120)
        self.assertEqual(p.returncode, 0, p.stderr[-4000:])
        self.read_logs(2)
        s = subprocess.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertNotIn("runs", s.stderr)  # no "note: the input holds 2 runs"
        trace = self.decode()  # clean: no note of a second run either
        self.assertNotIn("runs", trace.dump_stderr)
        decoded = {e["pid"] for e in trace.events}
        ranks = {h["pid"]: h["rank"] for h in trace.headers if h["rank"] >= 0}
        self.assertEqual(sorted(ranks.values()), [0, 1])
        launcher = os.path.basename(os.path.realpath(mpitest.MPIEXEC))
        exes = {h["pid"]: os.path.basename(dltest.read_header_strings(h["file"])["exe"])
                for h in trace.headers}
        launchers = {pid for pid, exe in exes.items() if exe == launcher}
        self.assertTrue(launchers, (launcher, exes))
        self.assertEqual((launchers | set(ranks)) - decoded, set())
        # The ranks the traced launcher forked are the job's main processes.
        roles = {r["role"]: r["processes"] for r in json.loads(s.stdout)["verdict"]["roles"]}
        self.assertEqual(roles["main"], 2, roles)
        self.assertEqual(roles["loader workers"], 0, roles)

    def test_text_output(self):
        expected, trace, path = self.run_program()
        p = subprocess.run([dltest.DUMP, self.traces], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = [l for l in p.stdout.splitlines()
                 if "MPI_File_write_at_all(" in l and path in l]
        self.assertEqual(len(lines), 2, p.stdout[-3000:])
        self.assertTrue(any("1024" in l for l in lines), lines)
        # The file, its communicator's size (not a descriptor's number), and
        # the open's access mode as MPI's, not open(2)'s flags.
        self.assertTrue(all('("%s", comm 2, ' % path in l for l in lines), lines)
        opens = [l for l in p.stdout.splitlines() if "MPI_File_open(" in l and path in l]
        self.assertEqual(len(opens), 2, opens)
        self.assertTrue(all("MPI_MODE_CREATE|MPI_MODE_RDWR" in l for l in opens), opens)


class FileNamesTest(mpitest.MpiTestCase):
    """Names with a colon (programs/mpi_names.c): the trace names the file MPI
    really made, whether the library read "ufs:" as a driver's prefix
    (ROMIO) or took the name as it is (Open MPI's ompio)."""

    def test_names_with_a_colon(self):
        prog = self.program("mpi_names")
        full, p = self.launch([prog, self.data, self.logs])
        self.assertEqual(p.returncode, 0, (full, p.stderr[-4000:]))
        trace = self.decode()
        for rank in (0, 1):
            with open(os.path.join(self.logs, "rank%d.log" % rank)) as f:
                logged = [dltest.parse_fields(l) | {"what": l.split("\t")[0]}
                          for l in f.read().splitlines()]
            views = [e for e in trace.events if e["rank"] == rank
                     and e["name"] == "MPI_File_set_view"]
            self.assertEqual([e["ret"] for e in views],
                             [w["rc"] for w in logged if w["what"] == "VIEW"])
            self.assertTrue(all(e["ret"] != 0 and "offset" not in e for e in views), views)
            logged = [w for w in logged if w["what"] != "VIEW"]
            opened = [e for e in trace.events if e["rank"] == rank and e["cat"] == "mpiio"
                      and e["name"] in ("MPI_File_open", "MPI_File_delete")]
            self.assertEqual(len(opened), 3, opened)
            for e, want in zip(opened, logged):
                if want["rc"] == 0:
                    self.assertEqual(e["path"], want["file"], (e, want))
            # The bytes written are the real files', once each.
            for want in logged:
                if want["what"] == "OPEN" and want["rc"] == 0:
                    writes = [e for e in trace.events if e["name"] == "MPI_File_write_at"
                              and e["rank"] == rank and e["path"] == want["file"]]
                    self.assertEqual(len(writes), 1, (want, writes))


class PreallocateTest(mpitest.MpiTestCase):
    """What MPI writes inside MPI_File_preallocate (programs/mpi_preallocate.c)
    is the file's I/O: no call of the program's stands for it."""

    def test_preallocate_writes_count(self):
        prog = self.program("mpi_preallocate")
        full, p = self.launch([prog, self.data, self.logs])
        self.assertEqual(p.returncode, 0, (full, p.stderr[-4000:]))
        wrote = {"PREALLOC": 0, "WRITE": 0}
        for rank in (0, 1):
            with open(os.path.join(self.logs, "rank%d.log" % rank)) as f:
                for line in f.read().splitlines():
                    wrote[line.split("\t")[0]] += dltest.parse_fields(line)["wchar"]
        self.assertEqual(wrote["WRITE"], 2 * 4096, wrote)
        row = self.summary()["files"][os.path.join(self.data, "prealloc.dat")]
        # (wchar counts every write system call of the thread in the call:
        # at most what MPI wrote to the file.)
        self.assertLessEqual(row["write"]["bytes"], wrote["PREALLOC"] + wrote["WRITE"], row)
        self.assertGreaterEqual(row["write"]["bytes"], 2 * 4096 + (1 << 20) // 2, (row, wrote))


class BytesMovedTest(mpitest.MpiTestCase):
    """The bytes a read moved, as its status says, also where they are not a
    whole number of the datatype (at the end of the file) and where the
    program passed MPI_STATUS_IGNORE (programs/mpi_bytes_moved.c)."""

    def test_bytes_moved(self):
        expected, trace = self.mpirun([self.program("mpi_bytes_moved"), self.data, self.logs])
        path = os.path.join(self.data, "moved.dat")
        mpi = self.check_mpiio_events(trace, expected, path)
        # Values stated here as well as by the program: the file is 110
        # bytes long, every read asks 16 bytes.
        for rank, at_end in ((0, 10), (1, 7)):
            got = [(e["name"], e["offset"], e["bytes"]) for e in mpi
                   if e["rank"] == rank and e.get("size") == 16]
            self.assertEqual([got[i] for i in (0, 1, 2, 3, 6, 7)],
                             [("MPI_File_read_at", 100 + 3 * rank, at_end)] * 2
                             + [("MPI_File_read_at", 1000, 0)] * 2
                             + [("MPI_File_read", 105, 5)] * 2, rank)
            # ROMIO (MPICH) counts a collective read, and one into a gapped
            # datatype, as whole even at the end of the file; the tracer says
            # what MPI's status says, also where the program ignored it.
            whole = mpitest.FAMILY == "mpich"
            self.assertEqual(got[4:6], [("MPI_File_read_at_all", 100 + 3 * rank,
                                         16 if whole else at_end)] * 2, rank)
            self.assertEqual(got[8:], [("MPI_File_read_at", 104, 16 if whole else 6)] * 2, rank)
        self.assertEqual(len(mpi), 2 * 15)


class LargeCountTest(mpitest.MpiTestCase):
    """MPI-4's large-count calls (MPI_File_write_at_c, ...: MPICH 4) are
    recorded as the calls they stand for (programs/mpi_large_count.c)."""

    def test_large_count_calls(self):
        expected, trace = self.mpirun([self.program("mpi_large_count"), self.data, self.logs])
        with open(os.path.join(self.logs, "rank0.log")) as f:
            if "SKIP" in f.read():
                self.skipTest("this MPI has no large-count calls")
        path = os.path.join(self.data, "large.dat")
        mpi = self.check_mpiio_events(trace, expected, path)
        self.assertEqual(len(mpi), 2 * 6)
        self.assertEqual(sum(e.get("bytes", 0) for e in mpi), 2 * 4 * 4096)


class ManyFilesTest(mpitest.MpiTestCase):
    """More MPI files than the tracer's table of open files holds: every
    call recorded, with its path where the file found a slot and with none
    where it did not; a closed file's slot taken again by a later open
    (programs/mpi_many_files.c, one rank)."""

    SLOTS = 4096  # lib/intercept/mpi_files.cc
    # Files open at once, round by round. ROMIO (MPICH) takes a
    # communicator per open file, of which a process has 2048: there the
    # rounds only fill the table over the run.
    ROUNDS = {"openmpi": (4200, 200), "mpich": (2000, 2000, 200)}
    # Open MPI's default shared file pointer makes files of its own at every
    # open, which takes the opens three times as long; none is used here.
    ENV = {"openmpi": {"OMPI_MCA_sharedfp": "individual"}}

    def test_every_call_recorded(self):
        rounds = self.ROUNDS.get(mpitest.FAMILY, (200,))
        if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < max(rounds) + 1000:
            self.skipTest("a process may not open %d files" % max(rounds))
        _, trace = self.mpirun([self.program("mpi_many_files"), self.data, self.logs]
                               + [str(n) for n in rounds], nranks=1,
                               env=self.ENV.get(mpitest.FAMILY))
        names = {"MPI_File_open", "MPI_File_write_at", "MPI_File_close"}
        mpi = [e for e in trace.events if e["name"] in names]
        by_path = collections.defaultdict(list)
        for e in mpi:
            by_path[e.get("path")].append(e)
        want = {os.path.join(self.data, "r%d_%d" % (r, i))
                for r, n in enumerate(rounds) for i in range(n)}
        self.assertEqual(set(by_path) - {None}, want)
        homeless = by_path.pop(None, [])
        for path, events in by_path.items():
            if len(events) != 3:  # a first-round file that found no slot
                self.assertEqual([e["name"] for e in events], ["MPI_File_open"], path)
                self.assertTrue(path.startswith(os.path.join(self.data, "r0_")), path)
                continue
            self.assertEqual([e["name"] for e in events], ["MPI_File_open", "MPI_File_write_at",
                                                           "MPI_File_close"], path)
            self.assertEqual({k: events[1].get(k) for k in ("offset", "size", "bytes")},
                             {"offset": 0, "size": 8, "bytes": 8}, path)
            self.assertEqual({e["comm_size"] for e in events}, {1}, path)
        # Those that found no slot: recorded with no path, offset or
        # communicator size, but with their bytes.
        lost = max(0, rounds[0] - self.SLOTS)
        self.assertEqual(collections.Counter(e["name"] for e in homeless),
                         collections.Counter({"MPI_File_write_at": lost,
                                              "MPI_File_close": lost}) if lost else {})
        for e in homeless:
            self.assertNotIn("offset", e)
            self.assertNotIn("comm_size", e)
            if e["name"] == "MPI_File_write_at":
                self.assertEqual((e["size"], e["bytes"]), (8, 8), e)
        self.assertEqual(collections.Counter(e["name"] for e in mpi),
                         {n: sum(rounds) for n in names})


if __name__ == "__main__":
    dltest.main()
