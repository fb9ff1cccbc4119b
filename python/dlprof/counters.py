"""The whole run of a bounded trace (DLPROF_KEEP) as a pandas DataFrame.

    import dlprof
    c = dlprof.read_counters("dlprof-traces")   # a row per process and interval
    c.groupby("pid")["data_read_bytes"].sum()
    (c["batch_wait_ns"] / (c["end_ns"] - c["start_ns"])).plot()

Each process traced with DLPROF_KEEP writes NAME.dlcount beside its trace
segments: one record per interval (docs/FORMAT_BOUNDED.md). This
module reads those files itself, in pure Python -- they are small (well under
1 MiB an hour per process) and their format is a few varints -- so it needs
no decoded trace; the reader library only picks the run of a directory, so
that the run is the one every other reader picks (two runs were summed).
Columns: run, host, pid, rank,
start_ns, end_ns, events; per file class (data, code, outputs, system, other)
CLASS_reads, CLASS_read_bytes, CLASS_read_ns, CLASS_writes,
CLASS_write_bytes, CLASS_write_ns, CLASS_other_calls, CLASS_other_ns; then
batch_waits, batch_wait_ns, steps (the "load_batch" and "optimizer_step"
regions, or those named); so_far, true for a process's last interval when
the file was read before it ended (the process killed, or still running):
its counts up to the tracer's last pass; io_outstanding_ns and
data_stall_ns, the data stall records of a process with GPU work (the time
I/O was outstanding in its rank, and of that the time none of its GPU work
ran), each record in the row whose interval holds its stretch's middle;
None (NaN) where no record's stretch does: a process without GPU work or
from a writer without them, the intervals before its first GPU work, and
its last interval, which is measured in the next. read_kept_windows()
gives the windows kept whole.
"""

import bisect
import os
import struct
import warnings

__all__ = ["read_counters", "read_kept_windows", "CLASSES"]

CLASSES = ("data", "code", "outputs", "system", "other")
_IO = ("reads", "read_bytes", "read_ns", "writes", "write_bytes", "write_ns",
       "other_calls", "other_ns")
_MAGIC = 0x43504C44  # "DLPC"
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_MAX_PAYLOAD = 1 << 20  # kMaxCounterPayload
_FILE_MAGIC = b"DLPROF\r\n"
_SEGMENT = 1 << 3  # kHeaderFlagSegment: a bounded trace's segment
# The columns, in order (an empty frame has them too).
_COLUMNS = (["run", "host", "pid", "rank", "start_ns", "end_ns", "events"] +
            ["%s_%s" % (c, k) for c in CLASSES for k in _IO] +
            ["batch_waits", "batch_wait_ns", "steps", "so_far", "io_outstanding_ns",
             "data_stall_ns"])


def _crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


class _Cursor:
    def __init__(self, data):
        self.d, self.p = data, 0

    def u(self):
        v, shift = 0, 0
        while True:
            b = self.d[self.p]
            self.p += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7

    def z(self):
        v = self.u()
        return (v >> 1) ^ -(v & 1)

    def take(self, n):
        s = self.d[self.p:self.p + n]
        self.p += n
        return s


def _header(data, path):
    """pid, host, run id of a counters file's header (docs/FORMAT.md: the
    trace's header); ValueError naming the file where it is none."""
    if len(data) < 8 or data[:8] != _FILE_MAGIC:
        raise ValueError("dlprof: %s: not a dlprof counters file (bad magic at byte 0)" % path)
    if len(data) < 68:
        raise ValueError("dlprof: %s: the header is cut short at byte %d (of at least 68)"
                         % (path, len(data)))
    header_size, = struct.unpack_from("<I", data, 12)
    if header_size < 68 or header_size > len(data):
        raise ValueError("dlprof: %s: the header is cut short at byte %d (of %d)"
                         % (path, len(data), header_size))
    pid, = struct.unpack_from("<i", data, 32)
    strings, at = [], 64
    while at + 4 <= header_size and len(strings) < 4:  # host, exe, cmdline, run_id
        n, = struct.unpack_from("<I", data, at)
        strings.append(data[at + 4:min(at + 4 + n, header_size)].decode("utf-8", "replace"))
        at += 4 + n
    strings += [""] * (4 - len(strings))  # (a writer that had fewer: empty)
    return header_size, pid, strings[0], strings[3]


