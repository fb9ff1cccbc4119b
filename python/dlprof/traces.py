"""dlprof traces as pandas DataFrames, over the reader's C ABI.

    import dlprof
    events = dlprof.read_events("dlprof-traces")      # a row per event
    procs = dlprof.read_processes("dlprof-traces")    # a row per process
    regions = dlprof.read_regions("dlprof-traces")    # a row per region instance
    s = dlprof.summary("dlprof-traces")               # dlprof-dump --summary, as a dict
    c = dlprof.compare("before", "after")             # dlprof-dump --compare, as a dict

The native reader (``libdlprof_reader.so``, include/dlprof/reader.h) decodes
each trace straight into numpy arrays: no JSON and no Python object per
event. Strings (host, category, name, path...) come as pandas categoricals,
integers as numpy integer dtypes. numpy and pandas are imported here, when
a function is called, never by ``import dlprof``. dlprof.dask reads the same
frames and summary with Dask (docs/PYTHON.md).
"""

import ctypes
import json
import warnings

from . import _events as ev
from . import _native as nv

__all__ = ["read_events", "read_processes", "read_regions", "summary", "compare", "read_whole_run",
           "read_whole_run_points", "EVENT_COLUMNS"]

EVENT_COLUMNS = ev.EVENT_COLUMNS
_present, _lookup = nv.present, nv.lookup  # (tested directly)


def read_events(path, *, run=None, columns=None, hosts=None, pids=None, ranks=None,
                time=None):
    """A pandas.DataFrame with a row per event of the traces under `path`.

    `path`: a trace file, a directory (every ``*.dlprof`` below it) or a list
    of them. `run`: the run (job) to read, by id; None: the latest, as
    dlprof-dump (with a warning naming the others, if any). `columns`: a
    subset of EVENT_COLUMNS (fewer columns decode faster). Rows come trace by
    trace, each trace's in the order stored (each thread's in the order its
    calls ended): ``sort_values("ts")`` for time order. Times are nanoseconds
    on the job's one time base, as in every output of dlprof-dump. fd,
    offset: -1 where the call has none; path: NaN where it has none. GPU
    columns (device, stream, correlation, kernel, copy, config) and app ones
    (depth of a region, value of a counter, id of a flow) are -1, 0 or NaN
    elsewhere. A damaged trace is decoded up to its damage, with a warning
    naming where.

    Filters, as dlprof-dump's options: `hosts`, `pids`, `ranks` (a list, or
    one value: keep events of these; --host, --pid, --rank), `time=(from_s,
    to_s)` (keep events starting in [from, to), seconds from the first event
    of the traces, either None for open; --from, --to; ValueError when it
    ends before it starts). Traces of other hosts or pids are not decoded at
    all. `columns` may be one name too.
    """
    import numpy as np
    import pandas as pd

    spec = ev.Spec(columns, hosts, pids, ranks, time)
    tables = ev.new_tables()
    with nv.Traces(path, run) as t:
        kinds = nv.Kinds(t.lib)
        infos = [(i, t.info(i)) for i in range(t.count())]
        infos = [(i, info) for i, info in infos if spec.keeps_trace(info)]
        parts = ev.Collector(np, sum(info.events for _, info in infos))
        for i, info in infos:
            part = ev.read_part(np, t, i, info, 0, info.blocks, spec, tables, kinds)
            if part is not None:
                parts.add(part)
    return ev.frame(np, pd, parts.parts(), spec.wanted, tables)


