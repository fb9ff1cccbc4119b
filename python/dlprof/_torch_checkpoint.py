"""Checkpoints in the loop (issue 48), for dlprof/_torch.py: the region
`save_checkpoint` around torch.save, torch.distributed.checkpoint's saves
and safetensors' save_file/save_model, `load_checkpoint` around their
loads, one region per call however they nest (dcp saving with torch.save
is one save). Exceptions pass through unchanged.
"""

import functools
import threading

from . import _begin, _end

_SAVE = b"save_checkpoint"
_RESTORE = b"load_checkpoint"
_tls = threading.local()  # .checkpoint: inside a checkpoint call


# Checkpoint functions by module: (function names, the region around them).
CHECKPOINT_MODULES = {
    "torch.distributed.checkpoint": (("save", "save_state_dict", "async_save"),
                                     ("load", "load_state_dict")),
    "safetensors.torch": (("save_file", "save_model"), ("load_file", "load_model")),
}


def _checkpoint_call(fn, region):
    """`fn` inside `region`, unless a checkpoint call of this thread is
    already inside one (dcp saving with torch.save: one save)."""
    @functools.wraps(fn)
    def checkpoint_call(*args, **kwargs):
        if getattr(_tls, "checkpoint", False):
            return fn(*args, **kwargs)
        _tls.checkpoint = True
        _begin(region)
        try:
            return fn(*args, **kwargs)
        finally:
            _end()
            _tls.checkpoint = False

    checkpoint_call._dlprof_checkpoint = True
    return checkpoint_call


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
    for name, region in (("save", _SAVE), ("load", _RESTORE)):
        fn = getattr(serialization, name, None)
        if not callable(fn) or getattr(fn, "_dlprof_checkpoint", False):
            continue
        wrapped = _checkpoint_call(fn, region)
        setattr(serialization, name, wrapped)
        if torch is not None and getattr(torch, name, None) is fn:
            setattr(torch, name, wrapped)


def instrument_checkpoint_module(module):
    """One of CHECKPOINT_MODULES, just imported: its saves and loads."""
    saves, restores = CHECKPOINT_MODULES[module.__name__]
    _wrap_checkpoint_calls(module, saves, _SAVE)
    _wrap_checkpoint_calls(module, restores, _RESTORE)
