"""The reader library (libdlprof_reader.so, include/dlprof/reader.h) through
ctypes, for dlprof.traces and dlprof.dask: loading it, its structures and
prototypes, an open set of traces, and the small tables that turn its codes
into pandas categoricals.

The library is found through $DLPROF_READER_LIB, else next to this package
(``dlprof/libdlprof_reader.so``: an installed package), else in the build
tree the package sits in or beside (``build/lib``), else by
``ctypes.util.find_library``. Nothing here imports numpy or pandas.
"""

import collections
import ctypes
import ctypes.util
import json
import os
import threading
import warnings

OK, ERROR_ARGUMENT, ERROR_INPUT, ERROR_DAMAGED = 0, 1, 2, 3
CALL_STACK = 254  # a stack record: shown as its event's stack, not a row
NO_EVENT = 0xFFFFFFFFFFFFFFFF
# The ABI this module was written against: calls of a later minor version
# are only additions.
ABI_MAJOR, ABI_MINOR = 1, 6
# What a kind is to a reader (dlprof_kind_traits, dlprof_kind_bytes,
# dlprof_kind_thread; include/dlprof/reader.h): the event rules dlprof-dump
# follows, read from the library rather than restated here.
KIND_IO, KIND_DATA, KIND_BANDWIDTH, KIND_GPU_WORK = 1 << 0, 1 << 1, 1 << 2, 1 << 3
KIND_GPU_API, KIND_GPU_CLOCK, KIND_NAMED, KIND_CONFIG = 1 << 4, 1 << 5, 1 << 6, 1 << 7
KIND_FLOW_START, KIND_FLOW_FINISH, KIND_CONTEXT, KIND_TRACED_CALL = 1 << 8, 1 << 9, 1 << 10, 1 << 11
KIND_MAP_READ = 1 << 12
KIND_ASYNC = 1 << 13  # an asynchronous request (1.5): aux packs its submitter and reaping
BYTES_NONE, BYTES_RET, BYTES_AUX, BYTES_SIZE = 0, 1, 2, 3
THREAD_RECORD, THREAD_CALLER, THREAD_STREAM = 0, 1, 2

P = ctypes.c_void_p