def read_processes(path, *, run=None, dropped=True):
    """A pandas.DataFrame with a row per trace (process) under `path`: host,
    pid, ppid, rank (-1: none), exe, cmdline (the arguments, a list), run,
    start (when the process started, ns on the job's time base), first_start
    (its first event; -1: none), end (the end of its last event; -1: none),
    trace (the file), events (announced by its blocks' headers), dropped
    (events the runtime dropped: full buffers in drop mode; -1 with
    dropped=False, which reads block headers only), blocks, file_bytes,
    clean_exit (its shutdown block is there), opened (False: not a readable
    trace), clock (the events' clock as its header states it: "tsc;
    calibration error N ns", or "clock_gettime: " and why not the TSC), faults
    (how its page faults on mapped files were recorded: "events; ..." one by
    one, "counts; " and why per region only, "off; ...", "" in older traces)."""
    import numpy as np
    import pandas as pd

    rows = []
    with nv.Traces(path, run) as t:
        for i in range(t.count()):
            info = t.info(i)
            first = info.first_start_ns
            if info.opened:
                proc, args, run_id, _ = t.process(i, dropped)
                end = proc.last_end_ns if proc.last_end_ns else -1
                lost = -1 if proc.dropped_events == nv.NO_EVENT else proc.dropped_events
                clean = bool(proc.clean_exit)
            else:
                args, run_id, end, lost, clean = [], "", -1, -1, False
            rows.append((nv.text(info.host), info.pid, info.ppid, info.rank, nv.text(info.exe),
                         args, run_id, info.process_start_ns,
                         -1 if first == nv.NO_EVENT else first, end, nv.text(info.path),
                         info.events, lost, info.blocks, info.file_bytes, clean,
                         bool(info.opened), nv.text(info.clock), nv.text(info.faults)))
    names = ["host", "pid", "ppid", "rank", "exe", "cmdline", "run", "start", "first_start",
             "end", "trace", "events", "dropped", "blocks", "file_bytes", "clean_exit",
             "opened", "clock", "faults"]
    types = [None, np.int32, np.int32, np.int32, None, None, None, np.int64, np.int64,
             np.int64, None, np.int64, np.int64, np.int64, np.int64, bool, bool, None, None]
    data = {}
    for k, (n, ty) in enumerate(zip(names, types)):
        col = [r[k] for r in rows]
        if n in ("host", "run", "clock", "faults"):
            data[n] = pd.Categorical(col)
        elif ty is None:
            data[n] = np.empty(len(col), dtype=object)
            data[n][:] = col
        else:
            data[n] = np.array(col, dtype=ty)
    return pd.DataFrame(data, columns=names)


def read_regions(path, *, run=None):
    """A pandas.DataFrame with a row per region instance under `path`: the
    regions of the summary's per-region breakdown (annotation regions, else
    NVTX ranges), in time order: host, pid, tid, rank (its process's), name,
    start, end, dur (ns, on the job's time base), depth (nesting on its
    thread), outermost (no region of its kind on its thread holds it), nvtx.
    Each group of traces dlprof-dump summarises together is decoded in
    memory (16 M events at most, past which a warning says the rest is
    left)."""
    import numpy as np
    import pandas as pd

    names = nv.Strings()
    hosts = nv.Strings()
    parts = []
    with nv.Traces(path, run) as t:
        lib = t.lib
        infos = [t.info(i) for i in range(t.count())]
        for g, members in enumerate(t.groups()):
            r = nv.P()
            st = lib.dlprof_group_regions(t.h, g, ctypes.byref(r))
            if st == nv.ERROR_DAMAGED:
                warnings.warn("dlprof: " + nv.error(lib), stacklevel=2)
            elif st != nv.OK or not r.value:
                if not any(infos[m].opened for m in members):
                    continue  # an unreadable input: said when opening
                raise RuntimeError("dlprof: " + nv.error(lib))
            try:
                n = lib.dlprof_region_count(r)
                arrays = {f: np.empty(n, dt) for f, dt in nv.REGION_COLUMNS}
                cols = nv.RegionColumns(capacity=n)
                for f, a in arrays.items():
                    setattr(cols, f, a.ctypes.data)
                if lib.dlprof_region_read(r, ctypes.byref(cols)) != nv.OK:
                    raise RuntimeError("dlprof: " + nv.error(lib))
                ids = nv.present(np, arrays["name"])
                length = ctypes.c_size_t()
                codes = [names.code(nv.native_string(
                    lib.dlprof_region_name(r, int(k), ctypes.byref(length)), length.value))
                    for k in ids]
                arrays["name"] = nv.lookup(np, arrays["name"], ids, codes)
            finally:
                lib.dlprof_regions_free(r)
            parts.append(arrays)
    cat = {f: (np.concatenate([p[f] for p in parts]) if parts else
               np.empty(0, dt if f != "name" else np.int32)) for f, dt in nv.REGION_COLUMNS}
    trace = cat["trace"].astype(np.intp)
    per_trace = np.array([(hosts.code(nv.text(i.host)), i.pid, i.rank) for i in infos] or
                         np.empty((0, 3)), np.int64).reshape(-1, 3)
    start = cat["start_ns"].view(np.int64)
    end = cat["end_ns"].view(np.int64)
    data = {
        "host": nv.categorical(np, pd, per_trace[trace, 0].astype(np.int32), hosts),
        "pid": per_trace[trace, 1].astype(np.int32),
        "tid": cat["tid"],
        "rank": per_trace[trace, 2].astype(np.int32),
        "name": nv.categorical(np, pd, cat["name"], names),
        "start": start,
        "end": end,
        "dur": end - start,
        "depth": cat["depth"].astype(np.int32),
        "outermost": cat["outermost"].astype(bool),
        "nvtx": cat["nvtx"].astype(bool),
    }
    df = pd.DataFrame(data, copy=False)
    # Time order across groups too.
    return df.sort_values("start", kind="stable", ignore_index=True) if len(parts) > 1 else df


