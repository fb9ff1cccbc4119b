"""dlprof traces as pandas DataFrames, over the reader's C ABI.

    import dlprof
    events = dlprof.read_events("dlprof-traces")      # a row per event
    procs = dlprof.read_processes("dlprof-traces")    # a row per process
    s = dlprof.summary("dlprof-traces")               # dlprof-dump --summary, as a dict

The native reader (``libdlprof_reader.so``, include/dlprof/reader.h) decodes
each trace straight into numpy arrays: no JSON and no Python object per
event. Strings (host, category, name, path) come as pandas categoricals,
integers as numpy integer dtypes. numpy and pandas are imported here, when
a function is called, never by ``import dlprof``.

The library is found through $DLPROF_READER_LIB, else next to this package
(``dlprof/libdlprof_reader.so``), else in the build tree the package sits in
or beside (``build/lib``), else by ``ctypes.util.find_library``.
"""

import ctypes
import ctypes.util
import json
import os
import threading
import warnings

__all__ = ["read_events", "read_processes", "summary", "EVENT_COLUMNS"]

# The columns of read_events, in order.
EVENT_COLUMNS = ("ts", "dur", "host", "pid", "tid", "rank", "cat", "kind", "name",
                 "path", "fd", "offset", "size", "bytes", "ret", "errno")

_OK, _ERROR_ARGUMENT, _ERROR_INPUT, _ERROR_DAMAGED = 0, 1, 2, 3
_CALL_STACK = 254  # a stack record: shown as its event's stack, not a row

_P = ctypes.c_void_p


class _TraceInfo(ctypes.Structure):
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
    ]


# (field, numpy dtype): the arrays of dlprof_columns, in reader.h's order.
_NATIVE_COLUMNS = (
    ("start_ns", "uint64"), ("dur_ns", "uint64"), ("kind", "uint16"), ("flags", "uint16"),
    ("tid", "int32"), ("rank", "int32"), ("fd", "int32"), ("file", "uint32"),
    ("offset", "int64"), ("size", "uint64"), ("ret", "int64"), ("err", "int32"),
    ("aux", "uint64"),
)


class _Columns(ctypes.Structure):
    _fields_ = [("capacity", ctypes.c_size_t)] + [(f, _P) for f, _ in _NATIVE_COLUMNS]


# The native columns each output column needs.
_NEEDS = {
    "ts": ("start_ns",), "dur": ("dur_ns",), "host": (), "pid": (),
    "tid": ("tid", "kind", "offset"), "rank": ("rank",), "cat": ("kind",),
    "kind": ("kind",), "name": ("kind", "file"), "path": ("kind", "file"),
    "fd": ("fd",), "offset": ("offset",), "size": ("size",),
    "bytes": ("kind", "ret", "aux", "size"), "ret": ("ret",), "errno": ("err",),
}

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
           os.path.join(here, "..", "..", "build", "lib", name)]  # python/dlprof in the source
    found = ctypes.util.find_library("dlprof_reader")
    if found:
        out.append(found)
    return out


