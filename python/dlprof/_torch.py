"""PyTorch without code changes: what annotate_loader records, for every
DataLoader, plus optimizer steps.

Loaded by the bootstrap (python/bootstrap/sitecustomize.py, installed as
dlprof-python/sitecustomize.py) once torch.utils.data has been imported and
the runtime is active; `instrument(module)` is called with torch.utils.data
and with torch.optim.optimizer as each is executed. It patches classes and
functions of torch, never the program's objects (datasets, loaders and
samplers are untouched and pickle as before). What the worker processes
record is _torch_worker.py's (inside their fetch, _torch_fetch.py's);
checkpoints are _torch_checkpoint.py's:

* `_BaseDataLoaderIter.__next__`: the region `load_batch` around each batch
  the process asks for (num_workers=0: the fetch itself), holding a mark
  `batch loader=L` (L: the loader's number in this process, in the order
  they were first iterated) and, for batches made by worker processes,
  `flow_finish("batch", id)`; the call that ends a pass (StopIteration,
  where torch shuts non-persistent workers down) holds `end loader=L`
  instead, so load_batch regions holding a `batch` mark are the batches;
  a call that raised (a worker's exception passed on, a timeout, a worker
  killed) holds `raised loader=L`: no batch either, its time still waited;
  A thread that takes batches for another to train on (a prefetcher that
  queues them: its pass begun on another thread, or the optimizer stepped
  by another) records `prefetch_batch` instead: its wait is not the loop's;
* `DataLoader.__iter__`: the region `loader_iter` (starting or resuming
  workers, the first prefetches), then a mark `epoch loader=L pass=N` (N:
  the loader's passes before this one, annotate_loader's included, whether
  its iterator is new or its persistent workers resume), ending
  ` persistent=1` for a loader with persistent workers; before it, for a
  DataLoader seen made, `loader L site=FILE:LINE` (_loader_numbers.py);
* `torch.utils.data._utils.worker._worker_loop` (`_process_worker_loop` in
  newer torch), the workers' main function (looked up by torch when it
  starts a worker, pickled by name to spawn/forkserver workers, which run
  the bootstrap themselves): in the worker, the region `fetch_batch` around
  each fetch of a batch (its dataset calls and collate_fn), ending with
  `flow_start("batch", id)`;
* `torch.utils.data._utils.pin_memory.pin_memory`: where the process pins a
  batch it made itself (num_workers=0 with pin_memory; workers' batches are
  pinned by torch's pin-memory thread, left alone), the region `pin_batch`
  inside that batch's load_batch: the batch is made, then handed over;
* when a batch leaves its worker and reaches the main process, for the
  hand-over's parts and the workers' what-if: counters `fetch_cpu` (the
  worker thread's CPU time in the fetch, and its time waiting for a CPU:
  _thread_cpu) and `batch_bytes` (the batch's
  tensor bytes), at the fetch's end, `batch_sent` = its flow id (the worker's queue feeder
  thread, as it writes the pickled batch to the pipe) and `batch_received`
  (the thread of the main process that read a message of the workers' off
  the pipe, before unpickling it);
* inside a worker's fetch (map-style datasets): the region `sample` around
  each dataset[index], holding a counter `sample` = the index at its start
  (DLPROF_PYTHON_SAMPLES=0: none), and `collate` around collate_fn; in the
  worker only, torchvision's Compose (v1 and v2) records `transform NAME`
  around each of its transforms (NAME: the transform's class) and PIL's
  ImageFile.load (the decode behind Image.open's first load or convert)
  `decode`;
* optimizers: the region `optimizer_step` around each optimizer.step()
  (_torch_steps.py);
* checkpoints: the region `save_checkpoint` around torch.save,
  torch.distributed.checkpoint's save, save_state_dict and async_save (its
  blocking part: the writes it leaves to a background thread are outside)
  and safetensors.torch's save_file and save_model; `load_checkpoint`
  around torch.load, dcp's load and load_state_dict and safetensors'
  load_file and load_model (the outermost call only: dcp saving through
  torch.save is one save; none in a loader's fetch, a dataset's cache
  of samples, nor into or from an io.BytesIO: a tensor pickled). The
  functions are replaced in their modules (and torch.save/torch.load on
  `torch`), so a program that imported the name itself before
  torch.utils.data was imported keeps the original.

A batch's flow id is built on both sides from what both know: the loader
iterator's base seed (drawn per iterator, passed to its workers), the pass
(persistent workers count the _ResumeIteration messages) and the send index
(`_rcvd_idx - 1` after __next__ in the main process, the task's index in the
worker): splitmix64(seed, pass, workers) with its low 24 bits replaced by the
send index (flow_tag, _torch_worker.py).

Passes begun by annotate_loader (dlprof._explicit.on during iter(); each
pass of a persistent iterator decided anew) and their batches' explicit
fetch_batch regions are left alone: nothing is recorded twice. Exceptions
and StopIteration pass through unchanged; a failure of the instrumentation
itself never reaches the program.
"""

