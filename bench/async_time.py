#!/usr/bin/env python3
"""What a traced io_uring or Linux AIO request costs in time, against a
traced pread (issue 52's target: no more than a traced pread;
bench/README.md).

callgrind_async.sh counts instructions; this times them. Both workloads
measure in one process, by the thread's CPU clock, bursts the tracer sees
against bursts it cannot see, so the difference stays stable on a loaded
machine (overhead.py's method B):

  io_uring, Linux AIO
            bench/async_overhead --interleave K: bursts of K random 4 KiB
            reads on a ring (a context) entered through syscall()
            (followed when preloaded) against bursts on one entered through
            the C library's own syscall(), found with dlsym (never seen);
  pread     bench/pread_overhead --interleave K --pattern random: bursts of
            libc preads against bursts of syscall(SYS_pread64).

Each is run untraced and traced, alternately, --reps times. The tracer's
cost is the median gap (seen minus unseen, ns per request) traced, minus
the median gap untraced (near 0). The requests of every traced asynchronous
run are counted in its decoded trace. (POSIX AIO has no unseen way in:
glibc's helper threads make its calls.)

Usage: bench/async_time.py [BUILD_DIR] [--reps N] [--requests N] [--burst K]
                           [--configs 8:1,64:8] [--engines uring,linux-aio]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print("async_time.py: " + msg, file=sys.stderr)
    sys.exit(2)


class Runner:
    def __init__(self, build):
        build = os.path.abspath(build)
        self.async_prog = os.path.join(build, "bench", "async_overhead")
        self.pread_prog = os.path.join(build, "bench", "pread_overhead")
        self.lib = os.path.join(build, "lib", "libdlprof.so")
        self.dump = os.path.join(build, "tools", "dlprof-dump")
        for p in (self.async_prog, self.pread_prog, self.lib, self.dump):
            if not os.path.exists(p):
                fail(f"{p} is missing: build first (cmake -S . -B build && make -C build)")
        self.work = tempfile.mkdtemp(prefix="dlprof-async-time-")
        self.data = os.path.join(self.work, "data.bin")
        subprocess.run([self.async_prog, "--file", self.data, "--create", "--file-mb", "64"],
                       check=True)
        with open(self.data, "rb") as f:  # in the page cache
            while f.read(1 << 20):
                pass
        self.runs = 0

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def run(self, prog, args, traced):
        """One run: its JSON line, and its trace directory (traced)."""
        # DLPROF_CLOCK passes (as in overhead.py): the TSC or clock_gettime
        # is what is measured.
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith("DLPROF_") and k != "DLPROF_CLOCK") and k != "LD_PRELOAD"}
        trace = None
        if traced:
            self.runs += 1
            trace = os.path.join(self.work, f"trace-{self.runs}")
            env.update(LD_PRELOAD=self.lib, DLPROF_DIR=trace, DLPROF_QUIET="1")
        cmd = [prog, "--file", self.data] + args
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if p.returncode != 0:
            fail(f"{' '.join(cmd)} (traced={traced}) exited {p.returncode}: {p.stderr.strip()}")
        return json.loads(p.stdout.strip().splitlines()[-1]), trace

    def requests_in(self, trace):
        """The asynchronous reads on the data file in a decoded trace."""
        p = subprocess.run([self.dump, "--format", "jsonl", trace], capture_output=True,
                           text=True, check=False)
        if p.returncode != 0:
            fail(f"dlprof-dump {trace}: {p.stderr.strip()}")
        n = 0
        for line in p.stdout.splitlines():
            e = json.loads(line)
            if e.get("cat") == "aio" and e.get("path") == self.data:
                n += 1
        shutil.rmtree(trace, ignore_errors=True)
        return n


def measure(r, prog, args, gap_keys, reps, check=None):
    """Median gaps (ns per request, thread CPU) untraced and traced."""
    seen, unseen = gap_keys
    gaps = {False: [], True: []}
    for _ in range(reps):
        for traced in (False, True):
            res, trace = r.run(prog, args, traced)
            gaps[traced].append(res[seen] - res[unseen])
            if trace is not None:
                if check is not None:
                    check(r.requests_in(trace))
                else:
                    shutil.rmtree(trace, ignore_errors=True)
    return {t: statistics.median(g) for t, g in gaps.items()}, gaps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--requests", type=int, default=200000,
                    help="reads per ring or context, and preads, per run")
    ap.add_argument("--burst", type=int, default=2000)
    ap.add_argument("--configs", default="8:1,64:8",
                    help="DEPTH:BATCH pairs (requests in flight, submitted per call)")
    ap.add_argument("--engines", default="uring,linux-aio")
    a = ap.parse_args()
    if a.reps < 1 or a.requests < 1 or a.burst < 1:
        fail("--reps, --requests and --burst are at least 1")
    try:
        configs = [tuple(int(x) for x in c.split(":")) for c in a.configs.split(",")]
    except ValueError:
        fail(f"--configs {a.configs}: DEPTH:BATCH pairs, comma-separated")
    engines = a.engines.split(",")
    if not set(engines) <= {"uring", "linux-aio"}:
        fail(f"--engines {a.engines}: uring, linux-aio or both")
    r = Runner(a.build)
    try:
        print(f"thread CPU ns per request, medians of {a.reps} runs each way, "
              f"bursts of {a.burst}")
        print(f"{'':28} {'gap untraced':>12} {'gap traced':>10} {'added':>7}   traced gaps")
        p_med, p_all = measure(r, r.pread_prog,
                               ["--iters", str(a.requests), "--pattern", "random",
                                "--interleave", str(a.burst)],
                               ("il_libc_cpu_ns", "il_syscall_cpu_ns"), a.reps)
        pread_added = p_med[True] - p_med[False]

        def row(name, med, all_):
            print(f"{name:28} {med[False]:12.1f} {med[True]:10.1f} "
                  f"{med[True] - med[False]:7.1f}   "
                  f"{' '.join(f'{g:.0f}' for g in sorted(all_[True]))}")
        row("pread (random 4 KiB)", p_med, p_all)
        if pread_added <= 0:
            fail(f"a traced pread added {pread_added:.1f} ns: no measure to hold against "
                 "(a machine this noisy needs more --reps)")
        verdicts = []
        names = {"uring": "io_uring", "linux-aio": "Linux AIO"}
        for engine in engines:
            for depth, batch in configs:
                def check(n, want=a.requests):
                    if n != want:
                        fail(f"a traced {engine} run's trace holds {n} requests of {want}")
                med, all_ = measure(r, r.async_prog,
                                    ["--engine", engine, "--requests", str(a.requests),
                                     "--depth", str(depth), "--batch", str(batch),
                                     "--interleave", str(a.burst)],
                                    ("il_syscall_cpu_ns", "il_unseen_cpu_ns"), a.reps, check)
                name = f"{names[engine]} {depth}:{batch}"
                row(f"{name} (in flight:a call)", med, all_)
                verdicts.append((name, med[True] - med[False]))
        for name, added in verdicts:
            print(f"{name}: {added:.1f} ns added a request, "
                  f"{added / pread_added:.2f} times a traced pread's {pread_added:.1f}: "
                  f"{'met' if added <= pread_added else 'NOT met'}")
    finally:
        r.close()


if __name__ == "__main__":
    main()
