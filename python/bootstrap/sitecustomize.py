"""dlprof's Python bootstrap: zero-code instrumentation of PyTorch.

The dlprof runtime (libdlprof.so) puts the directory holding this file first
on PYTHONPATH in every traced process, so that Python's `site` imports it as
`sitecustomize` at start-up, as ddtrace-run and opentelemetry-instrument do.
It then:

1. takes its own directory back off sys.path and os.environ["PYTHONPATH"]
   (exactly what the runtime added: "DIR" -> unset, "DIR:OLD" -> "OLD"), so
   that the program sees the path it would have seen without dlprof;
2. leaves a finder on sys.meta_path that does nothing but wait for
   `torch.utils.data` (and `torch.optim.optimizer`, and the checkpoint
   modules `torch.distributed.checkpoint` and `safetensors.torch`) to be
   imported; only then is the dlprof package (a copy beside this file)
   loaded, and, when the runtime is active, dlprof/_torch.py instruments
   PyTorch's DataLoader, optimizers and checkpoints (docs/PYTHON.md,
   "PyTorch without code changes");
3. runs the user's own sitecustomize (the next one on sys.path) by importing
   it in its place, once, as site.py would have; with none, it raises the
   ImportError site.py ignores, so no `sitecustomize` module is left.

Nothing else happens at start-up: no torch, ctypes or threading import, so a
process that never imports torch pays for one Python call per later import.
DLPROF_PYTHON=0 (or DLPROF_ENABLE=0) leaves only steps 1 and 3.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _strip_path():
    """Removes what the runtime added: our directory first on PYTHONPATH
    (more than once, if a launcher and the runtime both put it there)."""
    old = os.environ.get("PYTHONPATH")
    ours = 0
    rest = old
    while rest is not None:
        first, sep, tail = rest.partition(os.pathsep)
        if not first or os.path.abspath(first) != _HERE:
            break
        ours += 1
        rest = tail if sep else None
    if ours == 0:
        return  # not put there by the runtime: leave the user's path alone
    if rest is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = rest
    while _HERE in sys.path:
        at = sys.path.index(_HERE)
        del sys.path[at]
        # "DIR:" (the user's PYTHONPATH was set but empty): the empty entry
        # after ours gave Python the working directory, which PYTHONPATH=""
        # does not.
        if rest == "" and at < len(sys.path) and sys.path[at] == os.getcwd():
            del sys.path[at]
    sys.path_importer_cache.pop(_HERE, None)


class _TorchWatch:
    """A meta-path finder that finds nothing itself: when a watched module is
    imported, it lets the other finders find it and hands the module to
    dlprof/_torch.py once it has been executed."""

    WATCHED = ("torch.utils.data", "torch.optim.optimizer", "torch.distributed.checkpoint",
               "safetensors.torch")

    def __init__(self):
        self.busy = False
        self.seen = []       # watched modules executed so far, in order
        self.hooks = None    # dlprof._torch, once loaded; False: given up

    def find_spec(self, name, path=None, target=None):
        if name not in self.WATCHED or self.busy:
            return None
        self.busy = True
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.busy = False
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ThenHook(spec.loader, self)
        return spec

    def executed(self, module):
        self.seen.append(module)
        if "torch.utils.data" not in [m.__name__ for m in self.seen]:
            return  # nothing before the data loader is there
        if self.hooks is None:
            self.hooks = _load_hooks()
        if not self.hooks:
            self.remove()
            return
        while self.seen:
            self.hooks.instrument(self.seen.pop(0))
        if self.hooks.done():
            self.remove()

    def remove(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


class _ThenHook:
    """The real loader, and then the hook; the module ends up with the real
    loader as its __loader__ and __spec__.loader, as without dlprof."""

    def __init__(self, loader, watch):
        self.loader = loader
        self.watch = watch

    def create_module(self, spec):
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        try:
            self.loader.exec_module(module)
        finally:
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self.loader
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self.loader
        try:
            self.watch.executed(module)
        except Exception:  # never break the program's import over tracing
            self.watch.hooks = False
            self.watch.remove()

    def __getattr__(self, attr):  # get_source, get_filename, is_package...
        return getattr(self.loader, attr)


def _load_hooks():
    """dlprof._torch from the program's own dlprof when it is this one, else
    from the copy beside this file; None when the runtime is not active."""
    import importlib
    import importlib.machinery
    import importlib.util

    pkg = sys.modules.get("dlprof")
    if pkg is None:
        # The program's own dlprof, when it is this one (dlprof run puts the
        # package on PYTHONPATH): one module, so that annotate_loader's
        # iterators are known to the hooks.
        spec = importlib.machinery.PathFinder.find_spec("dlprof")
        where = spec.submodule_search_locations if spec is not None else None
        if where and os.path.isfile(os.path.join(where[0], "_torch.py")):
            pkg = importlib.import_module("dlprof")
    if pkg is None or not hasattr(pkg, "_AUTO_TORCH"):
        # The copy, always under a private name: as `dlprof` it would make
        # `import dlprof` work where it fails untraced, and shadow a dlprof
        # the program puts on sys.path later (which then shares the copy's
        # markers: dlprof/__init__.py).
        spec = importlib.machinery.PathFinder.find_spec("dlprof", [_HERE])
        if spec is None:
            return None
        name = "_dlprof_bootstrap"
        spec = importlib.util.spec_from_file_location(
            name, spec.origin, submodule_search_locations=spec.submodule_search_locations)
        pkg = importlib.util.module_from_spec(spec)
        sys.modules[name] = pkg
        try:
            spec.loader.exec_module(pkg)
        except BaseException:
            del sys.modules[name]
            raise
        if not pkg.active():
            del sys.modules[name]  # nothing to record: no trace of the copy left
            return None
    if not pkg.active():
        return None
    return importlib.import_module(pkg.__name__ + "._torch")


def _start():
    _strip_path()
    if os.environ.get("DLPROF_PYTHON") == "0" or os.environ.get("DLPROF_ENABLE") == "0":
        return
    watch = _TorchWatch()
    sys.meta_path.insert(0, watch)
    for name in _TorchWatch.WATCHED:  # imported already (by a .pth file)
        if name in sys.modules:
            try:
                watch.executed(sys.modules[name])
            except Exception:
                watch.remove()
                return


_start()

# The user's own sitecustomize, if any, now that our directory is off the
# path: imported in our place, so that site.py handles its errors as usual.
del sys.modules[__name__]
import sitecustomize  # noqa: E402,F401  (raises ImportError when there is none)
