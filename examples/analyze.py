"""Questions about a training job's input pipeline, answered from its dlprof
traces in a few lines of pandas each (docs/PYTHON.md).

    dlprof run -- python3 examples/mini_loader.py /tmp/mini-data
    PYTHONPATH=build/python python3 examples/analyze.py dlprof-traces

1. Which worker read the slowest files?
2. What sizes were read in each epoch (the regions the job annotated)?
3. How long did each rank wait for its batch, step by step (the
   ``load_batch`` regions of dlprof.annotate_loader)?
"""
import os
import sys

# The package of this repository's build when it is not installed.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build",
                                "python"))
import dlprof  # noqa: E402
import pandas as pd  # noqa: E402


def file_reads(events):
    """The reads that moved data, each call once: a read made inside another
    traced call (the pread of an MPI_File_read_at) is that call's (nested)."""
    return events[(events["op"] == "read") & (events["bytes"] > 0) & ~events["nested"]]


def slowest_files(events, procs, top=5):
    """Per file read: read time, bytes, and the process that read it (pid, exe)."""
    reads = file_reads(events)
    reads = reads[reads["path"].notna()]
    per_file = (reads.groupby(["path", "pid"], observed=True)
                .agg(read_ms=("dur", lambda d: d.sum() / 1e6), reads=("dur", "size"),
                     bytes=("bytes", "sum"))
                .reset_index().sort_values("read_ms", ascending=False).head(top))
    # (An inner merge orders rows by the key: the order is made again.)
    return (per_file.merge(procs[["pid", "ppid", "exe"]], on="pid")
            .sort_values("read_ms", ascending=False, ignore_index=True))


def read_sizes_per_region(events, regions, outermost=True):
    """The size distribution of the reads that started inside each region
    (a worker's reads count in its parent's region: pandas' merge_asof finds
    the region instance each read starts in, in time)."""
    reads = file_reads(events).sort_values("ts")
    spans = regions[regions["outermost"]] if outermost else regions
    spans = spans.sort_values("start")[["start", "end", "name"]]
    tagged = pd.merge_asof(reads[["ts", "size", "bytes"]], spans, left_on="ts",
                           right_on="start", direction="backward")
    tagged = tagged[tagged["ts"] < tagged["end"]]
    return tagged.groupby("name", observed=True)["size"].describe()[
        ["count", "mean", "min", "50%", "max"]]


def batch_wait(regions, name="load_batch"):
    """Batch wait in ms, a row per step, a column per rank."""
    waits = regions[regions["name"].astype(str) == name].sort_values("start").copy()
    if waits.empty:
        return None
    waits["step"] = waits.groupby("rank").cumcount()
    return waits.pivot_table(index="step", columns="rank", values="dur") / 1e6


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "dlprof-traces"
    events = dlprof.read_events(path, columns=["ts", "dur", "pid", "op", "path", "size",
                                               "bytes", "nested"])
    procs = dlprof.read_processes(path, dropped=False)
    regions = dlprof.read_regions(path)
    pd.set_option("display.width", 120)

    print("== 1. the slowest files to read, and who read them")
    print(slowest_files(events, procs).to_string(index=False))
    print("\n== 2. read sizes per region (bytes)")
    print(read_sizes_per_region(events, regions).to_string() if len(regions)
          else "(no annotated regions)")
    print("\n== 3. batch wait per step and rank (ms)")
    waits = batch_wait(regions)
    print(waits.round(3).to_string() if waits is not None
          else "(no load_batch regions: wrap the loader in dlprof.annotate_loader)")


if __name__ == "__main__":
    main()
