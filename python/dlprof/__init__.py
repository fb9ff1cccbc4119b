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
import inspect
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


# The regions this package opened on each thread and has not ended,
# innermost last: the runtime's stack of the thread holds them in the same
# order (dlprof_region_end ends the innermost), so that a region can be
# ended by its entry -- the one its opener began, not whichever is
# innermost (two annotate_loaders in a zip, two coroutines awaited
# together). A `with` pushes its region object (the same object entered
# again, recursively, is found innermost first), the other openers a token
# of their own. One attribute of a plain threading.local: a
# with-block costs about what it did when it ended the innermost.
_open = threading.local()


def _stack():
    try:
        return _open.stack
    except AttributeError:
        _open.stack = stack = []
        return stack


def _open_region(name, entry=None):
    """Begins region `name` (encoded) on the calling thread as `entry` (a
    new token where None); the entry."""
    if entry is None:
        entry = object()
    _begin(name)
    _stack().append(entry)
    return entry


def _close_region(entry):
    """Ends the region of `entry` on the calling thread, and first every
    region this package opened inside it and left open: a region cannot
    outlive the one that holds it, so they end there (and their own ends
    later do nothing). Nothing where the region is ended already, or is
    another thread's (a thread cannot end another's regions: the region
    entered there ends with the one around it there)."""
    stack = _stack()
    if stack and stack[-1] is entry:
        stack.pop()
        _end()
        return
    for k in range(len(stack) - 2, -1, -1):
        if stack[k] is entry:
            for _ in range(len(stack) - k):
                _end()
            del stack[k:]
            return


def begin(name, **attrs):
    """Opens a region on the calling thread (pair it with end())."""
    if _begin is not None:
        _open_region(_encode(_full_name(name, attrs)))


def end():
    """Closes the calling thread's innermost open region."""
    if _end is not None:
        stack = _stack()
        if stack:
            stack.pop()
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
    closed when it returns or raises). On a generator function, a region
    for each resumption (each next(), send() or throw() until it returns):
    the generator's own work; between two, its consumer runs, whose time
    and regions are the consumer's (one region over the generator's life
    would hold them and cross them). On an ``async def``, one region from
    the coroutine's start to its end, on the thread it started on: the
    time its caller awaited it, which is mostly time it awaited others,
    not its few microseconds of resumptions; on an async generator, a
    region for each resumption, its awaits in it. Coroutines awaited together
    on one thread overlap without nesting: the first to end ends those
    begun after it (they end there, their later end does nothing).
    Regions may be nested and reused.
    """

    __slots__ = ("_name",)

    def __init__(self, name, **attrs):
        self._name = _encode(_full_name(name, attrs))

    def __enter__(self):
        if _begin is not None:
            _open_region(self._name, self)
        return self

    def __exit__(self, exc_type, exc, tb):
        if _end is not None:
            _close_region(self)  # its own region, whatever opened since
        return False

    def __call__(self, fn):
        name = self._name
        if inspect.isgeneratorfunction(fn):
            return _region_generator(fn, name)
        if inspect.iscoroutinefunction(fn):
            return _region_coroutine(fn, name)
        if inspect.isasyncgenfunction(fn):
            return _region_async_generator(fn, name)

        # One entry for every call (a recursive call's is found innermost
        # first, as a `with` of one region object): no token a call.
        entry = object()

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _begin is None:
                return fn(*args, **kwargs)
            _open_region(name, entry)
            try:
                return fn(*args, **kwargs)
            finally:
                _close_region(entry)

        return wrapper


def _region_generator(fn, name):
    """@region on a generator function: a region around each resumption."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        if _begin is None:
            return (yield from gen)
        value, thrown = None, None
        while True:
            token = _open_region(name)
            try:
                out = gen.send(value) if thrown is None else gen.throw(thrown)
            except StopIteration as stop:
                return stop.value
            finally:
                _close_region(token)
                thrown = None
            try:
                value = yield out
            except GeneratorExit:
                token = _open_region(name)  # its finally blocks run in it
                try:
                    gen.close()
                finally:
                    _close_region(token)
                raise
            except BaseException as e:  # (thrown in: passed on, in its region)
                thrown, value = e, None

    return wrapper


def _region_coroutine(fn, name):
    """@region on an async def: a region from its start to its end."""

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        if _begin is None:
            return await fn(*args, **kwargs)
        token = _open_region(name)
        try:
            return await fn(*args, **kwargs)
        finally:
            _close_region(token)

    return wrapper


def _region_async_generator(fn, name):
    """@region on an async generator function: a region around each
    resumption (each __anext__, asend() or athrow() until it is over), its
    awaits in it, as a coroutine's."""

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        agen = fn(*args, **kwargs)
        value, thrown = None, None
        while True:
            token = _open_region(name) if _begin is not None else None
            try:
                out = await (agen.asend(value) if thrown is None else agen.athrow(thrown))
            except StopAsyncIteration:
                return
            finally:
                if token is not None:
                    _close_region(token)
                thrown = None
            try:
                value = yield out
            except GeneratorExit:
                token = _open_region(name) if _begin is not None else None
                try:
                    await agen.aclose()
                finally:
                    if token is not None:
                        _close_region(token)
                raise
            except BaseException as e:  # (thrown in: passed on, in its region)
                thrown, value = e, None

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
