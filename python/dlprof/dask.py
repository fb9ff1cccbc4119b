"""dlprof traces with Dask: events as a dask DataFrame, the summary as Dask
tasks, for traces too many or too large for one process.

    import dlprof.dask
    from dask.distributed import Client
    client = Client(scheduler_file="scheduler.json")      # or LocalCluster()
    ev = dlprof.dask.read_events("dlprof-traces")          # lazy: a partition per trace
    ev.groupby("host").bytes.sum().compute()
    s = dlprof.dask.summary("dlprof-traces", client=client)  # == dlprof.summary(...)

read_events gives the rows, columns and dtypes of dlprof.read_events (the
same code decodes each partition). summary computes a partial summary per
group of traces (the groups dlprof-dump forms) in tasks, and merges them
with the library's own merge: partials travel between workers as the
library's bytes (dlprof_summary_encode), so the result is the native
summary's, whatever the cluster. Workers need this package and its library
(the same build: the bytes are checked) and see the trace files at the same
paths. docs/PYTHON.md shows a cluster across nodes.
"""

import ctypes
import json
import os
import warnings

from . import _events as ev
from . import _native as nv

__all__ = ["read_events", "summary"]

# A trace announcing more events than this is split into partitions of
# about this many (whole blocks each).
PARTITION_EVENTS = 4 << 20


def _paths(path):
    paths = [path] if isinstance(path, (str, bytes, os.PathLike)) else list(path)
    return [os.fsdecode(os.path.abspath(os.fsdecode(p))) for p in paths]


def _split(t, i, blocks, target):
    """Block ranges (first, count) of trace i of about `target` events each."""
    n = ctypes.c_uint64()
    ranges, first, events = [], 0, 0
    for b in range(blocks):
        if t.lib.dlprof_block_events(t.h, i, b, 1, ctypes.byref(n)) != nv.OK:
            raise RuntimeError("dlprof: " + nv.error(t.lib))
        if events and events + n.value > target:
            ranges.append((first, b - first))
            first, events = b, 0
        events += n.value
    ranges.append((first, blocks - first))
    return ranges


def _partition(paths, run, trace, first, count, spec_args, base):
    """One partition: the events of blocks [first, first + count) of trace
    `trace` of the handle over `paths`, as dlprof.read_events has them."""
    import numpy as np
    import pandas as pd

    spec = ev.Spec(**spec_args)
    spec.base = base
    tables = ev.new_tables()
    with nv.Traces(paths, run, warn=False) as t:
        part = ev.read_part(np, t, trace, t.info(trace), first, count, spec, tables,
                            nv.Kinds(t.lib))
    return ev.frame(np, pd, [part] if part is not None else [], spec.wanted, tables)


def read_events(path, *, run=None, columns=None, hosts=None, pids=None, ranks=None,
                time=None, partition_events=PARTITION_EVENTS):
    """A dask.dataframe.DataFrame of the events dlprof.read_events(path, ...)
    gives (same arguments, columns, dtypes and rows, in the same order once
    computed), a partition per trace; a trace of more than
    `partition_events` events is split by block ranges. Only headers are
    read here; partitions are decoded where they are computed. Categorical
    columns have unknown categories (each partition has its own; compute
    unions them). Divisions are unknown: each partition has its own
    RangeIndex (partitions of different traces overlap in time, so a time
    index cannot be known without reading; ``set_index("ts")`` sorts).
    Warnings about damaged traces are given where a partition is computed."""
    import dask
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    spec = ev.Spec(columns, hosts, pids, ranks, time)
    spec_args = dict(columns=spec.wanted, hosts=hosts, pids=pids, ranks=ranks, time=time)
    paths = _paths(path)
    pieces = []
    with nv.Traces(paths, run) as t:  # the warnings of read_events, said once, here
        base = t.lib.dlprof_traces_first_ns(t.h)
        # One clock: a handle over a trace alone gives the times the whole
        # input's does, and opens one file instead of every one.
        alone = t.lib.dlprof_traces_clock_domains(t.h) == 1
        for i in range(t.count()):
            info = t.info(i)
            if not spec.keeps_trace(info):
                continue
            ranges = ([(0, info.blocks)] if info.events <= partition_events else
                      _split(t, i, info.blocks, partition_events))
            src = ([nv.text(info.path)], None, 0) if alone else (paths, run, i)
            pieces += [src + r for r in ranges]
    meta = dd.utils.clear_known_categories(ev.frame(np, pd, [], spec.wanted, ev.new_tables()))
    if not pieces:
        return dd.from_pandas(meta, npartitions=1)
    parts = [dask.delayed(_partition)(p, r, i, first, count, spec_args, base)
             for p, r, i, first, count in pieces]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)