def _whole_record(data, at):
    """The (type, payload) of a whole record at `at` (its magic, a length
    that fits, a payload whose CRC holds), else None."""
    if at + 16 > len(data):
        return None
    magic, rtype, _res, size, crc = struct.unpack_from("<IHHII", data, at)
    if magic != _MAGIC or size > _MAX_PAYLOAD or at + 16 + size > len(data):
        return None
    payload = data[at + 16:at + 16 + size]
    return (rtype, payload) if _crc32c(payload) == crc else None


def _next_record(data, at):
    """Where reading goes on after damage at `at`: the next whole record, or
    the end (lib/format/counters_read.cc's NextRecord)."""
    k = data.find(_MAGIC_BYTES, at + 1)
    while k >= 0 and _whole_record(data, k) is None:
        k = data.find(_MAGIC_BYTES, k + 1)
    return len(data) if k < 0 else k


def _records(data, start, path, damage):
    """(type, payload, offset) of each whole record, as dlprof-dump reads
    them: a torn last record (cut short: a killed process) ends the file,
    with a warning; damage elsewhere is skipped to the next whole record
    and put in `damage` as (byte, bytes skipped)."""
    at = start
    while at < len(data):
        whole = _whole_record(data, at)
        if whole is None:
            if at + 16 > len(data):
                _torn(path, at, len(data))
                return
            magic, _t, _r, size, _c = struct.unpack_from("<IHHII", data, at)
            nxt = _next_record(data, at)
            if magic == _MAGIC and size <= _MAX_PAYLOAD and at + 16 + size > len(data) \
                    and nxt == len(data):
                _torn(path, at, len(data))
                return
            damage.append((at, nxt - at))
            at = nxt
            continue
        yield whole[0], whole[1], at
        at += 16 + len(whole[1])


def _torn(path, at, end):
    warnings.warn("dlprof: %s: the last counters record is cut short at byte %d (%d bytes of "
                  "it; the process was killed?): skipped" % (path, at, end - at), stacklevel=5)


def _stem(trace_path):
    """A trace file's stem (lib/format/trace_layout.cc's TraceStemOf):
    STEM.dlprof and STEM.kN.dlprof are STEM; its counters are STEM.dlcount."""
    stem = trace_path[:-len(".dlprof")] if trace_path.endswith(".dlprof") else trace_path
    dot = stem.rfind(".k")
    if dot >= 0 and stem[dot + 2:].isdigit() and stem[dot + 2:].isascii():
        stem = stem[:dot]
    return stem


def _sources(path, run):
    """[(counters file, run id or None: its header's)] of `path`: one
    .dlcount file as it is; else the run of the traces under `path` (a
    directory, a trace file or a list) chosen as read_events and
    read_whole_run choose it, through the reader library (`run`, or the
    latest with a warning naming the others), each of its bounded traces'
    counters file, as dlprof-dump finds them."""
    if isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).endswith(".dlcount"):
        if not os.path.exists(path):
            raise FileNotFoundError("dlprof: %s: no such file" % os.fsdecode(path))
        return [(os.fsdecode(path), None)]
    from . import _native as nv
    out, seen = [], set()
    with nv.Traces(path, run, stacklevel=4) as t:  # (warnings: read_counters' caller)
        for i in range(t.count()):
            info = t.info(i)
            if not info.opened or not info.header_flags & _SEGMENT:
                continue  # (a trace without DLPROF_KEEP has no counters)
            counters = _stem(nv.text(info.path)) + ".dlcount"
            if counters in seen or not os.path.exists(counters):
                continue
            seen.add(counters)
            out.append((counters, t.process(i, False)[2]))
    return sorted(out)


def _read(path, run, batch_region, step_region):
    with open(path, "rb") as f:
        data = f.read()
    start, pid, host, header_run = _header(data, path)
    run = header_run if run is None else run
    strings, rows, kept, stalls, damage = {}, [], [], [], []
    so_far = None  # the interval in progress: kept where it is the last record
    for rtype, payload, at in _records(data, start, path, damage):
        try:
            so_far = _record(rtype, _Cursor(payload), so_far, (host, pid, run), strings, rows,
                             kept, stalls, batch_region, step_region)
        except IndexError:  # a record whole but for what it says: itself skipped
            damage.append((at, 16 + len(payload)))
    if damage:
        warnings.warn("dlprof: %s: damaged at byte %d%s: %d bytes skipped; the records after "
                      "the damage were read" % (
                          path, damage[0][0],
                          " and %d more places" % (len(damage) - 1) if len(damage) > 1 else "",
                          sum(n for _, n in damage)), stacklevel=3)
    if so_far is not None:
        rows.append(so_far)
    _add_stalls(rows, stalls)
    return rows, kept


