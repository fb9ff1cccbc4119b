"""MPI-IO through mpi4py on one shared file (test_mpi4py.py).

usage: mpirun -n 2 python3 mpi4py_io.py DIR LOGDIR

Each rank writes 1000 + 10 * rank bytes collectively at rank * 4096, then
reads independently 600 bytes of its own from rank * 4096 + 100, and writes
one line per call to LOGDIR/rank<N>.log (mpirun's forwarded stdout may split
the lines of different ranks):
EV <tab> rank=R <tab> name=... <tab> offset=... <tab> size=... <tab> bytes=...
"""

import os
import sys

from mpi4py import MPI


LOG = []


def emit(rank, name, **fields):
    items = "".join("\t%s=%s" % kv for kv in fields.items())
    LOG.append("EV\trank=%d\tname=%s%s\n" % (rank, name, items))


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    path = os.path.join(sys.argv[1], "shared.dat")
    fh = MPI.File.Open(comm, path, MPI.MODE_CREATE | MPI.MODE_RDWR)
    emit(rank, "MPI_File_open")
    mine = 1000 + 10 * rank
    status = MPI.Status()
    fh.Write_at_all(rank * 4096, bytearray([65 + rank]) * mine, status)
    emit(rank, "MPI_File_write_at_all", offset=rank * 4096, size=mine,
         bytes=status.Get_count(MPI.BYTE))
    buf = bytearray(600)
    fh.Read_at(rank * 4096 + 100, buf, status)
    assert buf == bytearray([65 + rank]) * 600
    emit(rank, "MPI_File_read_at", offset=rank * 4096 + 100, size=600,
         bytes=status.Get_count(MPI.BYTE))
    fh.Close()
    emit(rank, "MPI_File_close")
    LOG.append("RANK\t%d\t%d\n" % (rank, size))
    with open(os.path.join(sys.argv[2], "rank%d.log" % rank), "w") as f:
        f.write("".join(LOG))
    print("rank %d of %d done" % (rank, size), flush=True)


if __name__ == "__main__":
    main()