def _lib():
    """The reader library, loaded once, with its prototypes."""
    global _lib_handle
    with _lib_lock:
        if _lib_handle is not None:
            return _lib_handle
        tried = []
        lib = None
        for c in _candidates():
            if os.sep in c and not os.path.exists(c):
                tried.append(c)
                continue
            try:
                lib = ctypes.CDLL(c)
                break
            except OSError as e:
                tried.append("%s (%s)" % (c, e))
        if lib is None:
            raise OSError("dlprof: libdlprof_reader.so not found (set DLPROF_READER_LIB); "
                          "tried " + ", ".join(tried))
        st = ctypes.c_int
        protos = {
            "dlprof_last_error": (ctypes.c_char_p, []),
            "dlprof_traces_open": (st, [ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                        ctypes.c_char_p, ctypes.POINTER(_P)]),
            "dlprof_traces_note": (ctypes.c_char_p, [_P]),
            "dlprof_traces_free": (None, [_P]),
            "dlprof_trace_count": (ctypes.c_size_t, [_P]),
            "dlprof_traces_first_ns": (ctypes.c_uint64, [_P]),
            "dlprof_trace_info_get": (st, [_P, ctypes.c_size_t, ctypes.POINTER(_TraceInfo)]),
            "dlprof_block_events": (st, [_P, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t,
                                         ctypes.POINTER(ctypes.c_uint64)]),
            "dlprof_read_events": (st, [_P, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t,
                                        ctypes.POINTER(_Columns),
                                        ctypes.POINTER(ctypes.c_size_t)]),
            "dlprof_trace_string": (_P, [_P, ctypes.c_size_t, ctypes.c_uint32,
                                         ctypes.POINTER(ctypes.c_size_t)]),
            "dlprof_summarize": (st, [_P, ctypes.POINTER(_P)]),
            "dlprof_summary_json": (st, [_P, ctypes.POINTER(_P), ctypes.POINTER(ctypes.c_size_t)]),
            "dlprof_summary_free": (None, [_P]),
            "dlprof_free": (None, [_P]),
            "dlprof_kind_name": (ctypes.c_char_p, [ctypes.c_uint16]),
            "dlprof_kind_category": (ctypes.c_char_p, [ctypes.c_uint16]),
            "dlprof_kind_class": (ctypes.c_char_p, [ctypes.c_uint16]),
        }
        for fn, (res, args) in protos.items():
            f = getattr(lib, fn)
            f.restype = res
            f.argtypes = args
        _lib_handle = lib
        return lib


def _error(lib):
    return lib.dlprof_last_error().decode("utf-8", "replace")


def _text(b):
    return b.decode("utf-8", "surrogateescape") if b is not None else ""


class _Traces:
    """An open dlprof_traces handle (a context manager)."""

    def __init__(self, path, run):
        self.lib = lib = _lib()
        paths = [path] if isinstance(path, (str, bytes, os.PathLike)) else list(path)
        if not paths:
            raise ValueError("dlprof: no path given")
        enc = [os.fsencode(p) for p in paths]
        arr = (ctypes.c_char_p * len(enc))(*enc)
        h = _P()
        st = lib.dlprof_traces_open(arr, len(enc), os.fsencode(run) if run else None,
                                    ctypes.byref(h))
        if not h.value:
            raise FileNotFoundError("dlprof: " + _error(lib))
        self.h = h
        if st != _OK:
            message = "dlprof: " + _error(lib)
            if not any(self.info(i).opened for i in range(self.count())):
                self.lib.dlprof_traces_free(h)
                self.h = None
                gone = not any(os.path.exists(p) for p in enc)
                raise (FileNotFoundError if gone else OSError)(message)  # OSError: no trace in it
            warnings.warn(message, stacklevel=3)  # some inputs held no trace
        if run is None:
            # Several runs, the latest taken: name the others, as dlprof-dump does.
            note = _text(lib.dlprof_traces_note(h))
            if note:
                warnings.warn("dlprof: " + note.replace("--run ID", "run=ID"), stacklevel=3)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lib.dlprof_traces_free(self.h)
        self.h = None

    def count(self):
        return self.lib.dlprof_trace_count(self.h)

    def info(self, i):
        info = _TraceInfo()
        if self.lib.dlprof_trace_info_get(self.h, i, ctypes.byref(info)) != _OK:
            raise RuntimeError("dlprof: " + _error(self.lib))
        return info

    def string(self, i, sid):
        n = ctypes.c_size_t()
        p = self.lib.dlprof_trace_string(self.h, i, sid, ctypes.byref(n))
        return None if not p else _text(ctypes.string_at(p, n.value))


class _Kinds:
    """Kind code -> name, category and class, from the library's catalogue."""

    def __init__(self, lib):
        self.lib = lib
        self.cache = {}

    def get(self, code):
        k = self.cache.get(code)
        if k is None:
            name = self.lib.dlprof_kind_name(code)
            if name is None:
                k = ("kind_%d" % code, "unknown", "")
            else:
                k = (_text(name), _text(self.lib.dlprof_kind_category(code)),
                     _text(self.lib.dlprof_kind_class(code)))
            self.cache[code] = k
        return k