def _record(rtype, c, so_far, who, strings, rows, kept, stalls, batch_region, step_region):
    """One record's rows into the lists; returns the interval so far."""
    host, pid, run = who
    if so_far is not None:
        so_far = None  # a record after it: a stale one
    if rtype == 1:
        for _ in range(c.u()):
            i = c.u()
            strings[i] = c.take(c.u()).decode("utf-8", "replace")
    elif rtype in (2, 7):
        row = {"run": run, "host": host, "pid": pid, "so_far": rtype == 7}
        row["start_ns"] = c.u()
        row["end_ns"] = row["start_ns"] + c.u()
        row["rank"] = c.z()
        row["events"] = c.u()
        for cls in CLASSES:
            for k in _IO:
                row["%s_%s" % (cls, k)] = c.u()
        for _ in range(c.u()):  # kinds
            for _ in range(5):
                c.u()
        for _ in range(c.u()):  # files
            c.u(), c.u()
            for _ in _IO:
                c.u()
        row["batch_waits"] = row["batch_wait_ns"] = row["steps"] = 0
        for _ in range(c.u()):  # regions
            name, count, ns = strings.get(c.u()), c.u(), c.u()
            c.u(), c.u(), c.u()
            if name == batch_region:
                row["batch_waits"] += count
                row["batch_wait_ns"] += ns
            elif name == step_region:
                row["steps"] += count
        if rtype == 7:
            so_far = row
        else:
            rows.append(row)
    elif rtype == 3:
        at, lo, hi = c.u(), c.u(), c.u()
        kept.append({"run": run, "host": host, "pid": pid, "at_ns": at, "from_ns": lo,
                     "to_ns": hi,
                     "reason": c.take(c.u()).decode("utf-8", "replace")})
    elif rtype == 8:  # data stall: from_ns, to_ns - from_ns, io_ns, stall_ns
        lo, length, io, stall = c.u(), c.u(), c.u(), c.u()
        if stall <= io <= length:  # else damage, as dlprof-dump takes it
            stalls.append((lo, lo + length, io, stall))
    return so_far


def _add_stalls(rows, stalls):
    """Each data stall record of a process (from_ns, to_ns, io_ns,
    stall_ns) to its interval row (`rows`, in their order) that holds its
    stretch's middle: it is written an interval after the stretch it
    measured, not with the interval before it."""
    for row in rows:
        row["io_outstanding_ns"] = row["data_stall_ns"] = None
    starts = [row["start_ns"] for row in rows]
    for lo, hi, io, stall in stalls:
        mid = lo + (hi - lo) // 2
        i = bisect.bisect_right(starts, mid) - 1
        if i < 0 or mid >= rows[i]["end_ns"]:
            continue  # (no interval of its process there: a record of no row)
        row = rows[i]
        row["io_outstanding_ns"] = (row["io_outstanding_ns"] or 0) + io
        row["data_stall_ns"] = (row["data_stall_ns"] or 0) + stall


def read_counters(path, *, run=None, batch_region="load_batch", step_region="optimizer_step"):
    """A row per process and interval of the counters under `path` (a trace
    directory, a trace file or a list of them: the run `run`, by id, else
    the latest, with a warning naming the others, as read_events; or one
    .dlcount file), in the order of their start. A missing path raises
    FileNotFoundError; a file that is no counters file ValueError; a torn
    last record or damage is skipped with a warning naming the file and
    byte."""
    import pandas as pd
    rows = []
    for f, run_id in _sources(path, run):
        rows += _read(f, run_id, batch_region, step_region)[0]
    df = pd.DataFrame(rows, columns=_COLUMNS)
    return df.sort_values(["start_ns", "pid"]).reset_index(drop=True) if len(df) else df


def read_kept_windows(path, *, run=None):
    """A row per window kept whole (DLPROF_KEEP_WHEN, dlprof keep): run,
    host, pid, at_ns, from_ns, to_ns, reason; `path` and `run` as
    read_counters takes them."""
    import pandas as pd
    kept = []
    for f, run_id in _sources(path, run):
        kept += _read(f, run_id, "load_batch", "optimizer_step")[1]
    return pd.DataFrame(kept, columns=["run", "host", "pid", "at_ns", "from_ns", "to_ns",
                                       "reason"])
