"""MPI-IO through the shared file pointer (programs/mpi_shared.c), under
Open MPI and MPICH.

The tracer must never ask MPI for the shared pointer: asking fails on
MPI_MODE_SEQUENTIAL files (a fatal error handler ends the job), takes MPI's
lock, does I/O on a hidden file that would be recorded as the program's, and
is stale once another rank moves the pointer. So:

- sequential mode with MPI_ERRORS_ARE_FATAL: the same exit status and output
  with and without the tracer, and the writes' offsets exactly the file's
  100-byte records;
- many ranks hammering read_shared on a file whose every word holds its own
  offset: each recorded offset is the one the data read says;
- ordered calls (blocking and split) on several ranks, whose offsets follow
  from the ranks' sizes, and seek_shared;
- everywhere, the POSIX calls MPI makes are nested inside the program's MPI
  calls, never top-level, and the summary counts only the program's calls.

An offset is either true or absent (docs/MPI.md says which calls carry one);
where the implementation moves the user's data itself, it must be there.
"""

import os
import struct

import dltest
import dltest.mpi as mpitest

# Non-blocking shared calls: both families move the data asynchronously
# (aio), outside any call the tracer sees, so their offsets stay unknown.
NONBLOCKING = {"MPI_File_iread_shared", "MPI_File_iwrite_shared"}
ORDERED = {"MPI_File_read_ordered", "MPI_File_write_ordered",
           "MPI_File_read_ordered_begin", "MPI_File_write_ordered_begin"}
# ROMIO (MPICH) moves each rank's ordered data itself, straight between the
# user's buffer and the file, when the ranks' pieces do not interleave (its
# default, romio_cb_read/write automatic): every offset is known. Open MPI
# gathers the data on aggregator ranks (fcoll), so no rank's own first byte
# is moved by a call of its own: unknown.
ORDERED_UNKNOWN = ORDERED if mpitest.FAMILY == "openmpi" else set()