class _Strings:
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


def _present(np, ids):
    """The distinct values of a small-integer array, without sorting it."""
    if ids.size == 0:
        return ids[:0]
    top = int(ids.max())
    if top <= 4 * ids.size + (1 << 20):
        return np.flatnonzero(np.bincount(ids, minlength=top + 1)).astype(ids.dtype)
    return np.unique(ids)


def _lookup(np, ids, present, codes, fill=-1):
    """codes[k] for each ids[i] == present[k], vectorised."""
    if ids.size == 0:
        return np.empty(0, np.int32)
    top = int(present.max()) if present.size else 0
    if top <= 4 * ids.size + (1 << 20):
        lut = np.full(top + 1, fill, np.int32)
        lut[present] = codes
        return lut[ids]
    return np.asarray(codes, np.int32)[np.searchsorted(present, ids)]


def _read_trace(np, t, i, info, native):
    """The native columns of trace i, as numpy arrays (rows, damage message)."""
    lib = t.lib
    n = ctypes.c_uint64()
    if lib.dlprof_block_events(t.h, i, 0, info.blocks, ctypes.byref(n)) != _OK:
        raise RuntimeError("dlprof: " + _error(lib))
    arrays = {f: np.empty(n.value, dt) for f, dt in _NATIVE_COLUMNS if f in native}
    cols = _Columns(capacity=n.value)
    for f, a in arrays.items():
        setattr(cols, f, a.ctypes.data)
    rows = ctypes.c_size_t()
    st = lib.dlprof_read_events(t.h, i, 0, info.blocks, ctypes.byref(cols), ctypes.byref(rows))
    damage = None
    if st == _ERROR_DAMAGED:
        damage = _error(lib)
    elif st != _OK:
        raise RuntimeError("dlprof: " + _error(lib))
    return {f: a[:rows.value] for f, a in arrays.items()}, damage


def _seconds_ns(x):
    return None if x is None else int(round(float(x) * 1e9))


