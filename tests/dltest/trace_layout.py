"""The trace file's layout read directly, without dlprof-dump: the header's
fixed part and strings, the block headers, and the trace files of a run
(docs/FORMAT.md, include/dlprof/format.h). Tests use it to check what the
writer put on disk, and to poll a running program's progress cheaply."""

import os
import struct

# The file header's fixed part (docs/FORMAT.md, include/dlprof/format.h).
_HEADER = struct.Struct("<8sIIQQiiiIQII")
_MAGIC = b"DLPROF\r\n"
HEADER_FLAG_FORKED = 1
# A block header (include/dlprof/format.h): magic, flags, compressed size,
# raw size, event count, ...
_BLOCK = struct.Struct("<IIIIIIQQII")
_BLOCK_MAGIC = 0x42504C44


def read_header(path):
    """The fixed part of a trace file's header as a dict."""
    with open(path, "rb") as f:
        raw = f.read(_HEADER.size)
    (magic, version, header_size, mono, real, pid, ppid, rank, flags,
     start, _reserved, _crc) = _HEADER.unpack(raw)
    if magic != _MAGIC:
        raise ValueError("%s is not a dlprof trace" % path)
    return {"file": path, "version": version, "pid": pid, "ppid": ppid,
            "rank": rank, "flags": flags, "clock_mono_ns": mono, "process_start_ns": start}


def read_header_strings(path):
    """The header's strings: host, exe, cmdline, run_id, boot_id, time_ns,
    kernel_start, parent_run_id, cpus, clock, faults, pid_ns (docs/FORMAT.md,
    "File header"); those an older writer left out are ""."""
    with open(path, "rb") as f:
        raw = f.read(_HEADER.size)
        header_size = _HEADER.unpack(raw)[2]
        rest = f.read(header_size - _HEADER.size)
    names = ("host", "exe", "cmdline", "run_id", "boot_id", "time_ns", "kernel_start",
             "parent_run_id", "cpus", "clock", "faults", "pid_ns")
    out = dict.fromkeys(names, "")
    at = 0
    for name in names:
        if at + 4 > len(rest):
            break
        (n,) = struct.unpack_from("<I", rest, at)
        out[name] = rest[at + 4:at + 4 + n].decode("utf-8", "replace")
        at += 4 + n
    return out


def block_headers(path):
    """The block headers of a trace file as dicts (magic, flags, sizes,
    events, clock_error_ns, span), as far as the blocks are complete."""
    with open(path, "rb") as f:
        data = f.read()
    out = []
    if len(data) < _HEADER.size:
        return out
    at = _HEADER.unpack_from(data)[2]
    while at + _BLOCK.size <= len(data):
        (magic, flags, zsize, raw, events, clock_error_ns, first, last, _pcrc,
         _hcrc) = _BLOCK.unpack_from(data, at)
        if magic != _BLOCK_MAGIC or at + _BLOCK.size + zsize > len(data):
            break
        out.append({"offset": at, "flags": flags, "compressed_size": zsize,
                    "raw_size": raw, "events": events, "clock_error_ns": clock_error_ns,
                    "first_start_ns": first, "last_end_ns": last})
        at += _BLOCK.size + zsize
    return out


def trace_files(trace_dir):
    """Every trace file under `trace_dir`, at any depth: the runtime writes
    into DLPROF_DIR/<run id>/<host>/, older writers into DLPROF_DIR itself."""
    if not os.path.isdir(trace_dir):
        return []
    return sorted(os.path.join(root, n) for root, _dirs, names in os.walk(trace_dir)
                  for n in names if n.endswith(".dlprof"))


def flushed_events(trace_dir):
    """Events in the complete blocks of a run's trace files, from the block
    headers alone (cheap enough to poll while the traced program runs)."""
    return sum(b["events"] for path in trace_files(trace_dir) for b in block_headers(path))
