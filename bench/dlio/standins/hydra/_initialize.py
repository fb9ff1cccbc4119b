"""The stand-in's Compose API: `initialize`, `initialize_config_dir`,
`initialize_config_module` (context managers that set the config search path,
as Hydra's set its global state) and `compose`, which DLIO's tests and its
postprocessor use. As in Hydra, compose() sets no HydraConfig: DLIO then
writes to `output/`."""

import importlib
import inspect
import os

from hydra._compose import SearchPath, compose_config, task_config
from hydra._main import register_resolvers

_state = {"dirs": None, "job_name": "app"}


class _Init:
    def __init__(self, dirs, job_name):
        self._saved = dict(_state)
        _state["dirs"] = dirs
        _state["job_name"] = job_name or "app"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.update(self._saved)
        return False


def initialize(version_base=None, config_path=None, job_name=None, caller_stack_depth=1):
    """config_path: relative to the caller's file (Hydra's rule)."""
    dirs = []
    if config_path is not None:
        if os.path.isabs(config_path):
            dirs.append(config_path)
        else:
            frame = inspect.stack()[caller_stack_depth]
            dirs.append(os.path.join(os.path.dirname(os.path.abspath(frame.filename)), config_path))
    return _Init(dirs, job_name)


def initialize_config_dir(config_dir, version_base=None, job_name=None):
    if not os.path.isabs(config_dir):
        raise ValueError("initialize_config_dir() requires an absolute config_dir as input")
    return _Init([config_dir], job_name)


def initialize_config_module(config_module, version_base=None, job_name=None):
    module = importlib.import_module(config_module)
    return _Init([os.path.dirname(os.path.abspath(module.__file__))], job_name)


def compose(config_name=None, overrides=None, return_hydra_config=False, strict=None):
    if _state["dirs"] is None:
        raise ValueError("GlobalHydra is not initialized, use @hydra.main() or call one of the "
                         "hydra initialization methods first")
    register_resolvers()
    cfg, _ = compose_config(SearchPath(_state["dirs"]), config_name, list(overrides or []),
                            _state["job_name"])
    return cfg if return_hydra_config else task_config(cfg)