class MpiSharedTest(mpitest.MpiTestCase):

    def run_mode(self, mode, nranks, calls):
        prog = self.program("mpi_shared")
        return self.mpirun([prog, mode, self.data, self.logs, str(calls)],
                           nranks=nranks)

    def check_all_nested(self, trace):
        """No POSIX call on the data directory's files (the data files, and
        MPI's hidden shared-pointer files beside them) outside an MPI call."""
        posix = [e for e in trace.under(self.data) if e["cat"] == "posix"]
        self.assertTrue(posix)
        top = [e for e in posix if not e.get("nested")]
        self.assertEqual(top, [], "MPI's own I/O recorded as the program's")

    def same_with_and_without_tracer(self, mode, nranks, calls):
        """Runs `mode` untraced, then traced (each in its own data directory):
        the same exit status (0) and output. Returns the traced run's output,
        data directory, logs and decoded trace."""
        prog = self.program("mpi_shared")
        runs = {}
        for traced in (False, True):
            name = "traced" if traced else "untraced"
            data = os.path.join(self.tmp, name)
            logs = self.logs if traced else os.path.join(self.tmp, name + "-logs")
            os.mkdir(data)
            os.makedirs(logs, exist_ok=True)
            _, runs[traced] = self.launch([prog, mode, data, logs, str(calls)],
                                          nranks=nranks, traced=traced)
        untraced, traced = runs[False], runs[True]
        self.assertEqual(untraced.returncode, 0, untraced.stderr[-4000:])
        self.assertEqual(traced.returncode, untraced.returncode,
                         "traced stderr:\n" + traced.stderr[-4000:])
        self.assertEqual(traced.stdout, untraced.stdout)
        expected = self.read_logs(nranks)
        trace = self.decode()
        self.check_ranks(trace, nranks)
        return traced.stdout, os.path.join(self.tmp, "traced"), expected, trace

    def test_sequential_mode_with_fatal_errors(self):
        calls, nranks = 5, 2
        out, data, expected, trace = self.same_with_and_without_tracer(
            "sequential", nranks, calls)
        self.assertEqual(out, "size %d\nsequential: %d ranks done\n"
                         % (100 * calls * nranks, nranks))
        path = os.path.join(data, "seq.dat")
        mpi = self.check_mpiio_events(trace, expected, path, nranks,
                                      checked_elsewhere={"MPI_File_write_shared"})
        # Each write landed on its own 100-byte record, which no rank could
        # tell beforehand: together they are the whole file, once each.
        writes = [e for e in mpi if e["name"] == "MPI_File_write_shared"]
        self.assertEqual(len(writes), calls * nranks)
        self.assertEqual(sorted(e.get("offset", -1) for e in writes),
                         list(range(0, 100 * calls * nranks, 100)))
        # Besides rank 0's own stat at the end, every POSIX call on the
        # files is MPI's, nested in the program's MPI calls.
        posix = [e for e in trace.under(data) if e["cat"] == "posix"]
        self.assertEqual([(e["rank"], e["name"]) for e in posix if not e.get("nested")],
                         [(0, "stat")])

    def test_failing_calls_return_their_errors(self):
        # An invalid datatype (and, under MPICH, communicator): the tracer
        # must not hand it to MPI again, where the error would be raised on
        # MPI_COMM_WORLD and end the job.
        out, data, expected, trace = self.same_with_and_without_tracer(
            "errors", 2, 0)
        self.assertIn("write_at with MPI_DATATYPE_NULL: error\n", out)
        self.assertIn("read_shared with MPI_DATATYPE_NULL: error\n", out)
        path = os.path.join(data, "errors.dat")
        failed = [e for e in trace.on(path) if e["cat"] == "mpiio"
                  and e["name"] in ("MPI_File_write_at", "MPI_File_read_shared")]
        self.assertEqual(sorted((e["rank"], e["name"]) for e in failed),
                         sorted((r, n) for r in (0, 1) for n in
                                ("MPI_File_write_at", "MPI_File_read_shared")))
        for e in failed:
            self.assertNotEqual(e["ret"], 0, e)
            self.assertNotIn("offset", e)
            self.assertEqual((e.get("size", 0), e.get("bytes", 0)), (0, 0), e)

    def test_many_ranks_hammer_read_shared(self):
        nranks, calls = 4, 150
        path = os.path.join(self.data, "words.dat")
        words = 3 * calls * nranks + 3  # the program's view starts at word 3
        with open(path, "wb") as f:
            f.write(struct.pack("<%dQ" % words, *range(0, 8 * words, 8)))
        expected, trace = self.run_mode("hammer", nranks, calls)
        self.check_ranks(trace, nranks)
        mpi = self.check_mpiio_events(trace, expected, path, nranks,
                                      may_be_unknown=NONBLOCKING)
        reads = [e for e in mpi if e["name"] == "MPI_File_read_shared"]
        self.assertEqual(len(reads), nranks * (calls - calls // 4))
        # Blocking shared reads: every offset known (and, above, true).
        self.assertEqual([e for e in reads if "offset" not in e], [])
        # No piece is read twice, and none before the view's start.
        offsets = [e["offset"] for e in reads]
        self.assertEqual(len(set(offsets)), len(offsets))
        self.assertGreaterEqual(min(offsets), 24)
        self.check_all_nested(trace)
        s = self.check_summary(expected, path, nranks)
        # The program's calls: an open and a log per rank, the reads. The
        # opens MPI makes for itself inside MPI_Init and MPI_File_open count
        # too (docs/ANALYSIS_TABLES.md, Which events count), on files of other
        # classes (session files, lock tests) than data and outputs.
        classes = s["file_classes"]
        self.assertEqual(classes["data"]["ops"]["open"] + classes["outputs"]["ops"]["open"],
                         2 * nranks)
        self.assertGreaterEqual(s["run"]["ops"]["open"], 2 * nranks)
        self.assertEqual(classes["data"]["ops"]["read"], nranks * calls)
        self.assertEqual(s["files"][path]["ops"]["open"], nranks)
        self.assertEqual(s["files"][path]["ops"]["read"], nranks * calls)

    def test_ordered_and_seek_shared(self):
        nranks, rounds = 3, 4
        expected, trace = self.run_mode("ordered", nranks, rounds)
        self.check_ranks(trace, nranks)
        path = os.path.join(self.data, "ordered.dat")
        mpi = self.check_mpiio_events(trace, expected, path, nranks,
                                      may_be_unknown=ORDERED_UNKNOWN)
        ordered = [e for e in mpi if e["name"] in ORDERED]
        self.assertEqual(len(ordered), nranks * (2 * rounds + 1))
        if not ORDERED_UNKNOWN:
            self.assertEqual([e for e in ordered if "offset" not in e], [])
        # seek_shared to 0 and to 16 (MPI_SEEK_SET): that is where the
        # pointer is, on every rank; the relative seek's result is unknown.
        seeks = [(e["rank"], e.get("offset", -1)) for e in mpi
                 if e["name"] == "MPI_File_seek_shared"]
        self.assertEqual(sorted(seeks),
                         sorted((r, o) for r in range(nranks) for o in (0, 16, -1)))
        self.check_all_nested(trace)
        self.check_summary(expected, path, nranks)
        self.assertEqual(os.path.getsize(path),
                         rounds * 16 * sum(r + 1 for r in range(nranks)))


if __name__ == "__main__":
    dltest.main()
