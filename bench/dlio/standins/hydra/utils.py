"""The stand-in's `hydra.utils`: the two path helpers of Hydra's that a task may call."""

import os

from hydra.core.hydra_config import HydraConfig


def get_original_cwd():
    """The directory the job was started in (the stand-in never changes it)."""
    if not HydraConfig.initialized():
        raise ValueError("get_original_cwd() must only be used after HydraConfig is initialized")
    return HydraConfig.get().runtime.cwd


def to_absolute_path(path):
    base = get_original_cwd() if HydraConfig.initialized() else os.getcwd()
    return path if os.path.isabs(path) else os.path.join(base, path)
