"""The numbers of a process's loaders (L in the marks `epoch loader=L pass=N`,
`end loader=L`, `batch loader=L`), for dlprof.annotate_loader and the PyTorch
bootstrap (dlprof/_torch.py) alike: one instance per process, in
dlprof/__init__.py."""

import itertools
import weakref


class _LoaderNumbers:
    """[L, passes begun] of each loader, L numbered in the order loaders are
    first iterated in the process: annotate_loader's and the bootstrap's
    (dlprof/_torch.py) alike, so that a loader is one L in the marks of
    both (`epoch loader=L pass=N`, `end loader=L`)."""

    _MAX_UNREFERENCED = 256  # loaders without weak references numbered by id

    def __init__(self):
        # id -> numbers, for a loader that takes no weak reference (a list):
        # never the loader itself, which the program may drop (a list of
        # batches made anew each epoch would stay alive). A list made at
        # the address of one that died takes its numbers: a loader rebuilt.
        self._weak = weakref.WeakKeyDictionary()
        self._by_id = {}
        self._count = itertools.count()

    def __call__(self, loader):
        if loader is None:
            return [next(self._count), 0]
        try:
            n = self._weak.get(loader)
            if n is None:
                n = self._weak[loader] = [next(self._count), 0]
            return n
        except TypeError:
            pass
        n = self._by_id.get(id(loader))
        if n is not None:
            return n
        n = [next(self._count), 0]
        if len(self._by_id) < self._MAX_UNREFERENCED:  # beyond: a number per pass
            self._by_id[id(loader)] = n
        return n
