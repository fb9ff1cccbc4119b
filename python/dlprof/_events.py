"""Events of a range of a trace's blocks into numpy columns, and columns into
a pandas DataFrame: the part of read_events that dlprof.traces (a whole
input) and dlprof.dask (a partition per trace or block range) share.

The native reader fills one numpy array per native field (dlprof_columns);
what each output column means is then worked out per kind code met and per
distinct string id, never per event in Python: small lookup tables indexed
by the native arrays.
"""

import ctypes
import numbers
import warnings

from . import _native as nv

# The columns of read_events, in order. The first 18 are every event's; the
# rest say more of GPU and app events and of asynchronous requests (-1 or
# NaN where they do not apply).
EVENT_COLUMNS = ("ts", "dur", "host", "pid", "tid", "rank", "cat", "kind", "op", "name",
                 "path", "fd", "offset", "size", "bytes", "ret", "errno", "nested",
                 "device", "stream", "correlation", "kernel", "copy", "config",
                 "depth", "value", "flow", "submit_tid", "reaped", "value_int")

# The native fields each output column needs.
NEEDS = {
    "ts": ("start_ns",), "dur": ("dur_ns",), "host": (), "pid": (),
    "tid": ("tid", "kind", "offset"), "rank": ("rank",), "cat": ("kind",),
    "kind": ("kind",), "op": ("kind",), "name": ("kind", "file"), "path": ("kind", "file"),
    "fd": ("fd",), "offset": ("offset",), "size": ("size",),
    "bytes": ("kind", "ret", "aux", "size"), "ret": ("ret",), "errno": ("err",),
    "nested": ("flags",),
    "device": ("kind", "fd"), "stream": ("kind", "offset"), "correlation": ("kind", "aux"),
    "kernel": ("kind", "file"), "copy": ("kind", "file"), "config": ("kind", "ret"),
    "depth": ("kind", "aux"), "value": ("kind", "aux", "ret"), "flow": ("kind", "aux"),
    "submit_tid": ("kind", "aux"), "reaped": ("kind", "aux", "start_ns", "dur_ns"),
    "value_int": ("kind", "aux", "ret"),
}

CATEGORICAL = ("host", "cat", "kind", "op", "name", "path", "kernel", "copy", "config")
NESTED_FLAG = 1  # kEventFlagNested (dlprof/format.h)

# The dtypes of the columns that are no category.
DTYPES = {"ts": "int64", "dur": "int64", "pid": "int32", "tid": "int32",
          "rank": "int32", "fd": "int32", "offset": "int64", "size": "int64",
          "bytes": "int64", "ret": "int64", "errno": "int32", "nested": "bool",
          "device": "int32", "stream": "int64", "correlation": "int64", "depth": "int32",
          "value": "float64", "flow": "int64", "submit_tid": "int32", "reaped": "int64",
          "value_int": "int64"}
# Output columns that are a native field as it is (uint64 viewed as int64).
DIRECT = {"ts": "start_ns", "dur": "dur_ns", "rank": "rank", "fd": "fd",
          "offset": "offset", "size": "size", "ret": "ret", "errno": "err"}


class Spec:
    """What to read: columns and the filters of dlprof-dump's options."""

    def __init__(self, columns=None, hosts=None, pids=None, ranks=None, time=None):
        self.wanted = list(EVENT_COLUMNS) if columns is None else _values(columns)
        unknown = [c for c in self.wanted if c not in NEEDS]
        if unknown:
            raise ValueError("dlprof: no such column: %s" % ", ".join(map(str, unknown)))
        self.native = {"kind"}
        for c in self.wanted:
            self.native.update(NEEDS[c])
        self.hosts = None if hosts is None else set(_values(hosts))
        self.pids = None if pids is None else {_integer(p, "pids") for p in _values(pids)}
        self.ranks = None if ranks is None else \
            sorted({_integer(r, "ranks") for r in _values(ranks)})
        if self.ranks is not None:
            self.native.add("rank")
        self.t_from, self.t_to = _time_range(time)
        if self.t_from is not None or self.t_to is not None:
            self.native.add("start_ns")
        # Where `time` counts from: the first event of the handle's traces,
        # unless set (a Dask partition reading one trace of many).
        self.base = None

    def keeps_trace(self, info):
        """False when the trace's host or pid is filtered out (not decoded)."""
        # A trace without a whole block is read too: its damage (a torn
        # first block, its events lost) is warned about as any other.
        if not info.opened:
            return False
        if self.hosts is not None and nv.text(info.host) not in self.hosts:
            return False
        return self.pids is None or info.pid in self.pids


