"""multiprocessing.Pool(3) workers read files.

usage: mp_pool.py fork|spawn|forkserver close|terminate FILE...

`close` ends the pool with close() + join() (workers exit normally);
`terminate` leaves a `with Pool()` block, which calls terminate(): the
workers get SIGTERM while they wait for work. Prints one JSON object:
{"parent": pid, "workers": [pids], "results": [[pid, path, bytes], ...]}.
"""

import json
import multiprocessing
import os
import sys


def work(path):
    with open(path, "rb") as f:
        data = f.read()
    return os.getpid(), path, len(data)


def main():
    method, ending, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    ctx = multiprocessing.get_context(method)
    if ending == "terminate":
        with ctx.Pool(3) as pool:
            workers = [p.pid for p in pool._pool]
            results = pool.map(work, files, chunksize=1)
    else:
        pool = ctx.Pool(3)
        workers = [p.pid for p in pool._pool]
        results = pool.map(work, files, chunksize=1)
        pool.close()
        pool.join()
    print(json.dumps({"parent": os.getpid(), "workers": workers,
                      "results": results}))


if __name__ == "__main__":
    main()