class TraceInfo(ctypes.Structure):
    _fields_ = [
        ("path", ctypes.c_char_p),
        ("host", ctypes.c_char_p),
        ("exe", ctypes.c_char_p),
        ("pid", ctypes.c_int32),
        ("ppid", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("header_flags", ctypes.c_uint32),
        ("opened", ctypes.c_int),
        ("blocks", ctypes.c_uint64),
        ("events", ctypes.c_uint64),
        ("first_start_ns", ctypes.c_uint64),
        ("process_start_ns", ctypes.c_uint64),
        ("file_bytes", ctypes.c_uint64),
        ("clock", ctypes.c_char_p),
        ("faults", ctypes.c_char_p),
    ]


class ProcessInfo(ctypes.Structure):
    _fields_ = [
        ("cmdline", P),
        ("cmdline_length", ctypes.c_size_t),
        ("run_id", ctypes.c_char_p),
        ("last_end_ns", ctypes.c_uint64),
        ("dropped_events", ctypes.c_uint64),
        ("damaged_blocks", ctypes.c_uint64),
        ("clean_exit", ctypes.c_int),
    ]


# (field, numpy dtype): the arrays of dlprof_columns, in reader.h's order.
NATIVE_COLUMNS = (
    ("start_ns", "uint64"), ("dur_ns", "uint64"), ("kind", "uint16"), ("flags", "uint16"),
    ("tid", "int32"), ("rank", "int32"), ("fd", "int32"), ("file", "uint32"),
    ("offset", "int64"), ("size", "uint64"), ("ret", "int64"), ("err", "int32"),
    ("aux", "uint64"),
)


class Columns(ctypes.Structure):
    _fields_ = [("capacity", ctypes.c_size_t)] + [(f, P) for f, _ in NATIVE_COLUMNS]


# The arrays of dlprof_region_columns, in reader.h's order.
REGION_COLUMNS = (
    ("trace", "uint32"), ("tid", "int32"), ("start_ns", "uint64"), ("end_ns", "uint64"),
    ("depth", "uint32"), ("name", "uint32"), ("nvtx", "uint8"), ("outermost", "uint8"),
)


class RegionColumns(ctypes.Structure):
    _fields_ = [("capacity", ctypes.c_size_t)] + [(f, P) for f, _ in REGION_COLUMNS]


_lib_lock = threading.Lock()
_lib_handle = None


def _candidates():
    env = os.environ.get("DLPROF_READER_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    name = "libdlprof_reader.so"
    out = [os.path.join(here, name),
           os.path.join(here, "..", "..", "lib", name),           # build/python/dlprof
           os.path.join(here, "..", "..", name),  # the bootstrap's copy, lib/dlprof-python/dlprof
           os.path.join(here, "..", "..", "build", "lib", name)]  # python/dlprof in the source
    found = ctypes.util.find_library("dlprof_reader")
    if found:
        out.append(found)
    return out


def _prototypes():
    st, sz, u64 = ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64
    return {
        "dlprof_reader_version": (ctypes.c_uint32, []),
        "dlprof_last_error": (ctypes.c_char_p, []),
        "dlprof_traces_open": (st, [ctypes.POINTER(ctypes.c_char_p), sz, ctypes.c_char_p,
                                    ctypes.POINTER(P)]),
        "dlprof_traces_note": (ctypes.c_char_p, [P]),
        "dlprof_traces_free": (None, [P]),
        "dlprof_trace_count": (sz, [P]),
        "dlprof_traces_first_ns": (u64, [P]),
        "dlprof_trace_info_get": (st, [P, sz, ctypes.POINTER(TraceInfo)]),
        "dlprof_trace_process_get": (st, [P, sz, ctypes.c_int, ctypes.POINTER(ProcessInfo)]),
        "dlprof_block_events": (st, [P, sz, sz, sz, ctypes.POINTER(u64)]),
        "dlprof_read_events": (st, [P, sz, sz, sz, ctypes.POINTER(Columns),
                                    ctypes.POINTER(sz)]),
        "dlprof_trace_string": (P, [P, sz, ctypes.c_uint32, ctypes.POINTER(sz)]),
        "dlprof_group_regions": (st, [P, sz, ctypes.POINTER(P)]),
        "dlprof_region_count": (sz, [P]),
        "dlprof_region_read": (st, [P, ctypes.POINTER(RegionColumns)]),
        "dlprof_region_name": (P, [P, ctypes.c_uint32, ctypes.POINTER(sz)]),
        "dlprof_regions_free": (None, [P]),
        "dlprof_group_count": (sz, [P]),
        "dlprof_group_traces": (sz, [P, sz, ctypes.POINTER(sz), sz]),
        "dlprof_summarize_group": (st, [P, sz, ctypes.POINTER(P)]),
        "dlprof_summarize": (st, [P, ctypes.POINTER(P)]),
        "dlprof_summary_merge": (st, [P, P]),
        "dlprof_summary_json": (st, [P, ctypes.POINTER(P), ctypes.POINTER(sz)]),
        "dlprof_summary_free": (None, [P]),
        "dlprof_whole_run_json": (st, [P, ctypes.POINTER(P), ctypes.POINTER(sz)]),
        "dlprof_compare_json": (st, [P, P, ctypes.POINTER(P), ctypes.POINTER(sz)]),
        "dlprof_summary_encode": (st, [P, ctypes.POINTER(P), ctypes.POINTER(sz)]),
        "dlprof_summary_decode": (st, [ctypes.c_char_p, sz, ctypes.POINTER(P)]),
        "dlprof_traces_clock_domains": (sz, [P]),
        "dlprof_free": (None, [P]),
        "dlprof_kind_name": (ctypes.c_char_p, [ctypes.c_uint16]),
        "dlprof_kind_category": (ctypes.c_char_p, [ctypes.c_uint16]),
        "dlprof_kind_class": (ctypes.c_char_p, [ctypes.c_uint16]),
        "dlprof_kind_traits": (ctypes.c_uint32, [ctypes.c_uint16]),
        "dlprof_kind_bytes": (ctypes.c_int, [ctypes.c_uint16]),
        "dlprof_kind_thread": (ctypes.c_int, [ctypes.c_uint16]),
    }


def lib():
    """The reader library, loaded once, with its prototypes."""
    global _lib_handle
    with _lib_lock:
        if _lib_handle is not None:
            return _lib_handle
        tried = []
        handle = None
        for c in _candidates():
            if os.sep in c and not os.path.exists(c):
                tried.append(c)
                continue
            try:
                handle = ctypes.CDLL(c)
                break
            except OSError as e:
                tried.append("%s (%s)" % (c, e))
        if handle is None:
            raise OSError("dlprof: libdlprof_reader.so not found (set DLPROF_READER_LIB); "
                          "tried " + ", ".join(tried))
        if not hasattr(handle, "dlprof_reader_version"):
            raise OSError("dlprof: %s is older than this module (reader ABI 1.0; needs %d.%d)"
                          % (handle._name, ABI_MAJOR, ABI_MINOR))
        version = ctypes.CFUNCTYPE(ctypes.c_uint32)(("dlprof_reader_version", handle))()
        if version >> 16 != ABI_MAJOR or (version & 0xFFFF) < ABI_MINOR:
            raise OSError("dlprof: %s has reader ABI %d.%d; this module needs %d.%d or a later "
                          "minor" % (handle._name, version >> 16, version & 0xFFFF,
                                     ABI_MAJOR, ABI_MINOR))
        for fn, (res, args) in _prototypes().items():
            f = getattr(handle, fn)
            f.restype = res
            f.argtypes = args
        _lib_handle = handle
        return handle


def error(handle):
    return handle.dlprof_last_error().decode("utf-8", "replace")


def text(b):
    return b.decode("utf-8", "surrogateescape") if b is not None else ""


def native_string(p, n):
    return None if not p else text(ctypes.string_at(p, n))


class Traces:
    """An open dlprof_traces handle (a context manager). `warn`: say, as
    warnings, which inputs held no trace and which other runs were left
    (`stacklevel`: the caller's, as warnings.warn counts from here)."""

    def __init__(self, path, run, warn=True, stacklevel=3):
        self.lib = lb = lib()
        paths = [path] if isinstance(path, (str, bytes, os.PathLike)) else list(path)
        if not paths:
            raise ValueError("dlprof: no path given")
        enc = [os.fsencode(p) for p in paths]
        arr = (ctypes.c_char_p * len(enc))(*enc)
        h = P()
        st = lb.dlprof_traces_open(arr, len(enc), os.fsencode(run) if run else None,
                                   ctypes.byref(h))
        if not h.value:
            raise FileNotFoundError("dlprof: " + error(lb))
        self.h = h
        if st != OK:
            message = "dlprof: " + error(lb)
            if not any(self.info(i).opened for i in range(self.count())):
                lb.dlprof_traces_free(h)
                self.h = None
                gone = not any(os.path.exists(p) for p in enc)
                raise (FileNotFoundError if gone else OSError)(message)  # OSError: no trace in it
            if warn:
                warnings.warn(message, stacklevel=stacklevel)  # some inputs held no trace
        if run is None and warn:
            # Several runs, the latest taken: name the others, as dlprof-dump does.
            note = text(lb.dlprof_traces_note(h))
            if note:
                warnings.warn("dlprof: " + note.replace("--run ID", "run=ID"),
                              stacklevel=stacklevel)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.h is not None:
            self.lib.dlprof_traces_free(self.h)
            self.h = None

    def count(self):
        return self.lib.dlprof_trace_count(self.h)

    def info(self, i):
        info = TraceInfo()
        if self.lib.dlprof_trace_info_get(self.h, i, ctypes.byref(info)) != OK:
            raise RuntimeError("dlprof: " + error(self.lib))
        return info

    def process(self, i, count_dropped):
        """(ProcessInfo, command line as a list, run id, damage message or None)."""
        p = ProcessInfo()
        st = self.lib.dlprof_trace_process_get(self.h, i, 1 if count_dropped else 0,
                                               ctypes.byref(p))
        damage = error(self.lib) if st != OK else None
        raw = ctypes.string_at(p.cmdline, p.cmdline_length) if p.cmdline else b""
        # Every argument ends in a NUL (reader.h), the last one included
        # (libraries built before that fix left the last one's out).
        if raw.endswith(b"\0"):
            raw = raw[:-1]
        args = [text(a) for a in raw.split(b"\0")] if p.cmdline_length else []
        return p, args, text(p.run_id), damage

    def string(self, i, sid):
        n = ctypes.c_size_t()
        p = self.lib.dlprof_trace_string(self.h, i, sid, ctypes.byref(n))
        return native_string(p, n.value)

    def groups(self):
        """The groups of traces summarised together, as lists of trace indices."""
        out = []
        for g in range(self.lib.dlprof_group_count(self.h)):
            n = self.lib.dlprof_group_traces(self.h, g, None, 0)
            idx = (ctypes.c_size_t * max(n, 1))()
            self.lib.dlprof_group_traces(self.h, g, idx, n)
            out.append(list(idx[:n]))
        return out


def summary_json(handle, s):
    """The JSON text of native summary `s` (which stays the caller's)."""
    out = P()
    n = ctypes.c_size_t()
    if handle.dlprof_summary_json(s, ctypes.byref(out), ctypes.byref(n)) != OK:
        raise RuntimeError("dlprof: " + error(handle))
    try:
        return ctypes.string_at(out, n.value)
    finally:
        handle.dlprof_free(out)


def whole_run_json(t):
    """The "whole_run" object of open Traces `t` (a bounded trace's counters)
    as JSON text; b"null" when no trace has counters."""
    out = P()
    n = ctypes.c_size_t()
    if t.lib.dlprof_whole_run_json(t.h, ctypes.byref(out), ctypes.byref(n)) != OK:
        raise RuntimeError("dlprof: " + error(t.lib))
    try:
        return ctypes.string_at(out, n.value)
    finally:
        t.lib.dlprof_free(out)


def with_whole_run(summary, whole_run):
    """`summary` (a dict) with "whole_run" first, as dlprof-dump writes it,
    where `whole_run` (whole_run_json's text) is not null."""
    w = json.loads(whole_run)
    return summary if w is None else dict([("whole_run", w)] + list(summary.items()))


def compare_json(handle, before, after):
    """The comparison JSON text of native summaries `before` and `after`
    (which stay the caller's)."""
    out = P()
    n = ctypes.c_size_t()
    if handle.dlprof_compare_json(before, after, ctypes.byref(out), ctypes.byref(n)) != OK:
        raise RuntimeError("dlprof: " + error(handle))
    try:
        return ctypes.string_at(out, n.value)
    finally:
        handle.dlprof_free(out)


# One kind: its name, category and class (op), and its rules: `traits`
# (KIND_* bits), where its bytes are (BYTES_*), whose thread it is (THREAD_*).
Kind = collections.namedtuple("Kind", "name cat op traits bytes thread")


class Kinds:
    """Kind code -> Kind, from the library's catalogue and event rules."""

    def __init__(self, handle):
        self.lib = handle
        self.cache = {}

    def get(self, code):
        k = self.cache.get(code)
        if k is None:
            lib = self.lib
            name = lib.dlprof_kind_name(code)
            # (A code the catalogue lacks has no rules: 0 each.)
            rules = (lib.dlprof_kind_traits(code), lib.dlprof_kind_bytes(code),
                     lib.dlprof_kind_thread(code))
            if name is None:
                k = Kind("kind_%d" % code, "unknown", "", *rules)
            else:
                k = Kind(text(name), text(lib.dlprof_kind_category(code)),
                         text(lib.dlprof_kind_class(code)), *rules)
            self.cache[code] = k
        return k


class Strings:
    """The categories of one categorical column: string -> code."""

    def __init__(self):
        self.codes = {}
        self.values = []

    def code(self, s):
        c = self.codes.get(s)
        if c is None:
            c = self.codes[s] = len(self.values)
            self.values.append(s)
        return c


def present(np, ids):
    """The distinct values of a small-integer array, without sorting it."""
    if ids.size == 0:
        return ids[:0]
    top = int(ids.max())
    if top <= 4 * ids.size + (1 << 20):
        return np.flatnonzero(np.bincount(ids, minlength=top + 1)).astype(ids.dtype)
    return np.unique(ids)


def lookup(np, ids, present_ids, codes, fill=-1):
    """codes[k] for each ids[i] == present_ids[k], vectorised."""
    if ids.size == 0:
        return np.empty(0, np.int32)
    top = int(present_ids.max()) if present_ids.size else 0
    if top <= 4 * ids.size + (1 << 20):
        lut = np.full(top + 1, fill, np.int32)
        lut[present_ids] = codes
        return lut[ids]
    return np.asarray(codes, np.int32)[np.searchsorted(present_ids, ids)]


def categorical(np, pd, codes, strings):
    """A pandas Categorical of `codes` (int32, -1: NaN) over strings.values,
    its codes in the width pandas keeps them in (no conversion there)."""
    values = strings.values
    width = np.int8 if len(values) < 127 else np.int16 if len(values) < 32767 else np.int32
    return pd.Categorical.from_codes(codes.astype(width, copy=False),
                                     dtype=pd.CategoricalDtype(values))
