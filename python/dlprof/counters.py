"""The whole run of a bounded trace (DLPROF_KEEP) as a pandas DataFrame.

    import dlprof
    c = dlprof.read_counters("dlprof-traces")   # a row per process and interval
    c.groupby("pid")["data_read_bytes"].sum()
    (c["batch_wait_ns"] / (c["end_ns"] - c["start_ns"])).plot()

Each process traced with DLPROF_KEEP writes NAME.dlcount beside its trace
segments: one record per interval (docs/FORMAT_BOUNDED.md). This
module reads those files itself, in pure Python -- they are small (well under
1 MiB an hour per process) and their format is a few varints -- so it needs
neither the reader library nor a decoded trace. Columns: host, pid, rank,
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

__all__ = ["read_counters", "read_kept_windows", "CLASSES"]

CLASSES = ("data", "code", "outputs", "system", "other")
_IO = ("reads", "read_bytes", "read_ns", "writes", "write_bytes", "write_ns",
       "other_calls", "other_ns")
_MAGIC = 0x43504C44  # "DLPC"
_FILE_MAGIC = b"DLPROF\r\n"


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


def _header(data):
    """pid, host of a trace file header (docs/FORMAT.md)."""
    if data[:8] != _FILE_MAGIC:
        raise ValueError("not a dlprof counters file (bad magic)")
    header_size, = struct.unpack_from("<I", data, 12)
    pid, = struct.unpack_from("<i", data, 32)
    n, = struct.unpack_from("<I", data, 64)
    host = data[68:68 + n].decode("utf-8", "replace")
    return header_size, pid, host


def _records(data, start):
    at = start
    while at + 16 <= len(data):
        magic, rtype, _res, size, crc = struct.unpack_from("<IHHII", data, at)
        if magic != _MAGIC or at + 16 + size > len(data):
            return  # damage, or a torn last record
        payload = data[at + 16:at + 16 + size]
        at += 16 + size
        if _crc32c(payload) == crc:
            yield rtype, payload


def _files(path):
    if os.path.isfile(path):
        return [path]
    return sorted(os.path.join(r, n) for r, _, ns in os.walk(path) for n in ns
                  if n.endswith(".dlcount"))


def _read(path, batch_region, step_region):
    with open(path, "rb") as f:
        data = f.read()
    start, pid, host = _header(data)
    strings, rows, kept, stalls = {}, [], [], []
    so_far = None  # the interval in progress: kept where it is the last record
    for rtype, payload in _records(data, start):
        c = _Cursor(payload)
        if so_far is not None:
            so_far = None  # a record after it: a stale one
        if rtype == 1:
            for _ in range(c.u()):
                i = c.u()
                strings[i] = c.take(c.u()).decode("utf-8", "replace")
        elif rtype in (2, 7):
            row = {"host": host, "pid": pid, "so_far": rtype == 7}
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
            kept.append({"host": host, "pid": pid, "at_ns": at, "from_ns": lo, "to_ns": hi,
                         "reason": c.take(c.u()).decode("utf-8", "replace")})
        elif rtype == 8:  # data stall: from_ns, to_ns - from_ns, io_ns, stall_ns
            lo, length, io, stall = c.u(), c.u(), c.u(), c.u()
            if stall <= io <= length:  # else damage, as dlprof-dump takes it
                stalls.append((lo, lo + length, io, stall))
    if so_far is not None:
        rows.append(so_far)
    _add_stalls(rows, stalls)
    return rows, kept


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


def read_counters(path, *, batch_region="load_batch", step_region="optimizer_step"):
    """A row per process and interval of the counters under `path` (a trace
    directory or one .dlcount file), in the order of their start."""
    import pandas as pd
    rows = []
    for f in _files(path):
        rows += _read(f, batch_region, step_region)[0]
    df = pd.DataFrame(rows)
    return df.sort_values(["start_ns", "pid"]).reset_index(drop=True) if len(df) else df


def read_kept_windows(path):
    """A row per window kept whole (DLPROF_KEEP_WHEN, dlprof keep): host,
    pid, at_ns, from_ns, to_ns, reason."""
    import pandas as pd
    kept = []
    for f in _files(path):
        kept += _read(f, "load_batch", "optimizer_step")[1]
    return pd.DataFrame(kept, columns=["host", "pid", "at_ns", "from_ns", "to_ns", "reason"])
