#!/usr/bin/env python3
"""dlprof overhead, trace-size and memory benchmarks (bench/README.md).

Runs bench/pread_overhead untraced and under LD_PRELOAD=libdlprof.so and
prints what the tracer adds:

  overhead  ns per 4 KiB pread from the page cache, 1 and 2 threads, untraced
            and traced (runs interleaved, medians), the added cost, the cost
            of two clock_gettime(CLOCK_MONOTONIC_RAW) calls measured in the
            same runs, their ratio, and whether the target is met:
            added <= 2 clock reads + 20 ns, and the 2-thread added cost within
            10 % of the 1-thread one. Two methods: (A) a pread loop per run,
            traced run against untraced run, wall clock and thread CPU time;
            (B) in one process, bursts of libc preads against bursts of raw
            syscall(SYS_pread64), which the tracer never sees, timed by the
            thread's CPU clock (robust on a loaded machine). (C) from A's
            runs, the CPU of the process's other threads (the flusher) per
            event; B + C is the process CPU added per event, target <= 120
            ns. Every traced run's trace is decoded with dlprof-dump and its
            pread events counted against the calls made.
  size      1 M sequential and 1 M random 4 KiB preads over a 64 MiB file,
            traced: compressed bytes per event (file size minus header, over
            all events in the trace), with a per-column breakdown
            (trace_columns). Targets <= 3 sequential, <= 6 random.
  memory    peak RSS (ru_maxrss of the whole process lifetime, from wait4)
            traced minus untraced, 1 and 8 worker threads. Target: at most
            1 MiB per traced thread + 8 MiB; the main thread is traced too, so
            T workers make T + 1 traced threads.

Usage: bench/overhead.py [--build DIR] [--only overhead,size,memory]
                         [--reps N] [--iters N] [--burst K] [--json OUT]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def fail(msg):
    print("overhead.py: " + msg, file=sys.stderr)
    sys.exit(2)


class Bench:
    def __init__(self, args):
        self.args = args
        build = os.path.abspath(args.build)
        self.prog = os.path.join(build, "bench", "pread_overhead")
        self.maxrss = os.path.join(build, "bench", "maxrss")
        self.columns = os.path.join(build, "bench", "trace_columns")
        self.lib = os.path.join(build, "lib", "libdlprof.so")
        self.dump = os.path.join(build, "tools", "dlprof-dump")
        for p in (self.prog, self.maxrss, self.lib, self.dump):
            if not os.path.exists(p):
                fail(f"{p} is missing: build first (cmake -S . -B build && make -C build)")
        self.work = tempfile.mkdtemp(prefix="dlprof-bench-")
        self.data = os.path.join(self.work, "data.bin")
        self.run_no = 0
        self.results = {}

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def create_data(self):
        subprocess.run([self.prog, "--file", self.data, "--create", "--file-mb", "64"],
                       check=True)

    def run(self, traced, extra):
        """Runs the workload once; returns (result dict, peak RSS KiB, trace dir or None).

        The workload runs under bench/maxrss, which forks it from a small
        process: a child forked from Python would report the interpreter's
        peak RSS (ru_maxrss survives exec)."""
        env = dict(os.environ)
        for k in list(env):
            # DLPROF_CLOCK passes: the TSC or clock_gettime is what is measured.
            if (k.startswith("DLPROF_") and k != "DLPROF_CLOCK") or \
                    k in ("LD_PRELOAD", "BENCH_LD_PRELOAD"):
                del env[k]
        trace_dir = None
        if traced:
            self.run_no += 1
            trace_dir = os.path.join(self.work, f"trace-{self.run_no}")
            env.update(BENCH_LD_PRELOAD=self.lib, DLPROF_DIR=trace_dir, DLPROF_QUIET="1")
        rss_file = os.path.join(self.work, "maxrss.txt")
        cmd = [self.maxrss, rss_file, self.prog, "--file", self.data] + extra
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           check=False)
        if p.returncode != 0:
            fail(f"{' '.join(cmd)} (traced={traced}) exited {p.returncode}: "
                 f"{p.stderr.decode().strip()}")
        res = json.loads(p.stdout.decode().strip().splitlines()[-1])
        with open(rss_file) as f:
            maxrss = int(f.read())
        return res, maxrss, trace_dir

    def count_preads(self, trace_dir):
        """pread events on the data file in the decoded trace, and all events."""
        p = subprocess.run([self.dump, "--format", "jsonl", trace_dir],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if p.returncode != 0:
            fail(f"dlprof-dump {trace_dir} failed: {p.stderr.decode().strip()}")
        preads = total = 0
        for line in p.stdout.splitlines():
            total += 1
            e = json.loads(line)
            if e.get("name") in ("pread", "pread64") and e.get("path") == self.data:
                preads += 1
        return preads, total

    def trace_file(self, trace_dir):
        # DLPROF_DIR/<run>/<host>/*.dlprof (older writers: DLPROF_DIR itself).
        files = [os.path.join(root, f) for root, _dirs, names in os.walk(trace_dir)
                 for f in names if f.endswith(".dlprof")]
        if len(files) != 1:
            fail(f"expected one trace file in {trace_dir}, found {files}")
        return files[0]

    # --- overhead -----------------------------------------------------------

    def overhead(self):
        a = self.args
        # Plain runs: one pread loop per thread, timed as a whole (wall clock
        # and the thread's CPU time). Interleaved runs: each thread alternates
        # bursts of --burst libc preads (traced when preloaded), raw
        # syscall(SYS_pread64) (never traced) and clock pairs, timed by the
        # thread's CPU clock; the in-process difference is immune to the
        # machine's drift and to time other processes take from us.
        configs = [(t, traced, mode) for t in (1, 2) for mode in ("plain", "burst")
                   for traced in (False, True)]
        samples = {c: [] for c in configs}
        missing = []
        for rep in range(a.reps):
            # Alternate the order so slow drift of the machine hits both sides.
            order = configs if rep % 2 == 0 else list(reversed(configs))
            for threads, traced, mode in order:
                extra = ["--threads", str(threads), "--iters", str(a.iters),
                         "--warmup", str(a.iters // 20), "--fd", a.fd]
                if mode == "burst":
                    extra += ["--interleave", str(a.burst)]
                res, _, tdir = self.run(traced, extra)
                samples[(threads, traced, mode)].append(res)
                if traced:
                    got, _ = self.count_preads(tdir)
                    if got != res["preads"]:
                        missing.append((threads, mode, res["preads"], got))
                    shutil.rmtree(tdir, ignore_errors=True)
                if mode == "plain":
                    detail = (f"wall {res['ns_per_call']:7.1f} cpu {res['cpu_ns_per_call']:7.1f} "
                              f"process cpu {res['process_cpu_ns_per_call']:7.1f} "
                              f"clock2 {res['clock2_ns']:.1f}")
                else:
                    detail = (f"cpu: libc {res['il_libc_cpu_ns']:7.1f} syscall "
                              f"{res['il_syscall_cpu_ns']:7.1f} clock2 {res['il_clock2_cpu_ns']:.1f}")
                print(f"  rep {rep + 1}/{a.reps} {threads}t {mode:5s} "
                      f"{'traced  ' if traced else 'untraced'} {detail}", file=sys.stderr)

        med = statistics.median
        out = {"reps": a.reps, "iters_per_thread": a.iters, "burst": a.burst, "fd": a.fd,
               "lost_events": missing}
        plain_clock2 = [r["clock2_ns"] for c in configs if c[2] == "plain" for r in samples[c]]
        burst_clock2 = [r["il_clock2_cpu_ns"] for c in configs if c[2] == "burst"
                        for r in samples[c]]
        c2 = med(plain_clock2)
        c2cpu = med(burst_clock2)
        out["clock2_ns"] = c2
        out["clock2_cpu_ns"] = c2cpu
        for threads in (1, 2):
            u = samples[(threads, False, "plain")]
            t = samples[(threads, True, "plain")]
            bu = samples[(threads, False, "burst")]
            bt = samples[(threads, True, "burst")]
            col = lambda rs, k: [r[k] for r in rs]
            gap = lambda rs: [r["il_libc_cpu_ns"] - r["il_syscall_cpu_ns"] for r in rs]
            r = {
                "untraced_ns": med(col(u, "ns_per_call")),
                "traced_ns": med(col(t, "ns_per_call")),
                "untraced_cpu_ns": med(col(u, "cpu_ns_per_call")),
                "traced_cpu_ns": med(col(t, "cpu_ns_per_call")),
                "untraced_process_cpu_ns": med(col(u, "process_cpu_ns_per_call")),
                "traced_process_cpu_ns": med(col(t, "process_cpu_ns_per_call")),
                "burst_untraced_gap_ns": med(gap(bu)),
                "burst_traced_gap_ns": med(gap(bt)),
                "samples": {"untraced_ns": col(u, "ns_per_call"), "traced_ns": col(t, "ns_per_call"),
                            "untraced_cpu_ns": col(u, "cpu_ns_per_call"),
                            "traced_cpu_ns": col(t, "cpu_ns_per_call"),
                            "burst_untraced_gap_ns": gap(bu), "burst_traced_gap_ns": gap(bt)},
            }
            r["added_ns"] = r["traced_ns"] - r["untraced_ns"]
            r["added_cpu_ns"] = r["traced_cpu_ns"] - r["untraced_cpu_ns"]
            r["added_process_cpu_ns"] = r["traced_process_cpu_ns"] - r["untraced_process_cpu_ns"]
            r["added_burst_cpu_ns"] = r["burst_traced_gap_ns"] - r["burst_untraced_gap_ns"]
            # C: the CPU of the process's other threads (the tracer's flusher)
            # per event, process CPU less the pread threads' own in the same
            # run, traced less untraced: the pread's cost, which varies by a
            # third from run to run, cancels out of it.
            others = lambda rs: [x["process_cpu_ns_per_call"] - x["cpu_ns_per_call"] for x in rs]
            r["other_threads_cpu_ns"] = med(others(t)) - med(others(u))
            r["samples"]["traced_other_threads_cpu_ns"] = others(t)
            r["process_added_b_plus_c_ns"] = r["added_burst_cpu_ns"] + r["other_threads_cpu_ns"]
            out[f"{threads}t"] = r

        def verdict(key, clock):
            a1, a2 = out["1t"][key], out["2t"][key]
            cost = a1 <= clock + 20 and a2 <= clock + 20
            scaling = abs(a2 - a1) <= 0.10 * abs(a1)
            return {"budget_ns": clock + 20, "added_1t": a1, "added_2t": a2,
                    "ratio_1t": a1 / clock, "ratio_2t": a2 / clock,
                    "two_vs_one": a2 / a1 if a1 else float("inf"),
                    "met_cost": cost, "met_scaling": scaling}

        out["verdict_wall"] = verdict("added_ns", c2)
        out["verdict_cpu"] = verdict("added_burst_cpu_ns", c2cpu)
        self.results["overhead"] = out

        print(f"\n== overhead: 4 KiB pread from the page cache ({a.reps} interleaved runs per "
              f"configuration, {a.iters} calls per thread, fd {a.fd}, medians)")
        print("  A. whole pread loop per run, traced run vs untraced run (ns per call)")
        print(f"     {'':9s} {'untraced':>9s} {'traced':>9s} {'added':>8s} {'/2clk':>6s}   "
              f"{'thread CPU: untr':>16s} {'traced':>8s} {'added':>7s}   {'process CPU added':>17s}")
        for threads in (1, 2):
            r = out[f"{threads}t"]
            print(f"     {threads} thread{'s' if threads > 1 else ' '} {r['untraced_ns']:9.1f} "
                  f"{r['traced_ns']:9.1f} {r['added_ns']:8.1f} {r['added_ns'] / c2:6.2f}   "
                  f"{r['untraced_cpu_ns']:16.1f} {r['traced_cpu_ns']:8.1f} {r['added_cpu_ns']:7.1f}   "
                  f"{r['added_process_cpu_ns']:17.1f}")
        print(f"     2 x clock_gettime(CLOCK_MONOTONIC_RAW), wall: {c2:.1f} ns "
              f"(runs: min {min(plain_clock2):.1f}, max {max(plain_clock2):.1f})")
        print(f"  B. in-process bursts of {a.burst}, thread CPU time: libc pread minus raw syscall")
        print(f"     {'':9s} {'untraced':>9s} {'traced':>9s} {'added':>8s} {'/2clk':>6s}")
        for threads in (1, 2):
            r = out[f"{threads}t"]
            print(f"     {threads} thread{'s' if threads > 1 else ' '} "
                  f"{r['burst_untraced_gap_ns']:9.1f} {r['burst_traced_gap_ns']:9.1f} "
                  f"{r['added_burst_cpu_ns']:8.1f} {r['added_burst_cpu_ns'] / c2cpu:6.2f}")
        print(f"     2 x clock_gettime(CLOCK_MONOTONIC_RAW), thread CPU: {c2cpu:.1f} ns "
              f"(runs: min {min(burst_clock2):.1f}, max {max(burst_clock2):.1f})")
        print("  C. the other threads' CPU (the flusher) per event: process CPU minus the pread"
              " threads', traced minus untraced")
        for threads in (1, 2):
            r = out[f"{threads}t"]
            print(f"     {threads} thread{'s' if threads > 1 else ' '} {r['other_threads_cpu_ns']:9.1f}"
                  f"   B + C, process CPU added per event: {r['process_added_b_plus_c_ns']:.1f} ns"
                  f" (target <= 120: {'MET' if r['process_added_b_plus_c_ns'] <= 120 else 'NOT MET'})")
        for name, v in (("A (wall)", out["verdict_wall"]), ("B (CPU) ", out["verdict_cpu"])):
            print(f"  target {name}: added <= 2 clock reads + 20 ns = {v['budget_ns']:.1f} ns: "
                  f"{'MET' if v['met_cost'] else 'NOT MET'} (1t {v['added_1t']:.1f} ns = "
                  f"{v['ratio_1t']:.2f} x 2 clock reads, 2t {v['added_2t']:.1f} ns = "
                  f"{v['ratio_2t']:.2f} x); 2t within 10 % of 1t: "
                  f"{'MET' if v['met_scaling'] else 'NOT MET'} (2t/1t {v['two_vs_one']:.2f})")
        print(f"  every call recorded (all traced runs): "
              f"{'yes' if not missing else 'NO: ' + repr(missing)}")

    # --- trace size ---------------------------------------------------------

    def size(self):
        a = self.args
        out = {}
        print(f"\n== trace size: {a.size_calls} 4 KiB preads over a 64 MiB file, traced, 1 thread")
        for pattern, target in (("seq", 3.0), ("random", 6.0)):
            extra = ["--threads", "1", "--iters", str(a.size_calls), "--warmup", "0",
                     "--pattern", pattern]
            res, _, tdir = self.run(True, extra)
            path = self.trace_file(tdir)
            preads, total = self.count_preads(tdir)
            size = os.path.getsize(path)
            with open(path, "rb") as f:
                header = int.from_bytes(f.read(16)[12:16], "little")
            bpe = (size - header) / total
            cols = None
            if os.path.exists(self.columns):
                p = subprocess.run([self.columns, "--json", path], stdout=subprocess.PIPE,
                                   check=False)
                if p.returncode == 0:
                    cols = json.loads(p.stdout)
            out[pattern] = {"file_bytes": size, "header_bytes": header, "events": total,
                            "pread_events": preads, "preads_made": res["preads"],
                            "bytes_per_event": bpe, "target": target, "met": bpe <= target,
                            "columns": cols}
            print(f"  {pattern:6s}: {size} bytes, header {header}, {total} events "
                  f"({preads} preads of {res['preads']} made): {bpe:.3f} bytes/event, "
                  f"target <= {target:g}: {'MET' if bpe <= target else 'NOT MET'}")
            if cols:
                parts = ", ".join(f"{k} {v['zstd']:.2f}" for k, v in cols["columns"].items()
                                  if v["zstd"] >= 0.05)
                print(f"          {cols['blocks']} blocks ({total / max(1, cols['blocks']):.0f} "
                      f"events each); raw payload {cols['raw_bytes_per_event']:.2f} B/event; "
                      f"columns zstd'd alone, B/event: {parts}")
            shutil.rmtree(tdir, ignore_errors=True)
        self.results["size"] = out

    # --- memory -------------------------------------------------------------

    def memory(self):
        a = self.args
        out = {}
        print(f"\n== memory: peak RSS traced minus untraced ({a.mem_reps} interleaved runs, medians)")
        for threads in (1, 8):
            extra = ["--threads", str(threads), "--iters", str(a.mem_iters), "--warmup", "0"]
            rss = {False: [], True: []}
            hwm = {False: [], True: []}
            for rep in range(a.mem_reps):
                for traced in ((False, True) if rep % 2 == 0 else (True, False)):
                    res, maxrss, tdir = self.run(traced, extra)
                    rss[traced].append(maxrss)
                    hwm[traced].append(res["vmhwm_kb"])
                    if tdir:
                        shutil.rmtree(tdir, ignore_errors=True)
            u, t = statistics.median(rss[False]), statistics.median(rss[True])
            added = (t - u) / 1024
            budget = (threads + 1) + 8
            hu, ht = statistics.median(hwm[False]), statistics.median(hwm[True])
            out[f"{threads}t"] = {"untraced_kb": u, "traced_kb": t, "added_mib": added,
                                  "added_at_main_end_mib": (ht - hu) / 1024,
                                  "traced_threads": threads + 1, "budget_mib": budget,
                                  "met": added <= budget,
                                  "samples": {"untraced": rss[False], "traced": rss[True]}}
            print(f"  {threads} worker thread{'s' if threads > 1 else ' '} "
                  f"({threads + 1} traced): untraced {u / 1024:.1f} MiB, traced {t / 1024:.1f} MiB, "
                  f"added {added:.2f} MiB (at end of main: {(ht - hu) / 1024:.2f}); "
                  f"target <= {budget} MiB: {'MET' if added <= budget else 'NOT MET'}")
        self.results["memory"] = out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="build directory (default: build/ at the repository root)")
    ap.add_argument("--only", default="overhead,size,memory")
    ap.add_argument("--reps", type=int, default=5, help="interleaved runs per configuration")
    ap.add_argument("--iters", type=int, default=300000, help="preads per thread and run")
    ap.add_argument("--burst", type=int, default=2000,
                    help="calls per burst in the interleaved runs")
    ap.add_argument("--fd", choices=("own", "shared"), default="own",
                    help="2 threads: a descriptor each, or one shared")
    ap.add_argument("--size-calls", type=int, default=1000000)
    ap.add_argument("--mem-reps", type=int, default=3)
    ap.add_argument("--mem-iters", type=int, default=200000)
    ap.add_argument("--json", help="also write every number to this file")
    args = ap.parse_args()
    parts = [p for p in args.only.split(",") if p]
    for p in parts:
        if p not in ("overhead", "size", "memory"):
            fail(f"unknown part {p}")

    b = Bench(args)
    try:
        t0 = time.time()
        b.create_data()
        b.results["machine"] = {"cpus": os.cpu_count(), "uname": " ".join(os.uname()),
                                "date": time.strftime("%Y-%m-%d %H:%M:%S")}
        if "overhead" in parts:
            b.overhead()
        if "size" in parts:
            b.size()
        if "memory" in parts:
            b.memory()
        print(f"\n({time.time() - t0:.0f} s, {os.cpu_count()} CPUs)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(b.results, f, indent=1)
    finally:
        b.close()


if __name__ == "__main__":
    main()
