"""The region `optimizer_step` around each optimizer.step() (torch 2.x's
global step hooks, `register_optimizer_step_pre_hook` and
`register_optimizer_step_post_hook`; torch 1.13: each Optimizer class's step
wrapped once), and which thread steps: the training loop's.
"""

import functools
import threading

from . import _begin, _end

_STEP = b"optimizer_step"
_tls = threading.local()  # .steps: optimizer steps open on this thread
_stepper = None           # the thread that stepped last (threading.get_ident)


def loop_thread():
    """The thread that steps the optimizer (the training loop's), or None
    before any step."""
    return _stepper


def close_stale_step():
    # An optimizer step that raised skips torch 2.x's post hooks: its region
    # is closed when the loop asks for the next batch.
    if getattr(_tls, "steps", 0):
        _tls.steps = 0
        _end()


def _step_begin():
    global _stepper
    n = getattr(_tls, "steps", 0)
    if n == 0:
        _stepper = threading.get_ident()
        _begin(_STEP)
    _tls.steps = n + 1  # a step calling another optimizer's step counts once


def _step_end():
    n = getattr(_tls, "steps", 0)
    if n > 0:
        _tls.steps = n - 1
        if n == 1:
            _end()


def instrument_optim(module):
    pre = getattr(module, "register_optimizer_step_pre_hook", None)
    post = getattr(module, "register_optimizer_step_post_hook", None)
    if pre is not None and post is not None:  # torch >= 2.0
        pre(lambda optimizer, args, kwargs: _step_begin())
        post(lambda optimizer, args, kwargs: _step_end())
        return
    # torch 1.13: Optimizer.__init__ (and __setstate__) wrap the class's step
    # once, through _hook_for_profile; ours goes around it, once per class.
    opt = module.Optimizer
    orig_hook = getattr(opt, "_hook_for_profile", None)
    if orig_hook is None:
        return

    @functools.wraps(orig_hook)
    def _hook_for_profile(self):
        orig_hook(self)
        try:
            cls = type(self)
            step = cls.step
            if not getattr(step, "_dlprof_step", False):
                cls.step = _wrap_step(step)
        except Exception:
            pass

    opt._hook_for_profile = _hook_for_profile


def _wrap_step(step):
    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        _step_begin()
        try:
            return step(*args, **kwargs)
        finally:
            _step_end()

    wrapper._dlprof_step = True
    return wrapper
