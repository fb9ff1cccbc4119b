"""MPI-IO through mpi4py under `mpirun -n 2` (scripts/mpi4py_io.py).

Debian's python3 with python3-mpi4py: mpi4py's extension module brings
libmpi in with RTLD_LOCAL, so the tracer must still find the PMPI_ entry
points there. Skipped where that Python has no mpi4py, and under any MPI
family but Open MPI (Debian builds python3-mpi4py against it)."""

import os

import dltest
import dltest.mpi as mpitest


class Mpi4pyTest(mpitest.Mpi4pyTestCase):

    def test_mpi4py_io(self):
        expected, trace = self.mpirun(
            [dltest.SYSTEM_PYTHON, dltest.script("mpi4py_io.py"), self.data,
             self.logs])
        path = os.path.join(self.data, "shared.dat")
        self.check_ranks(trace)
        mpi = self.check_mpiio_events(trace, expected, path)
        self.assertEqual(
            sorted((e["rank"], e["name"], e.get("bytes")) for e in mpi
                   if "bytes" in e),
            [(0, "MPI_File_read_at", 600), (0, "MPI_File_write_at_all", 1000),
             (1, "MPI_File_read_at", 600), (1, "MPI_File_write_at_all", 1010)])
        self.check_nested(trace, path)
        s = self.check_summary(expected, path)
        self.assertEqual(s["run"]["mpi"]["collective_bytes"], 2010)
        self.assertEqual(s["run"]["mpi"]["independent_bytes"], 1200)


if __name__ == "__main__":
    dltest.main()
