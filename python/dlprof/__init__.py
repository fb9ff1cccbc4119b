"""dlprof annotations for Python.

Names the phases of a training job so that ``dlprof-dump --summary`` breaks
I/O time, bytes and data-stall time down by them::

    import dlprof

    for epoch in range(epochs):
        with dlprof.region("epoch", epoch=epoch):       # region "epoch epoch=3"
            for batch in dlprof.annotate_loader(loader):  # "load_batch" + "step"
                train_step(batch)

    @dlprof.region("save_checkpoint")
    def save(model): ...

    dlprof.mark("eval done")
    dlprof.counter("samples", n)
    dlprof.flow_start("req", 7)   # an arrow from here ...
    dlprof.flow_finish("req", 7)  # ... to here (any thread or process, same host)

The module talks to the dlprof runtime (``libdlprof.so``) that ``dlprof run``
or ``LD_PRELOAD`` loaded into the process, through ctypes. Without it every
function is a cheap no-op, so annotated code runs unchanged without dlprof.
Pure Python, no dependencies; PyTorch is only needed for what you pass in.

Traces can be read back as pandas DataFrames: ``dlprof.read_events(path)``,
``dlprof.read_processes(path)``, ``dlprof.read_regions(path)``,
``dlprof.summary(path)``, ``dlprof.compare(before, after)`` (dlprof/traces.py; with Dask: dlprof/dask.py;
docs/PYTHON.md). They load numpy, pandas and the reader library when first
called, so ``import dlprof`` stays cheap and needs neither.

Regions nest per thread and end in the reverse order they began. Each region
is recorded when it ends, with its nesting depth. Attributes given as keyword
arguments are folded into the name (``region("step", epoch=1, batch=7)`` is
the region ``"step epoch=1 batch=7"``): every distinct name is a row of the
per-region summary, so keep attributes coarse (an epoch, not a sample id).
"""

import ctypes
import functools
import numbers
import sys
import threading
import weakref

from . import _env
from ._loader_numbers import _LoaderNumbers

__all__ = [
    "active", "region", "begin", "end", "mark", "counter", "flow_start", "flow_finish",
    "annotate_loader", "AnnotatedLoader", "available",
    "read_events", "read_processes", "summary", "compare", "read_counters", "read_kept_windows",
    "read_whole_run", "read_whole_run_points",
]

__version__ = "0.1.0"


def _load():
    """The exported annotation functions of a loaded libdlprof.so, or None."""
    if _env.flag("DLPROF_PYTHON_DISABLE", False):
        return None
    try:
        # The process's global symbols, preloads included. PyDLL keeps the
        # interpreter lock over each call (they only append to a ring):
        # CDLL gave it up, and with another thread runnable (a DataLoader
        # worker's feeder, a pin-memory thread) each call waited up to the
        # switch interval to get it back, inside the region it recorded.
        lib = ctypes.PyDLL(None)
        fns = {
            "begin": lib.dlprof_region_begin,
            "end": lib.dlprof_region_end,
            "mark": lib.dlprof_mark,
            "counter": lib.dlprof_counter,
            "counter_double": lib.dlprof_counter_double,
            "active": lib.dlprof_active,
        }
    except (OSError, AttributeError):
        return None
    fns["begin"].argtypes = [ctypes.c_char_p]
    fns["begin"].restype = None
    fns["end"].argtypes = []
    fns["end"].restype = None
    fns["mark"].argtypes = [ctypes.c_char_p]
    fns["mark"].restype = None
    fns["counter"].argtypes = [ctypes.c_char_p, ctypes.c_int64]
    fns["counter"].restype = None
    fns["counter_double"].argtypes = [ctypes.c_char_p, ctypes.c_double]
    fns["counter_double"].restype = None
    fns["active"].argtypes = []
    fns["active"].restype = ctypes.c_int
    # Flows came with annotation API version 2: a runtime without them keeps
    # the rest, and flow_start/flow_finish do nothing.
    for key, symbol in (("flow_start", "dlprof_flow_start"),
                        ("flow_finish", "dlprof_flow_finish")):
        try:
            fn = getattr(lib, symbol)
        except AttributeError:
            continue
        fn.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
        fn.restype = None
        fns[key] = fn
    return fns


_lib = _load()
_begin = _lib["begin"] if _lib else None
_end = _lib["end"] if _lib else None
_flow_start = _lib.get("flow_start") if _lib else None
_flow_finish = _lib.get("flow_finish") if _lib else None

# Names already encoded, so a hot loop does not re-encode its region names.
_encoded = {}
_encoded_lock = threading.Lock()
_MAX_CACHED_NAMES = 4096
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1

