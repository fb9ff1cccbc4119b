"""The harness for the MPI integration tests (test_mpi.py, test_mpi_shared.py,
test_mpi_clocks.py, test_mpi4py.py), under either MPI family.

ctest runs each MPI test once per family found (tests/integration/
CMakeLists.txt) and says which in the environment:

  DLPROF_MPI_FAMILY   openmpi or mpich
  DLPROF_MPIEXEC      that family's launcher (mpirun.openmpi, mpiexec.mpich)

The programs are built by the family's own mpicc into programs/<family>/.
The tracer is passed to the ranks only (never to the launcher or its
daemons), as root where need be, on however few cores; each rank's MPI-IO
events are compared with the `EV` lines the rank printed."""

import collections
import os
import shutil
import subprocess

import dltest

FAMILY = os.environ.get("DLPROF_MPI_FAMILY", "openmpi")
MPIEXEC = os.environ.get("DLPROF_MPIEXEC", "")
if not os.path.isfile(MPIEXEC):
    MPIEXEC = shutil.which({"openmpi": "mpirun.openmpi",
                            "mpich": "mpiexec.mpich"}.get(FAMILY, "")) or ""

# Calls that every rank of the file's communicator makes together (MPI 4.0,
# chapter 14: "collective" in each one's definition).
COLLECTIVE = {"MPI_File_open", "MPI_File_close", "MPI_File_sync",
              "MPI_File_set_view", "MPI_File_set_size", "MPI_File_preallocate",
              "MPI_File_seek_shared",
              "MPI_File_write_at_all", "MPI_File_read_at_all",
              "MPI_File_write_all", "MPI_File_read_all",
              "MPI_File_iwrite_at_all", "MPI_File_iread_at_all",
              "MPI_File_iwrite_all", "MPI_File_iread_all",
              "MPI_File_read_ordered", "MPI_File_write_ordered",
              "MPI_File_read_all_begin", "MPI_File_read_all_end",
              "MPI_File_write_all_begin", "MPI_File_write_all_end",
              "MPI_File_read_at_all_begin", "MPI_File_read_at_all_end",
              "MPI_File_write_at_all_begin", "MPI_File_write_at_all_end",
              "MPI_File_read_ordered_begin", "MPI_File_read_ordered_end",
              "MPI_File_write_ordered_begin", "MPI_File_write_ordered_end"}
DATA_KEYS = ("offset", "size", "bytes")


def mpi_program(name):
    """A program of programs/mpi_*.c as this family built it."""
    return dltest.program(os.path.join(FAMILY, name))


def launcher_args(nranks, env):
    """The launcher's command line up to the program: `env` set in the ranks
    only. Open MPI refuses root and more ranks than cores unless told; MPICH's
    Hydra starts local ranks itself (fork), never through ssh."""
    if FAMILY == "mpich":
        cmd = [MPIEXEC, "-launcher", "fork", "-n", str(nranks)]
        for k, v in env.items():
            cmd += ["-env", k, v]
        return cmd
    cmd = [MPIEXEC, "--allow-run-as-root", "--oversubscribe",
           "--mca", "btl", "self,vader", "-n", str(nranks)]
    for k, v in env.items():
        cmd += ["-x", "%s=%s" % (k, v)]
    return cmd


def launcher_env():
    """The launcher's own environment: no tracer; as root, in a container."""
    env = dltest.base_env()
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
                "OMPI_MCA_rmaps_base_oversubscribe": "1"})
    return env


