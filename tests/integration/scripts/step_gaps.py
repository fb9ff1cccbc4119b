"""Loops without a DataLoader whose fetch is mostly not I/O, that time
themselves (test_step_gaps.py): usage: step_gaps.py MODE DATA TRUTH.

  decode    8 optimizer_step regions, before each a fetch of 4 files of
            256 KiB read 16 KiB at a time with 0.2 ms of CPU work after
            each read (a decoder's between a file's reads: joined), then
            5 ms of compute; the clock around the fetch and around each
            data call (open, read, close).
  chunks    24 steps, before each a fetch of 2 files of 512 KiB read 64
            KiB at a time with 0.3 ms of CPU work after each read (joined),
            then 5 ms of compute; as decode, its clocks, and the loop's
            (test_step_gaps.py runs it under DLPROF_KEEP: the whole run's
            counters split the wait too).
  spread    8 steps, before each a fetch of 3 reads of 64 KiB with 8 ms of
            CPU work after each (a sort: further apart than the join),
            then 5 ms of compute; the clock around the fetch.
  prefetch  8 steps fed through a queue.Queue by a threading.Thread that
            reads each batch (4 files of 256 KiB, 16 KiB at a time, dropped
            from the page cache first): the loop blocks in get(), then 5 ms
            of compute; the clock around each get() and around the loop.
  map       8 steps, before each a fetch of 8 slices of 1 MiB copied out of a
            map of a 16 MiB file whose pages are in memory (written just
            before: no major fault), mapped once before the loop (a
            np.memmap read by get_batch), then 5 ms of compute; the clock
            around the fetch and around the loop.
  map_batch the same, each fetch inside dlprof.region("load_batch"), as the
            verdict advises; the clock inside the region too.
  map_copy  the same slices out of a copy of the file's bytes taken
            through its map, which is closed before the loop.

The truth: a JSON object of what the program measured, in ns."""

import contextlib
import json
import mmap
import os
import queue
import sys
import threading
import time

import dlprof

STEPS = 8


def ns(t0):
    return int((time.perf_counter() - t0) * 1e9)


def busy(seconds):
    # CPU work, no call: the interpreter spinning as a decoder would.
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


def make_files(data, count, size):
    paths = []
    for k in range(count):
        paths.append(os.path.join(data, "f%02d.bin" % k))
        with open(paths[-1], "wb") as f:
            f.write(os.urandom(size))
    return paths


def step():
    busy(0.005)  # the forward and backward passes
    with dlprof.region("optimizer_step"):
        time.sleep(0.002)


def timed(calls, fn, *args):
    # A data call with the program's clock around it, summed in calls[0].
    t0 = time.perf_counter()
    r = fn(*args)
    calls[0] += ns(t0)
    calls[1] += 1
    return r


def decode(data, truth):
    paths = make_files(data, 4, 256 << 10)
    fetch, calls, cpu = 0, [0, 0], 0
    for _ in range(STEPS):
        t0, c0 = time.perf_counter(), time.thread_time_ns()
        for path in paths:
            fd = timed(calls, os.open, path, os.O_RDONLY)
            while timed(calls, os.read, fd, 16 << 10):
                busy(0.0002)
            timed(calls, os.close, fd)
        fetch += ns(t0)
        cpu += time.thread_time_ns() - c0
        step()
    truth.update(fetch_ns=fetch, calls_ns=calls[0], calls=calls[1], fetch_cpu_ns=cpu)


def chunks(data, truth):
    paths = make_files(data, 2, 512 << 10)
    fetch, calls, cpu = 0, [0, 0], 0
    loop0 = time.perf_counter()
    for _ in range(3 * STEPS):
        t0, c0 = time.perf_counter(), time.thread_time_ns()
        for path in paths:
            fd = timed(calls, os.open, path, os.O_RDONLY)
            while timed(calls, os.read, fd, 64 << 10):
                busy(0.0003)
            timed(calls, os.close, fd)
        fetch += ns(t0)
        cpu += time.thread_time_ns() - c0
        step()
    truth.update(fetch_ns=fetch, calls_ns=calls[0], calls=calls[1], loop_ns=ns(loop0),
                 steps=3 * STEPS, fetch_cpu_ns=cpu)


def spread(data, truth):
    paths = make_files(data, 1, 192 << 10)
    fetch = 0
    for _ in range(STEPS):
        t0 = time.perf_counter()
        with open(paths[0], "rb", buffering=0) as f:
            for _ in range(3):
                f.read(64 << 10)
                busy(0.008)
        fetch += ns(t0)
        step()
    truth.update(fetch_ns=fetch)


def prefetch(data, truth):
    paths = make_files(data, 4, 256 << 10)
    q = queue.Queue(maxsize=2)

    def reader():
        for _ in range(STEPS):
            n = 0
            for path in paths:
                fd = os.open(path, os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                while True:
                    b = os.read(fd, 16 << 10)
                    if not b:
                        break
                    n += len(b)
                    busy(0.0002)  # the batch's decoding, on the reader's thread
                os.close(fd)
            q.put(n)

    t = threading.Thread(target=reader)
    loop0 = time.perf_counter()
    t.start()
    wait = 0
    for _ in range(STEPS):
        t0 = time.perf_counter()
        q.get()
        wait += ns(t0)
        step()
    loop = ns(loop0)
    t.join()
    truth.update(wait_ns=wait, loop_ns=loop)


def through_map(data, truth, mode):
    path = make_files(data, 1, 16 << 20)[0]
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if mode == "map_copy":
        source = bytes(m)
        m.close()
    else:
        source = m
    fetch, inside, n = 0, 0, 0
    loop0 = time.perf_counter()
    for k in range(STEPS):
        t0 = time.perf_counter()
        with dlprof.region("load_batch") if mode == "map_batch" else contextlib.nullcontext():
            t1 = time.perf_counter()
            for i in range(8):
                n += len(bytes(source[(k * 8 + i) % 15 << 20:][:1 << 20]))
            inside += ns(t1)
        fetch += ns(t0)
        step()
    truth.update(fetch_ns=fetch, inside_ns=inside, loop_ns=ns(loop0), bytes=n)
    if mode != "map_copy":
        m.close()


def main():
    mode, data, out = sys.argv[1:4]
    truth = {}
    if mode.startswith("map"):
        through_map(data, truth, mode)
    else:
        {"decode": decode, "chunks": chunks, "spread": spread, "prefetch": prefetch}[mode](data,
                                                                                       truth)
    with open(out, "w") as f:
        json.dump(truth, f)
    print("done")


if __name__ == "__main__":
    main()
