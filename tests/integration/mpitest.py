"""Helpers of the MPI integration tests (test_mpi.py, test_mpi4py.py).

Runs `mpirun -n 2` with the tracer passed to the ranks only (-x LD_PRELOAD=,
never on mpirun or its daemons), as root where need be, and compares each
rank's MPI-IO events with the `EV` lines the rank printed."""

import collections
import json
import os
import shutil
import subprocess

import dltest

MPIRUN = os.environ.get("DLPROF_MPIRUN", "")
if not os.path.isfile(MPIRUN):
    MPIRUN = shutil.which("mpirun") or ""

# Calls that every rank of the file's communicator makes together.
COLLECTIVE = {"MPI_File_open", "MPI_File_close", "MPI_File_sync",
              "MPI_File_set_view", "MPI_File_set_size", "MPI_File_preallocate",
              "MPI_File_write_at_all", "MPI_File_read_at_all",
              "MPI_File_write_all", "MPI_File_read_all",
              "MPI_File_read_all_begin", "MPI_File_read_all_end",
              "MPI_File_write_all_begin", "MPI_File_write_all_end"}
DATA_KEYS = ("offset", "size", "bytes")


class MpiTestCase(dltest.TraceTestCase):

    def setUp(self):
        if not MPIRUN:
            self.skipTest("no mpirun")
        super().setUp()
        self.logs = os.path.join(self.tmp, "logs")
        os.mkdir(self.logs)

    def mpirun(self, cmd, nranks=2, timeout=60):
        env = dltest.base_env()
        # In a container, as root, on few cores: no warnings, no refusal.
        env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1",
                    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
                    "OMPI_MCA_rmaps_base_oversubscribe": "1"})
        full = [MPIRUN, "--allow-run-as-root", "--oversubscribe",
                "--mca", "btl", "self,vader", "-n", str(nranks),
                "-x", "LD_PRELOAD=" + dltest.LIB,
                "-x", "DLPROF_DIR=" + self.traces,
                "-x", "DLPROF_QUIET=1"] + cmd
        p = dltest.run(full, env, timeout)
        self.assertEqual(p.returncode, 0,
                         "%s exited %d\nstdout:\n%s\nstderr:\n%s"
                         % (full, p.returncode, p.stdout[-4000:], p.stderr[-4000:]))
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
        return expected, self.decode()

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

    def check_mpiio_events(self, trace, expected, path, nranks=2):
        """Each rank's MPI-IO events on `path`: exactly the calls it made."""
        mpi = [e for e in trace.on(path) if e["cat"] == "mpiio"]
        for rank in range(nranks):
            got = [e for e in mpi if e["rank"] == rank]
            want = expected[rank]
            self.assertEqual([e["name"] for e in got], [w["name"] for w in want],
                             "rank %d" % rank)
            for w, e in zip(want, got):
                self.assertEqual({k: e.get(k) for k in w}, w, "rank %d: %s" % (rank, e))
                for k in DATA_KEYS:
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

    def summary(self):
        p = subprocess.run([dltest.DUMP, "--summary", "--format", "json", self.traces],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def check_summary(self, expected, path, nranks=2):
        """MPI bytes by kind and the run's read/write bytes, counted once."""
        want = collections.Counter()
        want_rank = collections.defaultdict(collections.Counter)
        for rank in range(nranks):
            for w in expected[rank]:
                if "bytes" not in w:
                    continue
                kind = "collective" if w["name"] in COLLECTIVE else "independent"
                direction = "read" if "_read" in w["name"] else "write"
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
        self.assertEqual(f["read"]["bytes"], want["read"])
        self.assertEqual(f["write"]["bytes"], want["write"])
        self.assertEqual(f["mpi"]["collective_bytes"], want["collective_bytes"])
        for rank in range(nranks):
            r = s["ranks"][str(rank)]
            self.assertEqual(r["mpi"]["collective_bytes"], want_rank[rank]["collective_bytes"])
            self.assertEqual(r["mpi"]["independent_bytes"], want_rank[rank]["independent_bytes"])
        return s