def _summarize(t, what="dlprof: "):
    """The native summary of open Traces `t` (the caller frees it). Damaged
    input is summarised up to the damage, with a warning."""
    lib = t.lib
    s = nv.P()
    st = lib.dlprof_summarize(t.h, ctypes.byref(s))
    if st == nv.ERROR_DAMAGED:
        warnings.warn(what + nv.error(lib), stacklevel=3)
    elif st != nv.OK:
        raise RuntimeError(what + nv.error(lib))
    return s


def summary(path, *, run=None):
    """The summary of the traces under `path` as a dict: what
    ``dlprof-dump --summary --format json PATH`` prints, parsed. Damaged
    input is summarised up to the damage, with a warning."""
    with nv.Traces(path, run) as t:
        s = _summarize(t)
        try:
            raw = nv.summary_json(t.lib, s)
        finally:
            t.lib.dlprof_summary_free(s)
        whole = nv.whole_run_json(t)
    return nv.with_whole_run(json.loads(raw), whole)


def read_whole_run(path, *, run=None):
    """The whole run of a bounded trace (DLPROF_KEEP) from its counters, as
    a dict: the "whole_run" object of summary(path) (docs/ANALYSIS_RUNS.md,
    "Bounded traces"), without summarising the kept events; None where the
    traces have no counters."""
    with nv.Traces(path, run) as t:
        return json.loads(nv.whole_run_json(t))


def read_whole_run_points(path, *, run=None):
    """The whole run over time as a pandas DataFrame, a row per point
    (every process's counters on one grid): start_ns, end_ns, io_calls,
    read_bytes, io_ns, batches, batch_wait_ns, waiting_ns (the base of the
    batch wait's share), steps, gpu_busy_ns, data_stall_ns, and the batch wait's causes
    reading_ns, preprocessing_ns, handover_ns, worker_startup_ns, unsplit_ns. Empty
    where the traces have no counters."""
    import pandas as pd
    w = read_whole_run(path, run=run)
    rows = []
    for p in (w or {}).get("points", []):
        row = {k: v for k, v in p.items() if k != "causes"}
        for k in ("reading_ns", "preprocessing_ns", "handover_ns", "worker_startup_ns",
                  "unsplit_ns"):
            row[k] = p["causes"][k]
        rows.append(row)
    return pd.DataFrame(rows)


def compare(before, after, *, path=None):
    """Two runs side by side, as a dict: what ``dlprof-dump --compare BEFORE
    AFTER --format json`` prints, parsed: ``{"before": <its summary>,
    "after": <its summary>, "change": ...}`` (docs/ANALYSIS_RUNS.md, "Two runs
    side by side"). `before` and `after` are two trace directories (the
    latest run of each); with `path`, two run ids of the traces under `path`,
    as ``run=`` takes them::

        c = dlprof.compare("traces-2-workers", "traces-4-workers")
        c["change"]["verdict"]["batch_wait_ns"]["change"]  # after - before
        dlprof.compare("slurm-101", "slurm-102", path="dlprof-traces")

    A side that names no trace or no run raises FileNotFoundError (OSError
    when its directory holds no trace), naming the side."""
    sides = [("before", before, None), ("after", after, None)] if path is None else \
        [("before", path, before), ("after", path, after)]
    lib = nv.lib()
    made = []
    try:
        for which, where, run in sides:
            name = "%s (%s)" % (which, run if run is not None else where)
            try:
                t = nv.Traces(where, run)
            except OSError as e:
                raise type(e)("dlprof: %s: %s" % (name, str(e).replace("dlprof: ", "", 1))) from e
            with t:
                made.append(_summarize(t, "dlprof: %s: " % name))
        raw = nv.compare_json(lib, made[0], made[1])
    finally:
        for s in made:
            lib.dlprof_summary_free(s)
    return json.loads(raw)
