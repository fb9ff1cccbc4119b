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

The module talks to the dlprof runtime (``libdlprof.so``) that ``dlprof run``
or ``LD_PRELOAD`` loaded into the process, through ctypes. Without it every
function is a cheap no-op, so annotated code runs unchanged without dlprof.
Pure Python, no dependencies; PyTorch is only needed for what you pass in.

Traces can be read back as pandas DataFrames: ``dlprof.read_events(path)``,
``dlprof.read_processes(path)``, ``dlprof.read_regions(path)``,
``dlprof.summary(path)`` (dlprof/traces.py; with Dask: dlprof/dask.py;
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
import os
import threading

__all__ = [
    "active", "region", "begin", "end", "mark", "counter",
    "annotate_loader", "AnnotatedLoader", "available",
    "read_events", "read_processes", "summary",
]

__version__ = "0.1.0"


def _load():
    """The exported annotation functions of a loaded libdlprof.so, or None."""
    if os.environ.get("DLPROF_PYTHON_DISABLE") == "1":
        return None
    try:
        lib = ctypes.CDLL(None)  # the process's global symbols, preloads included
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
    return fns


_lib = _load()
_begin = _lib["begin"] if _lib else None
_end = _lib["end"] if _lib else None

# Names already encoded, so a hot loop does not re-encode its region names.
_encoded = {}
_encoded_lock = threading.Lock()
_MAX_CACHED_NAMES = 4096


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
    if not attrs:
        return str(name)
    return str(name) + "".join(" %s=%s" % (k, v) for k, v in attrs.items())


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
    """A sample of a named counter: an int is stored exactly, a float as a
    double."""
    if _lib is None:
        return
    if isinstance(value, bool) or isinstance(value, int):
        _lib["counter"](_encode(str(name)), int(value))
    else:
        _lib["counter_double"](_encode(str(name)), float(value))


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


class AnnotatedLoader:
    """Wraps an iterable (a torch.utils.data.DataLoader, any iterable) so that
    iterating it records, without touching the training loop:

    * ``load_name`` ("load_batch") around each fetch of the next batch, the
      time the loop waits for data;
    * ``step_name`` ("step") from the moment a batch is handed out until the
      loop asks for the next one, the training step;
    * with ``epoch`` given, an outer region ``"epoch epoch=N"`` around the
      whole pass.

    ``len()`` and attribute access pass through to the wrapped loader.
    """

    def __init__(self, loader, load_name="load_batch", step_name="step", epoch=None):
        self.loader = loader
        self.load_name = load_name
        self.step_name = step_name
        self.epoch = epoch

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, attr):
        return getattr(self.loader, attr)

    def __iter__(self):
        load = _encode(self.load_name)
        step = _encode(self.step_name)
        if _begin is None:
            yield from self.loader
            return
        outer = None
        if self.epoch is not None:
            outer = _encode(_full_name("epoch", {"epoch": self.epoch}))
            _begin(outer)
        in_step = False
        try:
            _begin(load)
            try:
                it = iter(self.loader)
            except BaseException:
                _end()
                raise
            while True:
                if in_step:
                    _end()
                    in_step = False
                    _begin(load)
                try:
                    batch = next(it)
                except StopIteration:
                    _end()
                    return
                except BaseException:
                    _end()
                    raise
                _end()
                _begin(step)
                in_step = True
                yield batch
        finally:
            # The loop broke out, raised, or the generator was closed.
            if in_step:
                _end()
            if outer is not None:
                _end()


def annotate_loader(loader, load_name="load_batch", step_name="step", epoch=None):
    """``for batch in dlprof.annotate_loader(loader): ...`` — see
    AnnotatedLoader."""
    return AnnotatedLoader(loader, load_name, step_name, epoch)


# The trace-reading API (dlprof/traces.py), loaded on first use.
_TRACE_API = ("read_events", "read_processes", "read_regions", "summary")


def __getattr__(name):
    if name in _TRACE_API:
        from . import traces
        return getattr(traces, name)
    if name == "dask":  # dlprof.dask.read_events, dlprof.dask.summary (needs dask)
        import importlib
        return importlib.import_module(".dask", __name__)
    raise AttributeError("module 'dlprof' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | set(_TRACE_API) | {"dask"})
