"""Ranks restarted as torchrun's elastic agent restarts them, for
test_rank_restart.py (torchrun itself fails on Debian's Python 3.11): an
agent starts two rank processes (RANK, LOCAL_RANK, WORLD_SIZE and
TORCHELASTIC_RESTART_COUNT in their environment); in the first attempt rank
1's loader fails at batch FAIL_AT (os._exit(3), as a dying rank does) and
rank 0, finding its peer gone after a step (its collective would raise),
leaves its loop; the agent waits GAP_S (failure detection, rendezvous) and
starts both again, and they run all STEPS batches.

    python3 restart_ranks.py agent DATA_DIR STEPS FAIL_AT GAP_S

Each rank process fetches its batches through dlprof.annotate_loader (a
4 KiB pread and a sleep of 10 ms, 20 ms in rank 1), computes for 15 ms, and
writes DATA_DIR/truth_<rank>_<attempt>.json, its own clock
(CLOCK_MONOTONIC_RAW, the tracer's) around what it did: "loop" from before
its first next() to its last step's end, "waits" its time in next().
"""
import json
import os
import subprocess
import sys
import time

import dlprof


def now():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)


def agent(data, steps, fail_at, gap_s):
    path = os.path.join(data, "samples.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(64 * 4096))
    for attempt in (0, 1):
        ps = [subprocess.Popen(
            [sys.executable, __file__, "rank", data, steps, fail_at, str(attempt)],
            env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE="2",
                     TORCHELASTIC_RESTART_COUNT=str(attempt))) for r in range(2)]
        rcs = [p.wait() for p in ps]
        if attempt == 1:
            return max(rcs)
        time.sleep(float(gap_s))
    return 0


def rank_main(data, steps, fail_at, attempt):
    rank = int(os.environ["RANK"])
    steps, fail_at, attempt = int(steps), int(fail_at), int(attempt)
    marker = os.path.join(data, "failed%d" % attempt)
    truth = {"pid": os.getpid(), "rank": rank, "attempt": attempt, "waits": 0}

    def truth_file():
        return open(os.path.join(data, "truth_%d_%d.json" % (rank, attempt)), "w")

    def save():
        with truth_file() as f:
            json.dump(truth, f)

    def batches():
        fd = os.open(os.path.join(data, "samples.bin"), os.O_RDONLY)
        for i in range(steps):
            if attempt == 0 and rank == 1 and i == fail_at:
                # This request's wait lasts until the process is gone (the
                # tracer closes the open region at _exit): its loop's too.
                open(marker, "w").close()
                f = truth_file()  # opened first: the clock as near _exit as can be
                t = now()
                truth["waits"] += t - truth["asked"]
                truth["loop"] = t - truth["start"]
                json.dump(truth, f)
                f.close()
                os._exit(3)
            time.sleep(0.010 * (1 + rank))
            yield os.pread(fd, 4096, (i % 64) * 4096)
        os.close(fd)

    it = iter(dlprof.annotate_loader(batches()))
    while True:
        t0 = truth["asked"] = now()
        truth.setdefault("start", t0)
        try:
            next(it)
        except StopIteration:
            truth["waits"] += now() - t0
            break
        truth["waits"] += now() - t0
        time.sleep(0.015)  # the step
        if attempt == 0 and rank == 0 and os.path.exists(marker):
            it.close()  # its peer died: the step's collective raised
            break
    truth["loop"] = now() - truth["start"]
    save()
    return 1 if attempt == 0 and rank == 0 else 0


if __name__ == "__main__":
    if sys.argv[1] == "agent":
        sys.exit(agent(*sys.argv[2:6]))
    sys.exit(rank_main(*sys.argv[2:6]))