def read_events(path, *, run=None, columns=None, hosts=None, pids=None, ranks=None,
                time=None):
    """A pandas.DataFrame with a row per event of the traces under `path`.

    `path`: a trace file, a directory (every ``*.dlprof`` below it) or a list
    of them. `run`: the run (job) to read, by id; None: the latest, as
    dlprof-dump (with a warning naming the others, if any). `columns`: a subset of EVENT_COLUMNS (fewer columns decode
    faster). Rows come trace by trace, each trace's in the order stored
    (each thread's in the order its calls ended): ``sort_values("ts")`` for
    time order. Times are nanoseconds on the job's one time base, as in
    every output of dlprof-dump. fd, offset: -1 where the call has none;
    path: NaN where it has none. A damaged trace is decoded up to its damage,
    with a warning naming where.

    Filters, as dlprof-dump's options: `hosts`, `pids`, `ranks` (lists: keep
    events of these; --host, --pid, --rank), `time=(from_s, to_s)` (keep
    events starting in [from, to), seconds from the first event of the
    traces, either None for open; --from, --to). Traces of other hosts or
    pids are not decoded at all.
    """
    import numpy as np
    import pandas as pd

    wanted = list(EVENT_COLUMNS) if columns is None else list(columns)
    unknown = [c for c in wanted if c not in _NEEDS]
    if unknown:
        raise ValueError("dlprof: no such column: %s" % ", ".join(unknown))
    native = {"kind"}
    if ranks is not None:
        native.add("rank")
    t_from, t_to = (None, None) if time is None else (_seconds_ns(time[0]), _seconds_ns(time[1]))
    if t_from is not None or t_to is not None:
        native.add("start_ns")
    host_set = None if hosts is None else set(hosts)
    pid_set = None if pids is None else {int(p) for p in pids}
    rank_list = None if ranks is None else sorted({int(r) for r in ranks})
    for c in wanted:
        native.update(_NEEDS[c])

    hosts, names, paths, cats, kinds_cat = (_Strings() for _ in range(5))
    parts = []
    with _Traces(path, run) as t:
        kinds = _Kinds(t.lib)
        base = t.lib.dlprof_traces_first_ns(t.h)
        for i in range(t.count()):
            info = t.info(i)
            if not info.opened or info.blocks == 0:
                continue
            if host_set is not None and _text(info.host) not in host_set:
                continue
            if pid_set is not None and info.pid not in pid_set:
                continue
            cols, damage = _read_trace(np, t, i, info, native)
            if damage:
                warnings.warn("dlprof: " + damage, stacklevel=2)
            kind = cols["kind"]
            keep = kind != _CALL_STACK
            if rank_list is not None:
                keep &= np.isin(cols["rank"], rank_list)
            if t_from is not None or t_to is not None:
                start = cols["start_ns"]
                # An event before the base (out of order in a damaged file) is at 0.
                since = np.where(start > base, start - np.uint64(base), np.uint64(0))
                if t_from is not None:
                    keep &= since >= np.uint64(t_from)
                if t_to is not None:
                    keep &= since < np.uint64(t_to)
            if not keep.all():
                cols = {f: a[keep] for f, a in cols.items()}
                kind = cols["kind"]
            rows = kind.size
            if rows == 0:
                continue
            # Per kind met: its name, category, class, as small lookup tables.
            present = _present(np, kind)
            info_of = [kinds.get(int(k)) for k in present]
            named = np.array([c in ("cuda", "app") for _, c, _ in info_of], bool)
            klass = [k for _, _, k in info_of]
            part = {"_rows": rows}
            if "host" in wanted:
                part["host"] = np.full(rows, hosts.code(_text(info.host)), np.int32)
            if "pid" in wanted:
                part["pid"] = np.full(rows, info.pid, np.int32)
            if "cat" in wanted:
                part["cat"] = _lookup(np, kind, present, [cats.code(c) for _, c, _ in info_of])
            if "kind" in wanted:
                part["kind"] = _lookup(np, kind, present,
                                       [kinds_cat.code(n) for n, _, _ in info_of])
            is_named = _lookup(np, kind, present, named.astype(np.int32), 0).astype(bool) \
                if named.any() else None
            if "name" in wanted or "path" in wanted:
                f = cols["file"]
                ids = _present(np, f)
                strs = [t.string(i, int(s)) if s else None for s in ids]
                if "path" in wanted:
                    codes = _lookup(np, f, ids, [paths.code(s) if s is not None else -1
                                                 for s in strs])
                    if is_named is not None:
                        codes[is_named] = -1
                    part["path"] = codes
                if "name" in wanted:
                    codes = _lookup(np, kind, present, [names.code(n) for n, _, _ in info_of])
                    if is_named is not None:
                        by_file = _lookup(np, f, ids, [names.code(s) if s is not None else -1
                                                       for s in strs])
                        use = is_named & (by_file >= 0)
                        codes[use] = by_file[use]
                    part["name"] = codes
            if "tid" in wanted:
                tid = cols["tid"]
                # CUPTI delivers API records on its own thread; the caller's
                # tid is in offset (as dlprof-dump shows it).
                api = np.array([c == "cuda" and k == "api" for (_, c, _), k
                                in zip(info_of, klass)], np.int32)
                if api.any():
                    m = _lookup(np, kind, present, api, 0).astype(bool)
                    tid = tid.copy()
                    tid[m] = cols["offset"][m].astype(np.int32)
                part["tid"] = tid
            if "bytes" in wanted:
                # As dlprof-dump: POSIX reads and writes move max(ret, 0);
                # STDIO and MPI-IO ones aux; GPU copies and memsets size.
                how = np.array([1 if k in ("read", "write") and c == "posix" else
                                2 if k in ("read", "write") and c in ("stdio", "mpiio") else
                                3 if c == "cuda" and k in ("memcpy", "memset") else 0
                                for (_, c, _), k in zip(info_of, klass)], np.int32)
                h = _lookup(np, kind, present, how, 0)
                b = np.zeros(rows, np.int64)
                m = h == 1
                b[m] = np.maximum(cols["ret"][m], 0)
                m = h == 2
                b[m] = cols["aux"][m].view(np.int64)
                m = h == 3
                b[m] = cols["size"][m].view(np.int64)
                part["bytes"] = b
            direct = {"ts": "start_ns", "dur": "dur_ns", "rank": "rank", "fd": "fd",
                      "offset": "offset", "size": "size", "ret": "ret", "errno": "err"}
            for c, f in direct.items():
                if c in wanted:
                    a = cols[f]
                    part[c] = a.view(np.int64) if a.dtype == np.uint64 else a
            parts.append(part)

    dtypes = {"ts": np.int64, "dur": np.int64, "pid": np.int32, "tid": np.int32,
              "rank": np.int32, "fd": np.int32, "offset": np.int64, "size": np.int64,
              "bytes": np.int64, "ret": np.int64, "errno": np.int32}
    categories = {"host": hosts, "cat": cats, "kind": kinds_cat, "name": names,
                  "path": paths}
    data = {}
    for c in wanted:
        if parts:
            a = parts[0][c] if len(parts) == 1 else np.concatenate([p[c] for p in parts])
        else:
            a = np.empty(0, np.int32 if c in categories else dtypes[c])
        if c in categories:
            values = categories[c].values
            # Codes in the width pandas keeps them in: no conversion there.
            width = (np.int8 if len(values) < 127 else np.int16 if len(values) < 32767
                     else np.int32)
            data[c] = pd.Categorical.from_codes(
                a.astype(width, copy=False), dtype=pd.CategoricalDtype(values))
        else:
            data[c] = a
    # A dict in the wanted order (columns= would make pandas copy through objects).
    return pd.DataFrame(data, copy=False)


