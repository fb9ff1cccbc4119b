"""The loader worker processes' side of dlprof/_torch.py: the workers' main
function replaced (`worker_entry`), and in each worker the region
`fetch_batch` around the fetch of a batch (what is recorded inside it is
_torch_fetch.py's), ending with `flow_start("batch", id)`, the counters
`fetch_cpu` and `batch_bytes` at its end and `batch_sent` as the batch
leaves through the result queue's feeder thread. `flow_tag` builds a batch
flow's upper bits, as the main process does for the flow_finish (see
_torch.py on how both sides know the id). As in _torch.py, exceptions pass
through unchanged and a failure of the instrumentation never reaches the
program.
"""

import collections
import functools
import os
import time

from . import _begin, _end, _flow_start, _lib
from ._torch_checkpoint import in_worker
from ._torch_fetch import instrument_fetcher, instrument_preprocessing

_FETCH = b"fetch_batch"
BATCH_FLOW = b"batch"
U64 = (1 << 64) - 1
_counter = _lib["counter"]

_BATCH_SENT = b"batch_sent"
_BATCH_BYTES = b"batch_bytes"
_FETCH_CPU = b"fetch_cpu"


def _thread_cpu():
    """What the calling thread asked of the CPUs so far, in ns: its time on
    a CPU and its time runnable but waiting for one (the kernel's run queue,
    /proc/thread-self/schedstat's first two fields). The workers' what-if
    counts both as a fetch's CPU work: a worker the other processes keep
    off the CPUs is not waiting on anything the CPUs could do without
    (a loaded machine: its worker looked idle 60 % of each fetch, and more
    workers "would help"). Where the file cannot be read, time.thread_time_ns
    alone. (/proc is in DLPROF_EXCLUDE's default: these reads are not in the
    trace.)"""
    global _thread_cpu
    try:
        fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            on_cpu, waiting = os.read(fd, 128).split()[:2]
        finally:
            os.close(fd)
        return int(on_cpu) + int(waiting)
    except (OSError, ValueError):
        _thread_cpu = time.thread_time_ns
        return _thread_cpu()


def flow_tag(seed, n, workers):
    """A batch flow's upper 40 bits for (seed, pass, workers)."""
    z = (seed ^ (n * 0x9E3779B97F4A7C15) ^ (workers << 56)) & U64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
    return (z ^ (z >> 31)) & ~0xFFFFFF & U64


def worker_entry(orig, worker_module):
    """The workers' main function: the same, with the index queue and the
    fetcher watched. Keeps the original's name, so that spawn pickles it by
    that name (a worker without the bootstrap gets torch's own)."""
    code = orig.__code__
    names = code.co_varnames[:code.co_argcount]

    @functools.wraps(orig)
    def _worker_loop(*args, **kwargs):
        in_worker()
        try:
            args, kwargs = _watch_worker(orig, names, args, kwargs, worker_module)
        except Exception:
            pass
        return orig(*args, **kwargs)

    return _worker_loop


def _watch_worker(orig, names, args, kwargs, worker_module):
    if not _lib["active"]():
        return args, kwargs
    bound = dict(zip(names, args))
    bound.update(kwargs)
    seed, workers = bound.get("base_seed"), bound.get("num_workers")
    if "index_queue" not in bound or type(seed) is not int or type(workers) is not int:
        return args, kwargs
    w = _Worker(seed & U64, workers, getattr(worker_module, "_ResumeIteration", ()))
    queue = _IndexQueue(bound["index_queue"], w)
    if "index_queue" in kwargs:
        kwargs = dict(kwargs, index_queue=queue)
    else:
        args = list(args)
        args[names.index("index_queue")] = queue
    # The fetcher the worker makes (and remakes each pass) is watched; this
    # process is the worker, the main process's class is not touched.
    import torch.utils.data as data
    kind = data._DatasetKind
    create = kind.create_fetcher

    def create_fetcher(*a, **k):
        return _Fetcher(create(*a, **k), w)

    kind.create_fetcher = staticmethod(create_fetcher)
    instrument_preprocessing()
    _watch_data_queue(bound.get("data_queue"), w)
    return args, kwargs


