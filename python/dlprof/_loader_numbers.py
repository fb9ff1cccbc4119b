"""The numbers of a process's loaders (L in the marks `epoch loader=L pass=N`,
`end loader=L`, `batch loader=L`), for dlprof.annotate_loader and the PyTorch
bootstrap (dlprof/_torch.py) alike: one instance per process, in
dlprof/__init__.py.

A DataLoader made again where an earlier one was made (a training script
that builds its train and val loaders anew each epoch) is the same loader
to the user, so it takes the earlier one's L (docs/ANALYSIS.md, "loaders"):
where it was made is its creating call site, the first frame outside torch
and dlprof that is no __init__ of the loader's class or of a base (a
subclass's, a wrapper installed as one), with that frame's caller (a helper
that makes the train and the val loader is two sites) and the loader's kind
of sampler and batch size (a helper two calls deep that makes a shuffled
train loader and an ordered val loader is two sites too). At its first pass it takes
the lowest L of that site whose DataLoader is gone and whose passes are all
over: loaders alive at once (a list of them made in one comprehension, or
iterators of loaders dropped as soon as iter() returned, zipped together)
stay distinct. Its passes count from 0 again (new workers: pass N of
`epoch loader=L pass=N` is this object's, as persistent_workers' advice
wants). The bootstrap tells the trace the site at each pass, in the mark
`loader L site=FILE:LINE` (FILE: the frame's file name without its folder),
each pass so that a bounded trace that kept only the last segments has it.
Two sites at one line (a helper's) are named apart: `FILE:LINE from
FILE:LINE` (the caller's) for the second where the callers differ, else
`FILE:LINE #2`.
"""

import functools
import itertools
import os
import sys
import weakref


class _LoaderNumbers:
    """[L, passes begun, site mark or None] of each loader, L numbered in
    the order loaders are first iterated in the process: annotate_loader's
    and the bootstrap's (dlprof/_torch.py) alike, so that a loader is one L
    in the marks of both (`epoch loader=L pass=N`, `end loader=L`)."""

    _MAX_UNREFERENCED = 256  # loaders without weak references numbered by id

    def __init__(self):
        # id -> numbers, for a loader that takes no weak reference (a list):
        # never the loader itself, which the program may drop (a list of
        # batches made anew each epoch would stay alive). A list made at
        # the address of one that died takes its numbers: a loader rebuilt.
        self._weak = weakref.WeakKeyDictionary()
        self._by_id = {}
        self._count = itertools.count()
        # DataLoader -> (site key, site name), from its __init__ (watch_sites);
        # site key -> [[L, its latest DataLoader (a weak reference), its
        # iterators in a pass]]; DataLoader or iterator -> that entry.
        self._sites = weakref.WeakKeyDictionary()
        self._made = {}
        self._entry = weakref.WeakKeyDictionary()
        self._names = {}  # site name -> the site keys named so far, in order
        self._latest = {}  # site key -> the latest DataLoader made there (a weak reference)

    def __call__(self, loader):
        if loader is None:
            return [next(self._count), 0, None]
        try:
            n = self._weak.get(loader)
            if n is None:
                n = self._weak[loader] = self._number(loader)
            return n
        except TypeError:
            pass
        n = self._by_id.get(id(loader))
        if n is not None:
            return n
        n = [next(self._count), 0, None]
        if len(self._by_id) < self._MAX_UNREFERENCED:  # beyond: a number per pass
            self._by_id[id(loader)] = n
        return n

    def _number(self, loader):
        site = self._sites.get(loader)
        if site is None:
            return [next(self._count), 0, None]
        made = self._made.setdefault(site[0], [])
        for e in made:  # in order of L: the lowest free one
            if e[1]() is None and not e[2]:
                e[1] = weakref.ref(loader)
                break
        else:
            e = [next(self._count), weakref.ref(loader), weakref.WeakSet(), self._name(*site)]
            made.append(e)
        self._entry[loader] = e
        return [e[0], 0, ("loader %d site=%s" % (e[0], e[3])).encode()]

    def _name(self, key, name):
        """`name`, or where another site has it already (one helper's line,
        two callers), told apart: by its caller, else by its order."""
        keys = self._names.setdefault(name, [])
        if key not in keys:
            keys.append(key)
        n = keys.index(key)
        if n == 0:
            return name
        if key[2] is not None and key[2:4] != keys[0][2:4]:
            return "%s from %s:%d" % (name, os.path.basename(key[2]), key[3])
        return "%s #%d" % (name, n + 1)

    def began(self, loader, it):
        """iter(loader) returned `it` for a pass: in progress until ended(it)
        or until `it` is gone (a loop that broke out)."""
        e = self._entry.get(loader)
        if e is not None:
            e[2].add(it)
            self._entry[it] = e

    def ended(self, it):
        """The pass of `it` reached its end (StopIteration). Called where
        the program's StopIteration is on its way: raises nothing."""
        try:
            e = self._entry.get(it)
            if e is not None:
                e[2].discard(it)
        except Exception:
            pass

    def site_key(self, loader):
        """Where `loader` was made (a key for made_anew), or None."""
        try:
            site = self._sites.get(loader)
        except TypeError:
            return None
        return site[0] if site is not None else None

    def made_anew(self, key):
        """Whether a DataLoader made at site `key` is alive and not yet
        iterated: the loop has rebuilt its loader there (`loader =
        DataLoader(...)` made the new one before it dropped the old), and a
        pass over it is to come."""
        ref = self._latest.get(key) if key is not None else None
        made = ref() if ref is not None else None
        return made is not None and made not in self._entry

    def watch_sites(self, cls):
        """Records where each `cls` (DataLoader) is made, wrapping its
        __init__ (the class's: the program's objects are untouched)."""
        orig = cls.__init__
        if getattr(orig, "_dlprof", False):
            return
        skip = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                     for m in (sys.modules.get("torch"), sys.modules.get(__package__))
                     if m is not None and getattr(m, "__file__", None))
        sites, latest = self._sites, self._latest

        @functools.wraps(orig)
        def __init__(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            try:
                if self not in sites:
                    sites[self] = site = _site(self, sys._getframe(1), skip)
                    if site is not None:
                        latest[site[0]] = weakref.ref(self)
            except Exception:
                pass

        __init__._dlprof = True
        cls.__init__ = __init__


def _site(loader, frame, skip):
    """(key, name) of the frame that made `loader`: the first outside the
    folders `skip` that is no __init__ of its class or of a base (nor a
    wrapper installed as one: __wrapped__), with its caller's file and
    line in the key. Told by their code, not by the frames' locals: reading
    f_locals would keep a snapshot of them on the program's frame, and the
    loader it rebuilds alive with it."""
    inits = set()
    for c in type(loader).__mro__:
        f = c.__dict__.get("__init__")
        while f is not None and len(inits) < 64:
            code = getattr(f, "__code__", None)
            if code is not None:
                inits.add(code)
            f = getattr(f, "__wrapped__", None)
    while frame is not None and (frame.f_code.co_filename.startswith(skip)
                                 or frame.f_code in inits):
        frame = frame.f_back
    if frame is None:
        return None
    up = frame.f_back
    try:  # (a loader class of the program's own may have neither)
        kind = (type(loader.sampler).__name__, loader.batch_size)
    except Exception:
        kind = None
    key = (frame.f_code.co_filename, frame.f_lineno,
           up.f_code.co_filename if up is not None else None, up.f_lineno if up else 0, kind)
    return key, "%s:%d" % (os.path.basename(frame.f_code.co_filename), frame.f_lineno)