def read_processes(path, *, run=None):
    """A pandas.DataFrame with a row per trace (process) under `path`: host,
    pid, ppid, rank (-1: none), exe, trace (the file), events (announced by
    its blocks' headers), blocks, first_start (ns on the job's time base, -1:
    no event), process_start, file_bytes, opened (False: not a readable
    trace)."""
    import numpy as np
    import pandas as pd

    rows = []
    with _Traces(path, run) as t:
        for i in range(t.count()):
            info = t.info(i)
            first = info.first_start_ns
            rows.append((_text(info.host), info.pid, info.ppid, info.rank, _text(info.exe),
                         _text(info.path), info.events, info.blocks,
                         -1 if first == 0xFFFFFFFFFFFFFFFF else first,
                         info.process_start_ns, info.file_bytes, bool(info.opened)))
    names = ["host", "pid", "ppid", "rank", "exe", "trace", "events", "blocks",
             "first_start", "process_start", "file_bytes", "opened"]
    types = [None, np.int32, np.int32, np.int32, None, None, np.int64, np.int64,
             np.int64, np.int64, np.int64, bool]
    data = {}
    for k, (n, ty) in enumerate(zip(names, types)):
        col = [r[k] for r in rows]
        data[n] = (pd.Categorical(col) if n == "host" else
                   np.array(col, dtype=object) if ty is None else np.array(col, dtype=ty))
    return pd.DataFrame(data, columns=names)


def summary(path, *, run=None):
    """The summary of the traces under `path` as a dict: what
    ``dlprof-dump --summary --format json PATH`` prints, parsed. Damaged
    input is summarised up to the damage, with a warning."""
    with _Traces(path, run) as t:
        lib = t.lib
        s = _P()
        st = lib.dlprof_summarize(t.h, ctypes.byref(s))
        if st == _ERROR_DAMAGED:
            warnings.warn("dlprof: " + _error(lib), stacklevel=2)
        elif st != _OK:
            raise RuntimeError("dlprof: " + _error(lib))
        try:
            text = _P()
            n = ctypes.c_size_t()
            if lib.dlprof_summary_json(s, ctypes.byref(text), ctypes.byref(n)) != _OK:
                raise RuntimeError("dlprof: " + _error(lib))
            try:
                raw = ctypes.string_at(text, n.value)
            finally:
                lib.dlprof_free(text)
        finally:
            lib.dlprof_summary_free(s)
    return json.loads(raw)
