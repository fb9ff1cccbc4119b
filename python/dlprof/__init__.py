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
import itertools
import numbers
import os
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


class AnnotatedLoader:
    """Wraps an iterable (a torch.utils.data.DataLoader, any iterable) so that
    iterating it records, without touching the training loop:

    * ``load_name`` ("load_batch") around each fetch of the next batch, the
      time the loop waits for data, holding the mark ``"batch loader=L"``
      (L numbers the loaders of the process, in the order they were first
      iterated), or, in the fetch that finds the pass over, ``"end
      loader=L"`` (no batch);
    * with the default ``load_name``, ``"loader_iter"`` around iter(loader)
      (starting the workers), holding the mark ``"epoch loader=L pass=N"``
      (N: the loader's passes before this one; `` persistent=1`` added for
      persistent workers), as the PyTorch bootstrap records a pass; with a
      name of the program's own, iter() is in the first fetch's region;
    * ``step_name`` ("step") from the moment a batch is handed out until the
      loop asks for the next one, the training step;
    * with ``epoch`` given, an outer region ``"epoch epoch=N"`` around the
      whole pass;
    * for a torch DataLoader with worker processes (``num_workers > 0``) and
      automatic batching (``batch_sampler`` not None): in the worker that
      loads a batch, the region ``"fetch_batch"`` around the reads of its
      samples, ending with ``flow_start("batch", id)``, and in the loop's
      ``load_batch`` that receives the batch ``flow_finish("batch", id)``:
      the timelines draw an arrow from the worker to the step it fed.

    ``len()`` and attribute access pass through to the wrapped loader; what
    the loop receives is unchanged.
    """

    def __init__(self, loader, load_name="load_batch", step_name="step", epoch=None):
        self.loader = loader
        self.load_name = load_name
        self.step_name = step_name
        self.epoch = epoch

    def __len__(self):
        return len(self.loader)

    def __getattr__(self, attr):
        # Only attributes of its own missing (copy and unpickling look for
        # __setstate__ before its __dict__ is restored): not the loader's.
        if attr in ("loader", "load_name", "step_name", "epoch"):
            raise AttributeError(attr)
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
            it, flows, batch_mark, end_mark = self._begin_pass(load)
            received = 0
            while True:
                if in_step:
                    _end()
                    in_step = False
                    _begin(load)
                fetching = getattr(_explicit, "fetching", 0)
                _explicit.fetching = fetching + 1  # a DataLoader inside is ours too
                try:
                    batch = next(it)
                except StopIteration:
                    # The request that found the pass over: no batch.
                    try:
                        _lib["mark"](end_mark)
                    finally:
                        _end()
                    return
                except BaseException:
                    _end()
                    raise
                finally:
                    _explicit.fetching = fetching
                if flows is not None:  # inside load_batch: the arrow ends here
                    _finish_batch_flow(it, flows, received)
                    received += 1
                _lib["mark"](batch_mark)
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

    def _begin_pass(self, load):
        """iter(loader), the pass's first wait: in the region `loader_iter`
        holding `epoch loader=L pass=N` (as the bootstrap records a pass,
        where the summary's passes begin), or, with a load_name of the
        program's own, in the first `load` region, left open. Returns (the
        iterator, its flows, the marks of a batch and of the pass's end)."""
        numbers = _loader_number(self.loader)
        passes = numbers[1]
        own = load != _LOAD_BATCH
        _begin(load if own else _LOADER_ITER)
        try:
            it, flows = _loader_iter(self.loader)
        except BaseException:
            _end()
            raise
        if numbers[1] == passes:  # (the bootstrap counts a DataLoader's)
            numbers[1] += 1
        if not own:
            try:
                kept = (getattr(self.loader, "persistent_workers", False) is True
                        and getattr(self.loader, "num_workers", 0) > 0)
                _lib["mark"](("epoch loader=%d pass=%d%s" % (
                    numbers[0], numbers[1] - 1, " persistent=1" if kept else "")).encode())
            finally:
                _end()
                _begin(load)
        return (it, flows, ("batch loader=%d" % numbers[0]).encode(),
                ("end loader=%d" % numbers[0]).encode())


# Loader flows. A DataLoader's iterator sends each batch of indices from its
# batch sampler to a worker (torch/utils/data/dataloader.py,
# _MultiProcessingDataLoaderIter._try_put_index: `(send_idx, index)` on the
# worker's index queue) and returns the batches in send order (unless
# in_order=False, newer torch); after __next__ returns, `_rcvd_idx - 1` is
# the send index of the batch returned (1.13: _process_data increments it;
# newer torch just before calling it). So the n-th batch
# the sampler's iterator yields is sent as task n (an index is dropped
# unsent only when no worker is active any more, i.e. after the last send),
# and its flow id can be built on both sides from n: the worker's copy of
# the batch carries it (_BatchIndices), the main process rebuilds it from the
# send index of what it received.

_LOAD_BATCH = b"load_batch"
_LOADER_ITER = b"loader_iter"
_FETCH_REGION = b"fetch_batch"
_BATCH_FLOW = b"batch"
_ITER_CALLS = itertools.count()  # process-wide: unique flow ids across loaders


class _BatchIndices(list):
    """A batch of sample indices as the batch sampler gave it (a list),
    tagged with its flow id. In the worker, the fetcher's iteration over it
    (map-style: [dataset[i] for i in index]; iterable-style: for _ in index)
    is the region "fetch_batch", which ends with flow_start("batch", key)."""

    __slots__ = ("key", "_started")
    _dlprof_batch = True  # how dlprof/_torch.py knows one, made by any copy of dlprof

    def __init__(self, indices=(), key=0):
        list.__init__(self, indices)
        self.key = key
        self._started = False

    def __reduce__(self):
        # It crosses the index queue. list.copy, not list(self): pickling (in
        # the queue's feeder thread) must not run __iter__ below.
        return (_BatchIndices, (list.copy(self), self.key))

    def __iter__(self):
        if _begin is None or _flow_start is None:
            return list.__iter__(self)
        return _fetch_iter(self)