import functools
import os
import threading
import weakref

from . import (_begin, _end, _flow_finish, _flow_start, _lib, _explicit, _explicit_iters,
               _loader_number)
from ._torch_checkpoint import (CHECKPOINT_MODULES, in_fetch, loader_inside_a_sample,
                                instrument_checkpoint_module, instrument_serialization)
from ._torch_steps import close_stale_step, instrument_optim, loop_thread
from ._torch_worker import BATCH_FLOW, U64, flow_tag, worker_entry

_LOAD = b"load_batch"
_PREFETCH = b"prefetch_batch"
_ITER = b"loader_iter"
_PIN = b"pin_batch"
_mark = _lib["mark"]
_counter = _lib["counter"]

_BATCH_RECEIVED = b"batch_received"

_done = set()  # what is instrumented: "data", "optim", "dcp", "safetensors"
_iters = weakref.WeakKeyDictionary()    # loader iterator -> _IterState
_tls = threading.local()                # .own: in a num_workers=0 iterator's __next__
_begun = {}  # thread ident -> passes begun on it (any loader's), as the loop counts them


def done():
    return _done >= {"data", "optim", "dcp", "safetensors"}


def instrument(module):
    name = getattr(module, "__name__", "")
    if name == "torch.utils.data" and "data" not in _done:
        _instrument_data()
        instrument_serialization()
        _done.add("data")
        _mark(b"dlprof_auto torch")
    elif name == "torch.optim.optimizer" and "optim" not in _done:
        instrument_optim(module)
        _done.add("optim")
    elif name in CHECKPOINT_MODULES:
        done = "dcp" if name.startswith("torch") else "safetensors"
        if done not in _done:
            instrument_checkpoint_module(module)
            _done.add(done)


# --- the main process ----------------------------------------------------

class _IterState:
    __slots__ = ("explicit", "loader", "passes", "tag", "batch_mark", "end_mark", "raised_mark",
                 "thread", "pid", "begun", "loader_ref", "gone", "site")

    def __init__(self, it, loader, explicit):
        self.explicit = explicit
        self.thread = threading.get_ident()  # the thread that began the pass
        # Its process: a worker forked while the iterator lived (held by an
        # exception's cycle) has the same thread id, and may collect it.
        self.pid = os.getpid()
        self.begun = 0  # that thread's passes begun (any loader's) when it began this one
        # Its DataLoader (a weak reference, _watch_loader) and that thread's
        # passes begun when the DataLoader went (None: alive, or not known).
        self.loader_ref = None
        self.gone = None
        self.site = None  # where its DataLoader was made (_loader_numbers.py's key)
        self.passes = 0
        self.loader = _loader_number(loader)[0]
        self.batch_mark = ("batch loader=%d" % self.loader).encode()
        self.end_mark = ("end loader=%d" % self.loader).encode()
        self.raised_mark = ("raised loader=%d" % self.loader).encode()
        self.tag = None
        self.retag(it)

    def retag(self, it):
        seed = getattr(it, "_base_seed", None)
        workers = getattr(it, "_num_workers", 0)
        if type(seed) is int and type(workers) is int and workers > 0:
            self.tag = flow_tag(seed & U64, self.passes, workers)


def _state(it, loader=None):
    st = _iters.get(it)
    if st is None:
        explicit = (getattr(_explicit, "on", False) or getattr(_explicit, "fetching", 0)
                    or it in _explicit_iters)
        st = _IterState(it, loader, explicit)
        _iters[it] = st
    return st