def _watch_data_queue(q, w):
    """The worker's result queue: when each batch leaves the worker, as a
    counter `batch_sent` = the batch's flow id, from the queue's feeder
    thread right before it writes the pickled batch to the pipe. The feeder
    takes `_send_bytes` when it starts, at the queue's first put in this
    process: both are replaced on the worker's own copy before then."""
    send = getattr(q, "_send_bytes", None)
    put = getattr(q, "put", None)
    if not callable(send) or not callable(put) or getattr(q, "_thread", None) is not None:
        return
    sent = collections.deque()  # the flow ids of the objects put, in order

    def put_batch(obj, *args, **kwargs):
        try:
            idx = obj[0] if type(obj) is tuple and len(obj) == 2 and type(obj[0]) is int else None
            sent.append(None if idx is None else w.tag | (idx & 0xFFFFFF))
        except Exception:
            pass
        return put(obj, *args, **kwargs)

    def send_bytes(buf, *args, **kwargs):
        try:
            flow = sent.popleft()
            if flow is not None:
                _counter(_BATCH_SENT, flow - (1 << 64) if flow >= 1 << 63 else flow)
        except Exception:
            pass
        return send(buf, *args, **kwargs)

    q.put = put_batch
    q._send_bytes = send_bytes


def _batch_bytes(data, depth=0):
    """The bytes of the tensors in a batch (nested lists, tuples, dicts)."""
    import torch
    if isinstance(data, torch.Tensor):
        return data.element_size() * data.nelement()
    if depth < 4 and isinstance(data, (list, tuple)):
        return sum(_batch_bytes(x, depth + 1) for x in data)
    if depth < 4 and isinstance(data, dict):
        return sum(_batch_bytes(x, depth + 1) for x in data.values())
    return 0


class _Worker:
    __slots__ = ("seed", "workers", "passes", "tag", "idx", "resume")

    def __init__(self, seed, workers, resume):
        self.seed = seed
        self.workers = workers
        self.passes = 0
        self.tag = flow_tag(seed, 0, workers)
        self.idx = None  # send index of the task taken last (None: not ours)
        self.resume = resume


class _IndexQueue:
    """The worker's index queue: notes the send index of each task."""

    __slots__ = ("_q", "_w")

    def __init__(self, q, w):
        self._q = q
        self._w = w

    def get(self, *args, **kwargs):
        r = self._q.get(*args, **kwargs)
        w = self._w
        if type(r) is tuple and len(r) == 2 and type(r[0]) is int:
            # annotate_loader's batches record their own fetch_batch.
            w.idx = None if getattr(r[1], "_dlprof_batch", False) else r[0]
        elif isinstance(r, w.resume):
            w.passes += 1
            w.tag = flow_tag(w.seed, w.passes, w.workers)
            w.idx = None
        return r

    def __getattr__(self, attr):
        return getattr(self._q, attr)


class _Fetcher:
    """A worker's fetcher: fetch_batch around each fetch of a task's batch,
    its dataset's samples and its collate_fn timed inside (the fetcher is
    the worker's own: its attributes are replaced in place)."""

    __slots__ = ("_f", "_w")

    def __init__(self, fetcher, w):
        self._f = fetcher
        self._w = w
        try:
            instrument_fetcher(fetcher)
        except Exception:
            pass

    def fetch(self, index):
        w = self._w
        idx, w.idx = w.idx, None
        if idx is None:
            return self._f.fetch(index)
        _begin(_FETCH)
        cpu = _thread_cpu()
        try:
            data = self._f.fetch(index)
        except BaseException:  # StopIteration of an iterable dataset included
            _end()
            raise
        try:
            _counter(_FETCH_CPU, _thread_cpu() - cpu)
            _counter(_BATCH_BYTES, _batch_bytes(data))
            _flow_start(BATCH_FLOW, w.tag | (idx & 0xFFFFFF))
        finally:
            _end()
        return data

    def __getattr__(self, attr):
        return getattr(self._f, attr)
