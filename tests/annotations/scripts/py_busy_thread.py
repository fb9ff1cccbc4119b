"""Regions recorded while another Python thread is runnable (a DataLoader
worker's queue feeder, a pin-memory thread): usage: py_busy_thread.py.

300 samples of 0.2 ms of work each, in a region; prints "in_calls_ms=T":
the time the program's clock saw inside dlprof.begin and dlprof.end. A call
that gave up the interpreter lock let the other thread run, and waited for
its turn to end (up to the switch interval, 5 ms) inside the region it
began."""

import threading
import time

import dlprof

now = time.perf_counter_ns
stop = False


def spin():
    x = 0
    while not stop:
        x += 1


t = threading.Thread(target=spin, daemon=True)
t.start()
in_calls = 0
for _ in range(300):
    t0 = now()
    dlprof.begin("sample")
    t1 = now()
    s = now()
    while now() - s < 200000:
        pass
    t2 = now()
    dlprof.end()
    in_calls += t1 - t0 + now() - t2
stop = True
t.join()
print("in_calls_ms=%.3f" % (in_calls / 1e6))