def _instrument_shutdown(dl):
    """A pass left early (`break`, then the iterator dropped, or a new
    iter()): torch ends the non-persistent workers in
    _MultiProcessingDataLoaderIter._shutdown_workers, outside next(), and
    the loop waits for it. Recorded on the loop's thread as the pass's end
    is at StopIteration: a load_batch holding `end loader=L` (it was in no
    figure: 13 % of a loop that broke out of each epoch). Persistent
    workers are shut down when their iterator goes, with their loader: in
    the loop where their DataLoader was gone before another pass began on
    the thread (a new DataLoader each epoch: `loader = make()` drops the
    old one, then `it = iter(loader)` its iterator; it was in no figure:
    299 ms of wait where the loop's clock said 509 ms), or where it went as a
    DataLoader made at its site and not yet iterated replaced it (`loader =
    DataLoader(...)` each epoch, the old iterator kept by the old loader:
    the shut-down runs inside that assignment, before the next pass begins;
    it was in no figure: 580 ms of the loop's 4.8 s). One whose DataLoader
    goes as it does, after the loop (`del loader`, the program's end), stays
    out, whatever passes other loaders began since: a validation loader's
    later pass made a training loader's shut-down at exit a batch wait (the
    loop 19.9 s where the program's clock said 17.8 s)."""
    cls = getattr(dl, "_MultiProcessingDataLoaderIter", None)
    orig = getattr(cls, "_shutdown_workers", None)
    if orig is None or getattr(orig, "_dlprof", False):
        return

    @functools.wraps(orig)
    def _shutdown_workers(self):
        # Not at the interpreter's exit (torch does nothing then).
        try:
            st = _iters.get(self)
            own = (st is not None and not st.explicit and not getattr(self, "_shutdown", True)
                   and (not getattr(self, "_persistent_workers", True)
                        or (st.gone is not None and (st.gone < _begun.get(st.thread, 0)
                                                     or _loader_number.made_anew(st.site))))
                   and getattr(dl._utils, "python_exit_status", True) is False
                   and not getattr(_tls, "nexting", False) and st.thread == threading.get_ident()
                   and st.pid == os.getpid())
        except Exception:
            own = False
        if not own:
            return orig(self)
        _begin(_LOAD)
        try:
            return orig(self)
        finally:
            try:
                _mark(st.end_mark)
                if getattr(self, "_persistent_workers", False):  # its DataLoader gone
                    _mark(("shutdown loader=%d" % st.loader).encode())
            finally:
                _end()

    _shutdown_workers._dlprof = True
    cls._shutdown_workers = _shutdown_workers


def _prefetching(st):
    """Whether the calling thread takes batches for another one to train on
    (prefetch_generator's BackgroundGenerator, a DataLoaderX: a thread that
    puts them on a queue): its wait is no wait of the loop's. Told by the
    pass begun on another thread, or the optimizer stepped by another."""
    me = threading.get_ident()
    stepper = loop_thread()
    return st.thread != me or (stepper is not None and stepper != me)


def _begin_pass(it, loader, explicit):
    """iter(loader) returned `it` for a new pass, annotate_loader's or not:
    decided per pass (persistent workers keep one iterator across passes of
    both kinds, and their flow tags count every pass, as the workers do).
    Returns the loader's [L, passes begun]."""
    st = _iters.get(it)
    if st is None:
        st = _state(it, loader)
    else:
        st.passes += 1
        st.retag(it)
    st.explicit = explicit
    st.thread = threading.get_ident()
    _begun[st.thread] = st.begun = _begun.get(st.thread, 0) + 1
    if st.loader_ref is None and loader is not None:
        _watch_loader(st, loader)
        st.site = _loader_number.site_key(loader)
    n = _loader_number(loader)
    n[1] += 1
    _loader_number.began(loader, it)
    return n


def _watch_loader(st, loader):
    """Notes in `st` the passes its thread had begun when `loader` went: a
    weak reference's callback, which CPython calls as the DataLoader is
    freed, before the iterator it holds (a persistent one) is dropped and
    shuts its workers down. A pass begun after that is the loop going on
    without it."""
    def gone(_ref, st=st):
        st.gone = _begun.get(st.thread, 0)
    try:
        st.loader_ref = weakref.ref(loader, gone)
    except TypeError:  # (a loader that takes no weak reference)
        pass