def _encode(lib, s):
    out = nv.P()
    n = ctypes.c_size_t()
    try:
        if lib.dlprof_summary_encode(s, ctypes.byref(out), ctypes.byref(n)) != nv.OK:
            raise RuntimeError("dlprof: " + nv.error(lib))
        try:
            return ctypes.string_at(out, n.value)
        finally:
            lib.dlprof_free(out)
    finally:
        lib.dlprof_summary_free(s)


def _decode(lib, data):
    s = nv.P()
    if lib.dlprof_summary_decode(data, len(data), ctypes.byref(s)) != nv.OK:
        raise RuntimeError("dlprof: " + nv.error(lib))
    return s


def _summarize_groups(paths, run, groups):
    """A task: the partial summary of `groups`, merged by the library, as
    bytes; and the messages of damaged input."""
    damage = []
    with nv.Traces(paths, run, warn=False) as t:
        lib = t.lib
        total = None
        for g in groups:
            s = nv.P()
            st = lib.dlprof_summarize_group(t.h, g, ctypes.byref(s))
            if st == nv.ERROR_DAMAGED:
                damage.append(nv.error(lib))
            elif st != nv.OK:
                raise RuntimeError("dlprof: " + nv.error(lib))
            if total is None:
                total = s
            elif lib.dlprof_summary_merge(total, s) != nv.OK:
                raise RuntimeError("dlprof: " + nv.error(lib))
        return _encode(lib, total), damage


def _merge(*partials):
    """A task: partials (bytes, damage) merged into one."""
    lib = nv.lib()
    total = _decode(lib, partials[0][0])
    damage = list(partials[0][1])
    for data, more in partials[1:]:
        if lib.dlprof_summary_merge(total, _decode(lib, data)) != nv.OK:
            lib.dlprof_summary_free(total)
            raise RuntimeError("dlprof: " + nv.error(lib))
        damage += more
    return _encode(lib, total), damage


def summary(path, *, run=None, client=None, tasks=None, fan_in=8):
    """The summary of the traces under `path` as a dict, equal to
    dlprof.summary(path) and ``dlprof-dump --summary --format json``,
    computed by Dask: the groups of traces are spread over `tasks` tasks
    (default: 4 per worker thread of `client`, else 16, at most one per
    group), each summarising its groups; their partials are merged by a
    tree of tasks `fan_in` wide. `client`: a dask.distributed Client; None:
    Dask's current scheduler (a Client made earlier is used). Damaged input
    is summarised up to the damage, with a warning per damaged group."""
    import dask

    paths = _paths(path)
    with nv.Traces(paths, run) as t:
        groups = list(range(len(t.groups())))
    if not groups:  # nothing to spread: the native summary of nothing
        from . import traces
        return traces.summary(paths, run=run)
    if tasks is None:
        threads = sum(client.nthreads().values()) if client is not None else 4
        tasks = 4 * max(threads, 1)
    tasks = max(1, min(tasks, len(groups)))
    # Consecutive groups per task: neighbouring traces (one host's, one
    # run's) stay together.
    batches = [groups[k * len(groups) // tasks:(k + 1) * len(groups) // tasks]
               for k in range(tasks)]
    level = [dask.delayed(_summarize_groups)(paths, run, b) for b in batches if b]
    while len(level) > 1:
        level = [dask.delayed(_merge)(*level[k:k + fan_in])
                 for k in range(0, len(level), fan_in)]
    if client is not None:
        data, damage = client.compute(level[0]).result()
    else:
        data, damage = dask.compute(level[0])[0]
    for message in damage:
        warnings.warn("dlprof: " + message, stacklevel=2)
    lib = nv.lib()
    s = _decode(lib, data)
    try:
        raw = nv.summary_json(lib, s)
    finally:
        lib.dlprof_summary_free(s)
    with nv.Traces(paths, run, warn=False) as t:  # a bounded trace's counters
        whole = nv.whole_run_json(t)
    return nv.with_whole_run(json.loads(raw), whole)
