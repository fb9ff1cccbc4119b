"""Three mpi4py ranks, each step a collective read (MPI_File_read_at_all of
64 KiB of one shared file) and then a torch optimizer step; one rank
(STRAGGLER) computes EXTRA_S longer each step, so the others wait for it
inside the next collective read. Each rank writes logs/rank<R>.json with its
own clock's time inside Read_at_all and the extra compute it did.

    mpi_collective_straggler.py DATA_DIR LOG_DIR STEPS"""

import json
import os
import sys
import time

from mpi4py import MPI
import torch

STRAGGLER = 1
EXTRA_S = 0.05
CHUNK = 65536


def main():
    data, logs, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    path = os.path.join(data, "shared.bin")
    if rank == 0:
        with open(path, "wb") as f:
            f.write(os.urandom(CHUNK * size * steps))
    comm.Barrier()
    fh = MPI.File.Open(comm, path, MPI.MODE_RDONLY)
    buf = bytearray(CHUNK)
    model = torch.nn.Linear(16, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    comm.Barrier()
    read_ns = extra_ns = 0
    for step in range(steps):
        t = time.perf_counter_ns()
        fh.Read_at_all((step * size + rank) * CHUNK, buf)
        read_ns += time.perf_counter_ns() - t
        x = torch.frombuffer(bytearray(buf[:64]), dtype=torch.float32).reshape(1, 16)
        loss = model(torch.nan_to_num(x)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == STRAGGLER:
            t = time.perf_counter_ns()
            time.sleep(EXTRA_S)
            extra_ns += time.perf_counter_ns() - t
    fh.Close()
    with open(os.path.join(logs, "rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "read_at_all_ns": read_ns, "extra_ns": extra_ns}, f)


if __name__ == "__main__":
    main()
