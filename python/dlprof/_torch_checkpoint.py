"""Checkpoints in the loop (issue 48), for dlprof/_torch.py: the region
`save_checkpoint` around torch.save, torch.distributed.checkpoint's saves
and safetensors' save_file/save_model, `load_checkpoint` around their
loads, one region per call however they nest (dcp saving with torch.save
is one save). Exceptions pass through unchanged.

A dataset's own torch.save and torch.load (a sample cache made on first use)
are not checkpoints: none is recorded in a DataLoader worker process, nor
inside the fetch of a num_workers=0 iterator (`in_fetch`); that time is the
batch wait's, and counting it as a checkpoint too would count it twice.

Nor is a torch.save into memory, or a torch.load from it (an io.BytesIO):
pickling a tensor does that (a storage's __reduce__ torch.saves itself into
a BytesIO, its unpickling torch.loads it back), so every pickle.dumps of a
dict holding tensors (all_gather_object, broadcast_object_list, a metrics
queue) was a save of 0 bytes, and a checkpoint written with
open().write(pickle.dumps(state)) three saves for one (a review's run: 64
saves in a loop that saved none). A save to any other file object (an
object store's, without a file descriptor) is one: the loop waits for it.
"""

import contextlib
import functools
import io
import threading

from . import _begin, _end

_SAVE = b"save_checkpoint"
_RESTORE = b"load_checkpoint"
_tls = threading.local()  # .checkpoint: inside a checkpoint call or fetches
_worker = []  # not empty: this process is a loader worker (set by _torch.py)


# Checkpoint functions by module: (function names, the region around them).
CHECKPOINT_MODULES = {
    "torch.distributed.checkpoint": (("save", "save_state_dict", "async_save"),
                                     ("load", "load_state_dict")),
    "safetensors.torch": (("save_file", "save_model"), ("load_file", "load_model")),
}


def _in_memory(target):
    # A BytesIO, not a name, descriptor or file.
    return isinstance(target, io.BytesIO)


def _pickling_a_storage(args):
    # torch.save(storage, BytesIO): a tensor's storage being pickled
    # (storage.__reduce__: pickle.dumps of tensors, all_gather_object), no
    # checkpoint. A state saved into a BytesIO and written after (Lightning's
    # atomic save) is one: its serialization is the save's.
    try:
        import torch
        return bool(args) and torch.is_storage(args[0])
    except Exception:
        return False


def _checkpoint_call(fn, region, target_at=None):
    """`fn` inside `region`, unless a checkpoint call of this thread is
    already inside one (dcp saving with torch.save: one save), or the
    file it saves to or loads from, argument `target_at` (a position, and
    `f` by keyword: torch.save's and torch.load's), is in memory."""
    @functools.wraps(fn)
    def checkpoint_call(*args, **kwargs):
        if _worker or getattr(_tls, "checkpoint", 0):
            return fn(*args, **kwargs)
        if target_at is not None and _in_memory(
                args[target_at] if len(args) > target_at else kwargs.get("f")) and (
                region is _RESTORE or _pickling_a_storage(args)):
            return fn(*args, **kwargs)
        _tls.checkpoint = 1
        _begin(region)
        try:
            return fn(*args, **kwargs)
        finally:
            _end()
            _tls.checkpoint = 0

    checkpoint_call._dlprof_checkpoint = True
    return checkpoint_call


def in_worker():
    """This process is a DataLoader worker: whatever it saves or loads is its
    dataset's."""
    _worker.append(True)


def loader_inside_a_sample():
    """Whether a loader iterated now is a dataset's own: in a loader worker,
    or inside a num_workers=0 fetch of this thread (an episodic dataset)."""
    return bool(_worker) or getattr(_tls, "fetching", 0) > 0


class _Fetch:
    """A loader iterator's next() that fetches in this thread: no checkpoint
    region inside, nor a loader's batch (counted per thread: a loader
    iterated inside a fetch)."""

    def __enter__(self):
        _tls.checkpoint = getattr(_tls, "checkpoint", 0) + 1
        _tls.fetching = getattr(_tls, "fetching", 0) + 1

    def __exit__(self, *exc):
        _tls.checkpoint -= 1
        _tls.fetching -= 1
        return False


_FETCH = _Fetch()
_NOT_FETCH = contextlib.nullcontext()


def in_fetch(it):
    """`with in_fetch(it):` around next(it) (a context manager: no frame more
    in the tracebacks); with num_workers=0 the dataset runs in this thread."""
    return _FETCH if getattr(it, "_num_workers", None) == 0 else _NOT_FETCH


def _wrap_checkpoint_calls(module, names, region):
    for name in names:
        fn = getattr(module, name, None)
        if callable(fn) and not getattr(fn, "_dlprof_checkpoint", False):
            setattr(module, name, _checkpoint_call(fn, region))


def instrument_serialization():
    # torch/__init__.py bound torch.save and torch.load from
    # torch.serialization before it imported torch.utils.data: both places.
    import sys
    import torch.serialization as serialization
    torch = sys.modules.get("torch")
    # torch.save(obj, f), torch.load(f): where f is.
    for name, region, target_at in (("save", _SAVE, 1), ("load", _RESTORE, 0)):
        fn = getattr(serialization, name, None)
        if not callable(fn) or getattr(fn, "_dlprof_checkpoint", False):
            continue
        wrapped = _checkpoint_call(fn, region, target_at)
        setattr(serialization, name, wrapped)
        if torch is not None and getattr(torch, name, None) is fn:
            setattr(torch, name, wrapped)


def instrument_checkpoint_module(module):
    """One of CHECKPOINT_MODULES, just imported: its saves and loads."""
    saves, restores = CHECKPOINT_MODULES[module.__name__]
    _wrap_checkpoint_calls(module, saves, _SAVE)
    _wrap_checkpoint_calls(module, restores, _RESTORE)