class MpiTestCase(dltest.TraceTestCase):

    def setUp(self):
        if not MPIEXEC:
            self.skipTest("no launcher for MPI family %s" % FAMILY)
        super().setUp()
        self.logs = os.path.join(self.tmp, "logs")
        os.mkdir(self.logs)

    def program(self, name):
        prog = mpi_program(name)
        if not os.path.exists(prog):
            self.skipTest("%s not built (no %s)" % (prog, FAMILY))
        return prog

    def launch(self, cmd, nranks=2, timeout=60, traced=True, env=None):
        """Runs `cmd` on `nranks` ranks, with or without the tracer; `env`
        set in the ranks."""
        env = dict(env or {})
        if traced:
            env.update({"LD_PRELOAD": dltest.LIB, "DLPROF_DIR": self.traces,
                        "DLPROF_QUIET": "1"})
        full = launcher_args(nranks, env) + cmd
        return full, dltest.run(full, launcher_env(), timeout)

    def mpirun(self, cmd, nranks=2, timeout=60, env=None):
        full, p = self.launch(cmd, nranks, timeout, env=env)
        self.assertEqual(p.returncode, 0,
                         "%s exited %d\nstdout:\n%s\nstderr:\n%s"
                         % (full, p.returncode, p.stdout[-4000:], p.stderr[-4000:]))
        return self.read_logs(nranks), self.decode()

    def read_logs(self, nranks):
        """Each rank's EV lines, checked to come from the rank they name."""
        expected = collections.defaultdict(list)
        ranks = []
        for rank in range(nranks):
            with open(os.path.join(self.logs, "rank%d.log" % rank)) as f:
                for line in f.read().splitlines():
                    if line.startswith("EV\t"):
                        fields = dltest.parse_fields(line)
                        self.assertEqual(fields.pop("rank"), rank)
                        expected[rank].append(fields)
                    elif line.startswith("RANK\t"):
                        ranks.append(tuple(int(x) for x in line.split("\t")[1:]))
        self.assertEqual(ranks, [(r, nranks) for r in range(nranks)])
        return expected

    def check_ranks(self, trace, nranks=2):
        """One trace per rank, with its rank; MPI_Init* records it."""
        self.assertEqual(len(trace.files), nranks, trace.files)
        self.assertEqual(sorted(h["rank"] for h in trace.headers),
                         list(range(nranks)))
        by_pid = trace.by_pid()
        self.assertEqual(len(by_pid), nranks)
        for pid, events in by_pid.items():
            self.assertEqual(len({e["rank"] for e in events}), 1, pid)
            inits = [e for e in events if e["name"].startswith("MPI_Init")]
            self.assertEqual(len(inits), 1)
            self.assertEqual(inits[0]["comm_size"], nranks)
            self.assertEqual(inits[0]["ret"], 0)
            self.assertEqual([e["name"] for e in events
                              if e["name"] == "MPI_Finalize"], ["MPI_Finalize"])

    def check_mpiio_events(self, trace, expected, path, nranks=2,
                           may_be_unknown=(), checked_elsewhere=()):
        """Each rank's MPI-IO events on `path`: exactly the calls it made.

        An offset is the one the program logged, or absent where the program
        logged none. Calls named in `may_be_unknown` may lack the offset the
        program logged (the tracer cannot know it there); those named in
        `checked_elsewhere` have offsets the caller checks itself."""
        mpi = [e for e in trace.on(path) if e["cat"] == "mpiio"]
        for rank in range(nranks):
            got = [e for e in mpi if e["rank"] == rank]
            want = expected[rank]
            self.assertEqual([e["name"] for e in got], [w["name"] for w in want],
                             "rank %d" % rank)
            for w, e in zip(want, got):
                w = dict(w)
                keys = DATA_KEYS
                if e["name"] in checked_elsewhere:
                    w.pop("offset", None)
                    keys = ("size", "bytes")
                elif e["name"] in may_be_unknown and "offset" not in e:
                    w.pop("offset", None)
                self.assertEqual({k: e.get(k) for k in w}, w, "rank %d: %s" % (rank, e))
                for k in keys:
                    if k not in w:
                        self.assertNotIn(k, e, "rank %d: %s" % (rank, e))
                self.assertEqual(e["comm_size"], nranks, e)
                self.assertEqual(e["ret"], 0, e)
                self.assertNotIn("nested", e)
                self.assertEqual(e.get("collective", False),
                                 w["name"] in COLLECTIVE, e)
        return mpi

    def check_nested(self, trace, path):
        """POSIX calls on the file made by MPI lie inside an MPI call."""
        mpi = [e for e in trace.events if e["cat"] == "mpiio"]
        posix = [e for e in trace.on(path) if e["cat"] == "posix"]
        self.assertTrue(posix)
        rw = [e for e in posix if e["name"] in dltest.READ_NAMES | dltest.WRITE_NAMES]
        self.assertTrue(rw)
        owners = {}
        for e in posix:
            self.assertTrue(e.get("nested"), e)
            outer = [m for m in mpi if m["pid"] == e["pid"] and m["tid"] == e["tid"]
                     and m["ts"] <= e["ts"]
                     and e["ts"] + e["dur"] <= m["ts"] + m["dur"]]
            self.assertEqual(len(outer), 1, e)
            owners[id(e)] = outer[0]
        return rw, owners

    def beneath(self, nranks):
        """What the ranks' MPI read and wrote beneath calls that move no data
        of the program's (their logs' BENEATH lines)."""
        total = collections.Counter()
        for rank in range(nranks):
            with open(os.path.join(self.logs, "rank%d.log" % rank)) as f:
                for line in f.read().splitlines():
                    if line.startswith("BENEATH\t"):
                        total.update(dltest.parse_fields(line))
        return total

    def check_summary(self, expected, path, nranks=2):
        """MPI bytes by kind and the run's read/write bytes, counted once:
        the program's calls', and at most what MPI read and wrote beneath
        calls that move no data of their own (MPI_File_preallocate)."""
        want = collections.Counter()
        want_rank = collections.defaultdict(collections.Counter)
        for rank in range(nranks):
            for w in expected[rank]:
                if "bytes" not in w:
                    continue
                kind = "collective" if w["name"] in COLLECTIVE else "independent"
                direction = "read" if "read" in w["name"] else "write"  # _iread too
                for c in (want, want_rank[rank]):
                    c[kind + "_bytes"] += w["bytes"]
                    c[kind + "_ops"] += 1
                    c[direction] += w["bytes"]
        s = self.summary()
        mpi = s["run"]["mpi"]
        for key in ("collective_bytes", "independent_bytes", "collective_ops",
                    "independent_ops"):
            self.assertEqual(mpi[key], want[key], key)
        self.assertGreater(s["nested_events"], 0)
        # The nested pread/pwrite are not counted a second time.
        f = s["files"][path]
        extra = self.beneath(nranks)
        for direction in ("read", "write"):
            got = f[direction]["bytes"]
            self.assertGreaterEqual(got, want[direction], (direction, want, extra))
            self.assertLessEqual(got, want[direction] + extra[direction], (direction, want, extra))
        self.assertEqual(f["mpi"]["collective_bytes"], want["collective_bytes"])
        for rank in range(nranks):
            r = s["ranks"][str(rank)]
            self.assertEqual(r["mpi"]["collective_bytes"], want_rank[rank]["collective_bytes"])
            self.assertEqual(r["mpi"]["independent_bytes"], want_rank[rank]["independent_bytes"])
        return s


class Mpi4pyTestCase(MpiTestCase):
    """Python ranks through mpi4py: skipped where the system Python has none,
    and under any MPI family but Open MPI (Debian builds python3-mpi4py
    against it)."""

    def setUp(self):
        if FAMILY != "openmpi":
            self.skipTest("Debian's mpi4py is built against Open MPI")
        super().setUp()
        p = subprocess.run([dltest.SYSTEM_PYTHON, "-c", "import mpi4py"],
                           capture_output=True, env=dltest.base_env(), timeout=60)
        if p.returncode != 0:
            self.skipTest("%s has no mpi4py" % dltest.SYSTEM_PYTHON)