def _instrument_data():
    import torch.utils.data.dataloader as dl
    from torch.utils.data._utils import worker

    base = dl._BaseDataLoaderIter
    orig_next = base.__next__
    orig_iter = dl.DataLoader.__iter__

    @functools.wraps(orig_next)
    def __next__(self):
        if loader_inside_a_sample():  # iterated by a sample: the dataset's work
            return orig_next(self)
        # num_workers=0: the dataset runs in this thread (its saves are no
        # checkpoints); a with, which adds no frame to the tracebacks.
        with in_fetch(self):
            try:
                st = _state(self)
            except Exception:
                return orig_next(self)
            if st.explicit or getattr(_explicit, "fetching", 0):
                return orig_next(self)
            close_stale_step()
            own = getattr(_tls, "own", False)
            _tls.own = getattr(self, "_num_workers", None) == 0
            _begin(_PREFETCH if _prefetching(st) else _LOAD)
            _tls.nexting = True  # (a shutdown in it, at StopIteration, is in its region)
            try:
                batch = orig_next(self)
            except StopIteration:
                _tls.own = own
                _tls.nexting = False
                try:
                    _loader_number.ended(self)
                    _mark(st.end_mark)
                finally:
                    _end()
                raise
            except BaseException:
                _tls.own = own
                _tls.nexting = False
                try:
                    _mark(st.raised_mark)
                finally:
                    _end()
                raise
            _tls.own = own
            _tls.nexting = False
            try:
                _mark(st.batch_mark)
                if st.tag is not None and getattr(self, "_in_order", True) is not False:
                    sent = getattr(self, "_rcvd_idx", None)
                    if type(sent) is int and sent > 0:
                        _flow_finish(BATCH_FLOW, st.tag | ((sent - 1) & 0xFFFFFF))
            except Exception:
                pass
            _end()
            return batch

    @functools.wraps(orig_iter)
    def __iter__(self):
        if loader_inside_a_sample():
            return orig_iter(self)
        if getattr(_explicit, "on", False) or getattr(_explicit, "fetching", 0):
            it = orig_iter(self)
            try:
                _begin_pass(it, self, True)
            except Exception:
                pass
            return it
        _begin(_ITER)
        try:
            it = orig_iter(self)
        except BaseException:
            _end()
            raise
        try:
            n = _begin_pass(it, self, False)
            # persistent=1: a later pass resumes the same workers, no start.
            kept = bool(getattr(self, "persistent_workers", False)) and self.num_workers > 0
            if n[2]:
                _mark(n[2])  # `loader L site=FILE:LINE` (_loader_numbers.py)
            _mark(("epoch loader=%d pass=%d%s" % (n[0], n[1] - 1, " persistent=1" if kept else "")
                   ).encode())
            _watch_result_queue(it)
        except Exception:
            pass
        _end()
        return it

    base.__next__ = __next__
    dl.DataLoader.__iter__ = __iter__
    _loader_number.watch_sites(dl.DataLoader)
    _instrument_shutdown(dl)
    _instrument_pin()
    if _flow_start is None:
        return
    # The worker processes' main function: _worker_loop (torch <= 2.9),
    # _process_worker_loop (newer; thread workers, in this process, are left
    # alone: their batches get no fetch_batch).
    for name in ("_worker_loop", "_process_worker_loop"):
        fn = getattr(worker, name, None)
        if callable(fn) and hasattr(fn, "__code__"):
            setattr(worker, name, worker_entry(fn, worker))


def _instrument_pin():
    # dataloader.py calls it as _utils.pin_memory.pin_memory (looked up at
    # each call), the pin-memory thread by its module's global name: both
    # find this one; only a num_workers=0 iterator's own call is recorded.
    try:
        from torch.utils.data._utils import pin_memory as module
    except Exception:
        return
    orig = getattr(module, "pin_memory", None)
    if not callable(orig):
        return

    @functools.wraps(orig)
    def pin_memory(*args, **kwargs):
        if not getattr(_tls, "own", False):
            return orig(*args, **kwargs)
        _tls.own = False  # its recursion over the batch's parts: one region
        _begin(_PIN)
        try:
            return orig(*args, **kwargs)
        finally:
            _end()
            _tls.own = True

    module.pin_memory = pin_memory


def _watch_result_queue(it):
    """In the main process: when the bytes of a batch (or any message of the
    workers) have arrived, as a counter `batch_received`, from the thread
    that read them (the pin-memory thread where there is one) before it
    unpickles them."""
    q = getattr(it, "_worker_result_queue", None)
    recv = getattr(q, "_recv_bytes", None)
    if not callable(recv) or getattr(recv, "_dlprof_timed", False):
        return

    def recv_bytes(*args, **kwargs):
        data = recv(*args, **kwargs)
        try:
            _counter(_BATCH_RECEIVED, 0)
        except Exception:
            pass
        return data

    recv_bytes._dlprof_timed = True
    q._recv_bytes = recv_bytes