# The zero-code instrumentation of PyTorch (dlprof/_torch.py, loaded by the
# bootstrap dlprof-python/sitecustomize.py) checks for this marker, and
# leaves alone what annotate_loader records itself: iter(loader) called with
# _explicit.on set makes an iterator it never records, and nothing is
# recorded while _explicit.fetching (the wrapped iterable's next() within
# annotate_loader's own load_batch: a generator over a DataLoader).
_AUTO_TORCH = True
_explicit = threading.local()
_explicit_iters = weakref.WeakSet()
# Imported after the bootstrap loaded its copy of this package (torch first,
# this one put on sys.path later): the copy's hooks read its markers, which
# this package's annotate_loader then sets.
_copy = sys.modules.get("_dlprof_bootstrap")
if _copy is not None and hasattr(_copy, "_explicit_iters"):
    _explicit, _explicit_iters = _copy._explicit, _copy._explicit_iters


# One numbering of the loaders for annotate_loader and the bootstrap (the
# copy's, where the bootstrap loaded one).
_loader_number = getattr(_copy, "_loader_number", None) or _LoaderNumbers()


def available():
    """True when the dlprof runtime is loaded in this process."""
    return _lib is not None


def active():
    """True when annotations are being recorded (runtime loaded and running,
    with the ``app`` module of DLPROF_TRACE)."""
    return bool(_lib and _lib["active"]())


def _encode(name):
    b = _encoded.get(name)
    if b is None:
        b = name.encode("utf-8", "replace") if isinstance(name, str) else bytes(name)
        if len(_encoded) < _MAX_CACHED_NAMES:
            with _encoded_lock:
                _encoded[name] = b
    return b


def _full_name(name, attrs):
    # (bytes are a name's bytes, not "b'...'")
    text = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
    if not attrs:
        return text
    return text + "".join(" %s=%s" % (k, v) for k, v in attrs.items())


def begin(name, **attrs):
    """Opens a region on the calling thread (pair it with end())."""
    if _begin is not None:
        _begin(_encode(_full_name(name, attrs)))


def end():
    """Closes the calling thread's innermost open region."""
    if _end is not None:
        _end()


def mark(name, **attrs):
    """An instant event."""
    if _lib is not None:
        _lib["mark"](_encode(_full_name(name, attrs)))


def counter(name, value):
    """A sample of a named counter: an integer (a numpy one too) that fits
    in 64 bits signed is stored exactly, anything else as a double (an
    integer beyond it wrapped around: 2**63 was -2**63)."""
    if _lib is None:
        return
    if isinstance(value, numbers.Integral) and _I64_MIN <= int(value) <= _I64_MAX:
        _lib["counter"](_encode(str(name)), int(value))
    else:
        _lib["counter_double"](_encode(str(name)), float(value))


def flow_start(name, id):
    """Where flow ``id`` (an unsigned 64-bit int) of ``name`` starts: the
    timelines draw an arrow from here to the flow_finish of the same name and
    id, in any thread or process of the same host."""
    if _flow_start is not None:
        _flow_start(_encode(str(name)), int(id) & _U64)


def flow_finish(name, id):
    """Where flow ``id`` of ``name`` ends (see flow_start)."""
    if _flow_finish is not None:
        _flow_finish(_encode(str(name)), int(id) & _U64)


_U64 = (1 << 64) - 1


class region:
    """A region as a context manager or a decorator.

        with dlprof.region("epoch", epoch=3):
            ...

        @dlprof.region("load_batch")
        def load_batch(...): ...

    As a decorator the region is opened on every call of the function (and
    closed when it returns or raises). Regions may be nested and reused.
    """

    __slots__ = ("_name",)

    def __init__(self, name, **attrs):
        self._name = _encode(_full_name(name, attrs))

    def __enter__(self):
        if _begin is not None:
            _begin(self._name)
        return self

    def __exit__(self, exc_type, exc, tb):
        if _end is not None:
            _end()
        return False

    def __call__(self, fn):
        name = self._name

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _begin is None:
                return fn(*args, **kwargs)
            _begin(name)
            try:
                return fn(*args, **kwargs)
            finally:
                _end()

        return wrapper


# annotate_loader and its batch flows (dlprof/_annotate_loader.py), which
# take the names above from this package: imported once they are defined.
# Its private names too, so that each dlprof.<name> is what it was.
from ._annotate_loader import (  # noqa: E402,F401
    _BATCH_FLOW, _FETCH_REGION, _ITER_CALLS, _LOAD_BATCH, _LOADER_ITER, AnnotatedLoader,
    _BatchIndices, _BatchIter, _fetch_iter, _finish_batch_flow, _FlowBatchSampler, _loader_iter,
    _loader_iter_flows, annotate_loader)


# The trace-reading API (dlprof/traces.py), loaded on first use.
_TRACE_API = ("read_events", "read_processes", "read_regions", "summary", "compare",
              "read_whole_run", "read_whole_run_points")
_COUNTERS_API = ("read_counters", "read_kept_windows")


def __getattr__(name):
    if name in _TRACE_API:
        from . import traces
        return getattr(traces, name)
    if name in _COUNTERS_API:  # bounded traces' counters (dlprof/counters.py)
        from . import counters
        return getattr(counters, name)
    if name == "dask":  # dlprof.dask.read_events, dlprof.dask.summary (needs dask)
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError("module 'dlprof' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | set(_TRACE_API) | set(_COUNTERS_API) | {"dask"})