def _values(x):
    """A filter's values as a list: one str (a host, a column) or integer
    (a pid, a rank) is one value -- set("vm") was {'v', 'm'}, and 27919 not
    iterable -- else any iterable of them."""
    if isinstance(x, (str, bytes, numbers.Integral)):
        return [x]
    return list(x)


def _integer(x, what):
    """An integer filter value (a numpy one too); 2.5 or "12" are refused,
    not truncated or parsed."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError("dlprof: %s takes integers: not %r" % (what, x))
    return int(x)


def _time_range(time):
    """(from_ns, to_ns) of time=(from_s, to_s): exactly two values, from not
    after to. An empty window is refused rather than read as no event
    (dlprof-dump --from 2 --to 1 only notes that nothing matched)."""
    if time is None:
        return None, None
    if isinstance(time, (str, bytes)) or len(time) != 2:
        raise ValueError("dlprof: time=(from_s, to_s) takes two values (None: open), "
                         "not %r" % (time,))
    lo, hi = _seconds_ns(time[0]), _seconds_ns(time[1])
    if lo is not None and hi is not None and lo > hi:
        raise ValueError("dlprof: time=(from_s, to_s) ends before it starts: %r" % (time,))
    return lo, hi


def _seconds_ns(x):
    """Seconds from the first event as ns; refused when negative (nothing
    starts before the first event: dlprof-dump refuses --from -1 too)."""
    if x is None:
        return None
    s = float(x)
    if not s >= 0:  # (NaN too)
        raise ValueError("dlprof: time=(from_s, to_s) counts seconds from the first event, "
                         "0 or more: not %r" % (x,))
    return None if s == float("inf") else int(round(s * 1e9))  # inf: open


def new_tables():
    """The categories of the categorical columns, shared by the parts of one frame."""
    return {c: nv.Strings() for c in CATEGORICAL}


def _decode(np, t, i, first, count, native):
    """The native fields of blocks [first, first + count) of trace i as numpy
    arrays, and the damage message (None if clean)."""
    lib = t.lib
    n = ctypes.c_uint64()
    if lib.dlprof_block_events(t.h, i, first, count, ctypes.byref(n)) != nv.OK:
        raise RuntimeError("dlprof: " + nv.error(lib))
    arrays = {f: np.empty(n.value, dt) for f, dt in nv.NATIVE_COLUMNS if f in native}
    cols = nv.Columns(capacity=n.value)
    for f, a in arrays.items():
        setattr(cols, f, a.ctypes.data)
    rows = ctypes.c_size_t()
    st = lib.dlprof_read_events(t.h, i, first, count, ctypes.byref(cols), ctypes.byref(rows))
    damage = None
    if st == nv.ERROR_DAMAGED:
        damage = nv.error(lib)
    elif st != nv.OK:
        raise RuntimeError("dlprof: " + nv.error(lib))
    return {f: a[:rows.value] for f, a in arrays.items()}, damage


def _strings(t, i, ids, first):
    """The strings of `ids` in trace i. A range that starts past block 0 may
    use strings an earlier block defined: those blocks are decoded (into no
    column) until every id is known."""
    out = [t.string(i, int(s)) if s else None for s in ids]
    missing = [k for k, s in enumerate(ids) if s and out[k] is None]
    b = 0
    none = nv.Columns(capacity=1 << 62)  # every array null: strings only
    rows = ctypes.c_size_t()
    while missing and b < first:
        t.lib.dlprof_read_events(t.h, i, b, 1, ctypes.byref(none), ctypes.byref(rows))
        b += 1
        for k in missing:
            out[k] = t.string(i, int(ids[k]))
        missing = [k for k in missing if out[k] is None]
    return out


def read_part(np, t, i, info, first, count, spec, tables, kinds, stacklevel=3):
    """The columns of the events of blocks [first, first + count) of trace i
    that `spec` keeps: a dict column -> numpy array (categorical columns as
    int32 codes into `tables`), or None when no event is kept. A damaged
    block is skipped with a warning."""
    cols, damage = _decode(np, t, i, first, count, spec.native)
    if damage:
        warnings.warn("dlprof: " + damage, stacklevel=stacklevel)
    kind = cols["kind"]
    keep = kind != nv.CALL_STACK
    if spec.ranks is not None:
        keep &= np.isin(cols["rank"], spec.ranks)
    if spec.t_from is not None or spec.t_to is not None:
        base = spec.base if spec.base is not None else t.lib.dlprof_traces_first_ns(t.h)
        start = cols["start_ns"]
        # An event before the base (out of order in a damaged file) is at 0.
        since = np.where(start > base, start - np.uint64(base), np.uint64(0))
        if spec.t_from is not None:
            keep &= since >= np.uint64(spec.t_from)
        if spec.t_to is not None:
            keep &= since < np.uint64(spec.t_to)
    if not keep.all():
        cols = {f: a[keep] for f, a in cols.items()}
        kind = cols["kind"]
    rows = kind.size
    if rows == 0:
        return None
    wanted = spec.wanted
    # Per kind met: its name, category, class and rules (nv.Kind), as small
    # lookup tables.
    present = nv.present(np, kind)
    info_of = [kinds.get(int(k)) for k in present]

    def per_kind(values, fill=0):
        """values[k] (one per kind met) for each row."""
        if len(set(values)) == 1:  # one kind, or all alike: no table needed
            return np.full(rows, values[0], np.int32)
        return nv.lookup(np, kind, present, values, fill)

    def kinds_where(test):
        """Rows whose kind passes test(kind), or None if no kind does."""
        flags = [1 if test(k) else 0 for k in info_of]
        return per_kind(flags).astype(bool) if any(flags) else None

    part = {"_rows": rows}
    if "host" in wanted:
        part["host"] = np.full(rows, tables["host"].code(nv.text(info.host)), np.int32)
    if "pid" in wanted:
        part["pid"] = np.full(rows, info.pid, np.int32)
    if "cat" in wanted:
        part["cat"] = per_kind([tables["cat"].code(k.cat) for k in info_of])
    if "kind" in wanted:
        part["kind"] = per_kind([tables["kind"].code(k.name) for k in info_of])
    if "op" in wanted:  # the kind's class: read, write, open, meta, kernel, region...
        part["op"] = per_kind([tables["op"].code(k.op) if k.op else -1 for k in info_of])
    named = kinds_where(lambda k: k.traits & nv.KIND_NAMED)
    if any(c in wanted for c in ("name", "path", "kernel", "copy")):
        f = cols["file"]
        ids = nv.present(np, f)
        strs = _strings(t, i, ids, first)

        def by_file(table, of=lambda s: s):
            return nv.lookup(np, f, ids, [table.code(of(s)) if s is not None else -1
                                          for s in strs])
        if "path" in wanted:
            codes = by_file(tables["path"])
            if named is not None:
                codes[named] = -1
            part["path"] = codes
        if "name" in wanted:
            codes = per_kind([tables["name"].code(k.name) for k in info_of])
            if named is not None:
                file_name = by_file(tables["name"])
                use = named & (file_name >= 0)
                codes[use] = file_name[use]
            part["name"] = codes
        for col, klass, of in (("kernel", "kernel", lambda s: s),
                               ("copy", "memcpy", lambda s: s.split(" ", 1)[-1])):
            if col in wanted:
                rows_of = kinds_where(lambda k: k.cat == "cuda" and k.op == klass)
                codes = np.full(rows, -1, np.int32)
                if rows_of is not None:
                    codes[rows_of] = by_file(tables[col], of)[rows_of]
                part[col] = codes
    if "config" in wanted:
        # Kernels, copies and memsets: ret is the string id of their configuration.
        codes = np.full(rows, -1, np.int32)
        rows_of = kinds_where(lambda k: k.traits & nv.KIND_CONFIG)
        if rows_of is not None:
            ret = cols["ret"]
            rows_of &= ret > 0
            ids = nv.present(np, ret[rows_of].astype(np.uint32))
            strs = _strings(t, i, ids, first)
            conf = nv.lookup(np, ret[rows_of].astype(np.uint32), ids,
                             [tables["config"].code(s) if s is not None else -1 for s in strs])
            codes[rows_of] = conf
        part["config"] = codes
    if "tid" in wanted:
        tid = cols["tid"]
        # CUPTI delivers API records on its own thread; the caller's tid is in
        # offset (as jsonl shows it).
        api = kinds_where(lambda k: k.thread == nv.THREAD_CALLER)
        if api is not None:
            tid = tid.copy()
            tid[api] = cols["offset"][api].astype(np.int32)
        part["tid"] = tid
    if "bytes" in wanted:
        # Where the kind's rules put the bytes moved: max(ret, 0), aux or size.
        how_of = [k.bytes for k in info_of]

        def moved(code, rows_of=slice(None)):
            if code == nv.BYTES_RET:
                return np.maximum(cols["ret"][rows_of], 0)
            return cols["aux" if code == nv.BYTES_AUX else "size"][rows_of].view(np.int64)
        if set(how_of) == {nv.BYTES_NONE}:
            b = np.zeros(rows, np.int64)
        elif len(set(how_of)) == 1:  # every row the same way: no mask
            b = moved(how_of[0])
        else:
            how = per_kind(how_of)
            b = np.zeros(rows, np.int64)
            for code in set(how_of) - {nv.BYTES_NONE}:
                m = how == code
                b[m] = moved(code, m)
        part["bytes"] = b
    # GPU work (kernels, copies, memsets, syncs): fd is the device, offset the
    # stream, aux the correlation id; API records have the correlation only
    # (the clock record, class "other", none: docs/CUDA.md).
    work = kinds_where(lambda k: k.thread == nv.THREAD_STREAM)
    correlated = kinds_where(lambda k: k.thread == nv.THREAD_STREAM or k.traits & nv.KIND_GPU_API)
    for col, src, dtype, rows_of in (("device", "fd", np.int32, work),
                                     ("stream", "offset", np.int64, work),
                                     ("correlation", "aux", np.int64, correlated)):
        if col in wanted:
            a = np.full(rows, -1, dtype)
            if rows_of is not None:
                v = cols[src][rows_of]
                a[rows_of] = v.view(np.int64) if v.dtype == np.uint64 else v.astype(dtype)
            part[col] = a
    if "depth" in wanted:
        a = np.full(rows, -1, np.int32)
        rows_of = kinds_where(lambda k: k.cat == "app" and k.op == "region")
        if rows_of is not None:
            a[rows_of] = cols["aux"][rows_of].view(np.int64).astype(np.int32)
        part["depth"] = a
    if "value" in wanted:
        # A counter's aux is an int64 (dlprof.counter of an int), or with ret
        # 1 the bits of a double (of a float): float64 for every row, so
        # that the column is one number whatever each sample was (and one
        # dtype in every part and Dask partition).
        a = np.zeros(rows, np.float64)
        rows_of = kinds_where(lambda k: k.cat == "app" and k.op == "counter")
        if rows_of is not None:
            aux = cols["aux"][rows_of]
            is_double = cols["ret"][rows_of] == 1
            a[rows_of] = np.where(is_double, aux.view(np.float64),
                                  aux.view(np.int64).astype(np.float64))
        part["value"] = a
    if "value_int" in wanted:
        # An integer counter's value exactly (float64 holds 53 bits: the
        # bootstrap's batch_sent flow ids are 64); 0 for a float's sample
        # and elsewhere.
        a = np.zeros(rows, np.int64)
        rows_of = kinds_where(lambda k: k.cat == "app" and k.op == "counter")
        if rows_of is not None:
            aux = cols["aux"][rows_of].view(np.int64)
            a[rows_of] = np.where(cols["ret"][rows_of] == 1, 0, aux)
        part["value_int"] = a
    if "nested" in wanted:
        # Made while another traced call of the thread was in progress (the
        # pread of an MPI_File_read_at; the read a stream of the program's
        # own makes inside fread): jsonl's nested.
        part["nested"] = (cols["flags"] & NESTED_FLAG) != 0
    if "flow" in wanted:
        # dlprof.flow_start and flow_finish: aux is the flow's id (a u64, as
        # jsonl's flow; 2^63 and above read negative, as correlation ids).
        a = np.full(rows, -1, np.int64)
        rows_of = kinds_where(lambda k: k.traits & (nv.KIND_FLOW_START | nv.KIND_FLOW_FINISH))
        if rows_of is not None:
            a[rows_of] = cols["aux"][rows_of].view(np.int64)
        part["flow"] = a
    if "submit_tid" in wanted or "reaped" in wanted:
        # Asynchronous requests (io_uring, Linux and POSIX AIO): aux packs the
        # thread that submitted it (bits 40-61) and how long after its
        # completion it was reaped, in microseconds (bits 0-31); `tid` is the
        # thread that reaped it (docs/FORMAT_EVENTS.md, "Asynchronous requests").
        rows_of = kinds_where(lambda k: k.traits & nv.KIND_ASYNC)
        aux = cols["aux"]
        if "submit_tid" in wanted:
            a = np.full(rows, -1, np.int32)
            if rows_of is not None:
                a[rows_of] = ((aux[rows_of] >> np.uint64(40)) & np.uint64(0x3FFFFF)).astype(np.int32)
            part["submit_tid"] = a
        if "reaped" in wanted:
            a = np.full(rows, -1, np.int64)
            if rows_of is not None:
                after = (aux[rows_of] & np.uint64(0xFFFFFFFF)) * np.uint64(1000)
                a[rows_of] = (cols["start_ns"][rows_of] + cols["dur_ns"][rows_of]
                              + after).view(np.int64)
            part["reaped"] = a
    for c, f in DIRECT.items():
        if c in wanted:
            a = cols[f]
            part[c] = a.view(np.int64) if a.dtype == np.uint64 else a
    return part


class Collector:
    """The parts of one frame, gathered as they come. A single part is kept as
    it is; from the second on, parts are copied into one array per column
    sized for the events the traces announce, and dropped: peak memory is
    the frame and one part, not every part and their concatenation."""

    def __init__(self, np, announced):
        self.np = np
        self.announced = announced
        self.first = None
        self.out = None
        self.rows = 0

    def add(self, part):
        if self.first is None and self.out is None:
            self.first = part
            return
        if self.out is None:
            first, self.first = self.first, None
            size = max(self.announced, first["_rows"] + part["_rows"])
            self.out = {c: self.np.empty(size, a.dtype) for c, a in first.items() if c != "_rows"}
            self._put(first)
        self._put(part)

    def _put(self, part):
        rows = part["_rows"]
        if self.rows + rows > len(next(iter(self.out.values()), ())):
            # More than announced (never expected): grow.
            grown = 2 * (self.rows + rows)
            for c, a in self.out.items():
                b = self.np.empty(grown, a.dtype)
                b[:self.rows] = a[:self.rows]
                self.out[c] = b
        for c, a in part.items():
            if c != "_rows":
                self.out[c][self.rows:self.rows + rows] = a
        self.rows += rows

    def parts(self):
        """The parts for frame(): none, the single one, or the gathered arrays."""
        if self.out is None:
            return [] if self.first is None else [self.first]
        size = len(next(iter(self.out.values()), ()))
        # Filters left much of the room unused: give it back.
        trim = (lambda a: a[:self.rows].copy()) if self.rows < 0.75 * size else \
            (lambda a: a[:self.rows])
        return [dict({c: trim(a) for c, a in self.out.items()}, _rows=self.rows)]


def frame(np, pd, parts, wanted, tables):
    """The DataFrame of `parts` (read_part's), columns in `wanted`'s order."""
    data = {}
    for c in wanted:
        if parts:
            a = parts[0][c] if len(parts) == 1 else np.concatenate([p[c] for p in parts])
        else:
            a = np.empty(0, np.int32 if c in CATEGORICAL else DTYPES[c])
        data[c] = nv.categorical(np, pd, a, tables[c]) if c in CATEGORICAL else a
    # A dict in the wanted order (columns= would make pandas copy through objects).
    return pd.DataFrame(data, copy=False)
