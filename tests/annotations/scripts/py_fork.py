"""A region open across os.fork() (tests/annotations), timed by the
script's own clock.

    python py_fork.py FILE

The parent opens region "preprocess" and forks; the child reads FILE (4 x
4096), sleeps 50 ms and sys.exit()s, unwinding the `with` (it ends its copy
of the parent's region); the parent waits, sleeps 20 ms and ends it.
Prints "preprocess_ns=N" (the parent's with-block).
"""
import os
import sys
import time

import dlprof

path = sys.argv[1]
t0 = time.perf_counter_ns()
with dlprof.region("preprocess"):
    pid = os.fork()
    if pid == 0:
        fd = os.open(path, os.O_RDONLY)
        for i in range(4):
            os.pread(fd, 4096, i * 4096)
        time.sleep(0.05)
        sys.exit(0)
    os.waitpid(pid, 0)
    time.sleep(0.02)
print("preprocess_ns=%d" % (time.perf_counter_ns() - t0))