def _fetch_iter(batch):
    # Runs on the first next(): a generator closed unstarted records nothing.
    _begin(_FETCH_REGION)
    try:
        yield from list.__iter__(batch)
    finally:
        # Exhausted, or closed early (a dataset that raised, an iterable one
        # that ran out): the arrow may then have no end, which draws nothing.
        try:
            if not batch._started:  # one start per batch, however iterated
                batch._started = True
                _flow_start(_BATCH_FLOW, batch.key)
        finally:
            _end()


class _BatchIter:
    """The batch sampler's iterator during one pass: hands out its lists as
    _BatchIndices with id (main pid & 0x3fffff) << 42 | (pass & 0x3ffff) << 24
    | (n & 0xffffff), n counting from 0 (the send index). The pid keeps the
    loaders of processes on one host apart."""

    __slots__ = ("_it", "_tag", "_n", "_plain")

    def __init__(self, it):
        self._it = it
        self._tag = ((os.getpid() & 0x3FFFFF) << 42) | ((next(_ITER_CALLS) & 0x3FFFF) << 24)
        self._n = 0
        self._plain = None  # n of batches handed out untagged (not lists)

    def __iter__(self):
        return self

    def __next__(self):
        batch = next(self._it)
        n = self._n
        self._n = n + 1
        if type(batch) is list:  # BatchSampler's; anything else passes unchanged
            return _BatchIndices(batch, self._tag | (n & 0xFFFFFF))
        if self._plain is None:
            self._plain = set()
        self._plain.add(n)
        return batch

    def key(self, n):
        if n < 0 or n >= self._n or (self._plain and n in self._plain):
            return None
        return self._tag | (n & 0xFFFFFF)


class _FlowBatchSampler:
    """Stands in for a DataLoader's batch_sampler during iter(loader) only."""

    def __init__(self, batch_sampler):
        self.batch_sampler = batch_sampler
        self.last = None  # the iterator made last

    def __iter__(self):
        self.last = _BatchIter(iter(self.batch_sampler))
        return self.last

    def __len__(self):
        return len(self.batch_sampler)

    def __getattr__(self, attr):
        if attr in ("batch_sampler", "last"):
            raise AttributeError(attr)
        return getattr(self.batch_sampler, attr)


def _loader_iter(loader):
    """(iter(loader), the _FlowBatchSampler its batches came from or None),
    the iterator marked as annotate_loader's own (see _AUTO_TORCH)."""
    _explicit.on = True
    try:
        it, flows = _loader_iter_flows(loader)
    finally:
        _explicit.on = False
    try:
        _explicit_iters.add(it)
    except TypeError:  # not weakly referenceable: no DataLoader iterator
        pass
    return it, flows


def _loader_iter_flows(loader):
    """(iter(loader), the _FlowBatchSampler its batches came from or None).

    Only a torch DataLoader with workers and automatic batching gets flows.
    iter() reads the batch sampler (DataLoader._index_sampler) and dispatches
    the first prefetch_factor * num_workers batches before it returns
    (_MultiProcessingDataLoaderIter._reset), so the wrapper is put in place
    around iter() and the original back right after it."""
    torch_data = sys.modules.get("torch.utils.data")  # not loaded: no DataLoader
    data_loader = getattr(torch_data, "DataLoader", None)
    if (_flow_start is None or _flow_finish is None or data_loader is None
            or not isinstance(loader, data_loader) or not _lib["active"]()):
        return iter(loader), None
    original = loader.__dict__.get("batch_sampler")
    workers = getattr(loader, "num_workers", 0)
    if original is None or not isinstance(workers, int) or workers <= 0:
        return iter(loader), None
    wrapper = _FlowBatchSampler(original)
    # Persistent workers: iter() resets the loader's cached iterator, which
    # takes the batch sampler it kept from its first pass, not the loader's.
    cached = loader.__dict__.get("_iterator")
    if cached is not None and getattr(cached, "_index_sampler", None) is not original:
        cached = None
    # DataLoader.__setattr__ refuses batch_sampler after __init__.
    object.__setattr__(loader, "batch_sampler", wrapper)
    try:
        if cached is not None:
            cached._index_sampler = wrapper
        it = iter(loader)
    finally:
        object.__setattr__(loader, "batch_sampler", original)
        if cached is not None:
            cached._index_sampler = original
    if getattr(it, "_index_sampler", None) is wrapper:  # a new iterator kept it
        it._index_sampler = original
    if wrapper.last is None:
        return it, None
    return it, wrapper


def _finish_batch_flow(it, flows, received):
    """flow_finish for the batch next(it) just returned (the received-th)."""
    try:
        sampler_iter = getattr(it, "_sampler_iter", None)
        if not isinstance(sampler_iter, _BatchIter):
            sampler_iter = flows.last
        if getattr(it, "_in_order", True) is False:
            return  # torch >= 2.6, in_order=False: no telling which batch came
        sent = getattr(it, "_rcvd_idx", None)
        n = sent - 1 if type(sent) is int else received
        key = sampler_iter.key(n)
        if key is not None:
            _flow_finish(_BATCH_FLOW, key)
    except Exception:  # never break the loop over a drawing aid
        pass


def annotate_loader(loader, load_name="load_batch", step_name="step", epoch=None):
    """``for batch in dlprof.annotate_loader(loader): ...`` — see
    AnnotatedLoader."""
    return AnnotatedLoader(loader, load_name, step_name, epoch)


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
