"""annotate_loader (AnnotatedLoader) for dlprof/__init__.py, which re-exports
its names: the regions of a loop over a loader (load_batch, loader_iter,
step, epoch), and the batch flows of a torch DataLoader with workers, an
arrow from the worker's fetch_batch to the load_batch that received the
batch. Only annotation primitives of the package are used (the ctypes
functions, the name encoding, the markers that the PyTorch bootstrap reads),
all imported from it once it has defined them.
"""

import itertools
import os
import sys
import threading
import weakref

from . import (_begin, _close_region, _encode, _end, _explicit, _explicit_iters, _flow_finish,
               _flow_start, _full_name, _lib, _loader_number, _open_region)


class AnnotatedLoader:
    """Wraps an iterable (a torch.utils.data.DataLoader, any iterable) so that
    iterating it records, without touching the training loop:

    * ``load_name`` ("load_batch") around each fetch of the next batch, the
      time the loop waits for data, holding the mark ``"batch loader=L"``
      (L numbers the loaders of the process, in the order they were first
      iterated), or, in the fetch that finds the pass over, ``"end
      loader=L"`` (no batch), or, in one that raised, ``"raised loader=L"``
      (no batch either);
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
        if _begin is None:
            return self._plain()
        # Joined here, at iter(), not at the first batch: zip(a, b) calls
        # iter() of both before asking either for a batch.
        return self._annotated(_Member(self.step_name))

    def _plain(self):
        yield from self.loader

    def _annotated(self, m):
        load = _encode(self.load_name)
        if self.epoch is not None:
            m.outer = _open_region(_encode(_full_name("epoch", {"epoch": self.epoch})))
        try:
            it = None
            received = 0
            while True:
                m.request()
                if it is None:
                    it, flows, batch_mark, end_mark, raised_mark = self._begin_pass(load, m)
                else:
                    m.load = _open_region(load)
                fetching = getattr(_explicit, "fetching", 0)
                _explicit.fetching = fetching + 1  # a DataLoader inside is ours too
                try:
                    batch = next(it)
                except StopIteration:
                    # The request that found the pass over: no batch.
                    try:
                        _lib["mark"](end_mark)
                    finally:
                        m.end_load()
                    return
                except BaseException:
                    # A call that raised: no batch (`raised loader=L`).
                    try:
                        _lib["mark"](raised_mark)
                    finally:
                        m.end_load()
                    raise
                finally:
                    _explicit.fetching = fetching
                if flows is not None:  # inside load_batch: the arrow ends here
                    _finish_batch_flow(it, flows, received)
                    received += 1
                _lib["mark"](batch_mark)
                m.end_load()
                m.handed_out()
                yield batch
        finally:
            # The loop broke out, raised, or the generator was closed.
            m.leave()

    def _begin_pass(self, load, m):
        """iter(loader), the pass's first wait: in the region `loader_iter`
        holding `epoch loader=L pass=N` (as the bootstrap records a pass,
        where the summary's passes begin), or, with a load_name of the
        program's own, in the first `load` region, left open (m.load).
        Returns (the iterator, its flows, the marks of a batch, of the
        pass's end and of a call that raised)."""
        numbers = _loader_number(self.loader)
        passes = numbers[1]
        own = load != _LOAD_BATCH
        m.load = _open_region(load if own else _LOADER_ITER)
        try:
            it, flows = _loader_iter(self.loader)
        except BaseException:
            m.end_load()
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
                m.end_load()
                m.load = _open_region(load)
        return (it, flows, ("batch loader=%d" % numbers[0]).encode(),
                ("end loader=%d" % numbers[0]).encode(),
                ("raised loader=%d" % numbers[0]).encode())


# Annotated iterators in lockstep. Each iterator ends only its own regions
# (by token: _end() ended the thread's innermost, which in zip(a, b) was the
# other loader's: steps paired across loaders). The loop's step is one
# region however many loaders it takes a batch from: the iterators of a
# thread made together -- iter() of each before any was asked for a batch,
# as zip() does -- are one group; the group's step begins when each of its
# iterators has handed out its batch of the round (the loop body starts),
# and ends when the loop asks any of them for the next. A loader iterated
# inside another's step (a nested loop) is made later: a group of its own,
# its regions inside that step. A member asked twice in one round is no
# lockstep after all: it leaves for a group of its own (that round's step
# is not recorded).
_made = threading.local()  # .group: the group made last on this thread


class _Group:
    __slots__ = ("members", "yielded", "started", "step", "__weakref__")

    def __init__(self):
        self.members = weakref.WeakSet()  # (an iterator dropped unstarted leaves)
        self.yielded = weakref.WeakSet()  # those that handed out a batch this round
        self.started = False  # a member was asked for a batch: none joins any more
        self.step = None  # the token of the open step


class _Member:
    """One annotated iterator's regions: its load (or loader_iter) and
    epoch, and its group's step."""

    __slots__ = ("step_name", "group", "load", "outer", "__weakref__")

    def __init__(self, step_name):
        self.step_name = _encode(step_name)
        self.load = self.outer = None
        group = getattr(_made, "group", None)
        if group is None or group.started:
            group = _made.group = _Group()
        group.members.add(self)
        self.group = group

    def request(self):
        """The loop asks for a batch: the step it was in is over."""
        g = self.group
        g.started = True
        if g.step is not None:
            step, g.step = g.step, None
            g.yielded.clear()
            _close_region(step)
        elif self in g.yielded and len(g.members) > 1:
            g.members.discard(self)
            g.yielded.discard(self)
            self.group = _Group()
            self.group.started = True
            self.group.members.add(self)

    def end_load(self):
        if self.load is not None:
            load, self.load = self.load, None
            _close_region(load)

    def handed_out(self):
        g = self.group
        g.yielded.add(self)
        if all(m in g.yielded for m in g.members):
            g.step = _open_region(self.step_name)

    def leave(self):
        self.end_load()
        g = self.group
        g.members.discard(self)
        g.yielded.discard(self)
        if g.step is not None and not len(g.members):
            step, g.step = g.step, None
            _close_region(step)
        if self.outer is not None:
            outer, self.outer = self.outer, None
            _close_region(outer)


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


# Pickled (a batch's indices cross a worker's index queue; a program may
# pickle its AnnotatedLoader) and shown under the package's name, as before
# this module was split out of it; the package re-exports both.
AnnotatedLoader.__module__ = _BatchIndices.__module__ = __package__
