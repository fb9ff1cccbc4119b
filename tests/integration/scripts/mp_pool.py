"""multiprocessing.Pool(3) workers read files.

usage: mp_pool.py fork|spawn|forkserver close|terminate FILE...

`close` ends the pool with close() + join() (workers exit normally);
`terminate` leaves a `with Pool()` block, which calls terminate(): the
workers get SIGTERM while they wait for work. Every worker waits in its
initializer until all three run (a barrier, at most 60 s), so none can be
terminated before it started -- on a loaded machine one worker may otherwise
take every file while another is still starting. Prints one JSON object:
{"parent": pid, "workers": [pids], "results": [[pid, path, bytes], ...]}.
"""

import json
import multiprocessing
import os
import sys


def all_started(barrier):
    barrier.wait(timeout=60)


def work(path):
    with open(path, "rb") as f:
        data = f.read()
    return os.getpid(), path, len(data)


def main():
    method, ending, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    ctx = multiprocessing.get_context(method)
    barrier = ctx.Barrier(3)
    pool_args = dict(initializer=all_started, initargs=(barrier,))
    if ending == "terminate":
        with ctx.Pool(3, **pool_args) as pool:
            workers = [p.pid for p in pool._pool]
            results = pool.map(work, files, chunksize=1)
    else:
        pool = ctx.Pool(3, **pool_args)
        workers = [p.pid for p in pool._pool]
        results = pool.map(work, files, chunksize=1)
        pool.close()
        pool.join()
    print(json.dumps({"parent": os.getpid(), "workers": workers,
                      "results": results}))


if __name__ == "__main__":
    main()
