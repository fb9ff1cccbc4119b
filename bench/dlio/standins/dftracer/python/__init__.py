"""The stand-in's `dftracer.python`: what DLIO imports from pydftracer, doing
nothing, as pydftracer does when its library is off (DFTRACER_ENABLE false).

DLIO uses, and this covers:
* `dft_fn(cat, name=..., **args)` (DLIO's `Profile`): `.log` and `.log_init`
  as decorators, `.iter(iterable, ...)`, `.update(**args)`, and the object
  as a context manager;
* `ai` (DLIO's `dft_ai`): any attribute path (`ai.pipeline.epoch`,
  `ai.dataloader.fetch`, `ai.checkpoint.capture`, ...) is again such an
  object; used as a decorator it returns the function unchanged; `.iter(x)`
  returns x; `.start()`, `.stop()`, `.update(...)` do nothing;
* `dftracer.initialize_log(...)` (only called when DFTRACER_ENABLE is true),
  returning an object whose `finalize()` does nothing.

Returning the functions themselves, not wrappers, keeps the stand-in's cost
at zero inside the loop that dlprof measures.
"""

DFTRACER_ENABLE = False


class _NoOp:
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _NOOP

    def __call__(self, *args, **kwargs):
        # A decorator (with or without arguments first) gives the function back.
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __iter__(self):
        return iter(())

    def iter(self, iterable=(), *args, **kwargs):
        return iterable

    def log(self, func):
        return func

    def log_init(self, func):
        return func

    def log_static(self, func):
        return func

    def update(self, *args, **kwargs):
        return self

    def start(self, *args, **kwargs):
        return self

    def stop(self, *args, **kwargs):
        return self

    def finalize(self):
        return None


_NOOP = _NoOp()
dft_fn = _NoOp
ai = _NoOp()


class dftracer:  # noqa: N801  (pydftracer's name)
    @staticmethod
    def initialize_log(*args, **kwargs):
        return _NoOp()

    @staticmethod
    def get_instance():
        return _NoOp()
