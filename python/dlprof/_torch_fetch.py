"""Inside a loader worker's fetch (issue 50), for dlprof/_torch.py: the
`sample` region around each dataset[index] with the index in a counter
(DLPROF_PYTHON_SAMPLES=0: none), `collate` around the collate_fn, `decode`
around PIL's first load of an image, and `transform NAME` around each
transform of torchvision's Compose (v1 and v2), named by its class. The
rest of a sample's time is the dataset's own code. As in _torch.py,
exceptions pass through unchanged and the program's objects behave as
before: the wrappers forward every other attribute.
"""

import functools
import operator
import weakref

from . import _begin, _end, _lib
from ._env import flag

_counter = _lib["counter"]
_SAMPLE = b"sample"
_COLLATE = b"collate"
_DECODE = b"decode"


def instrument_fetcher(fetcher):
    """A worker's fetcher, in place: its map-style dataset's samples and its
    collate_fn in their regions."""
    dataset = getattr(fetcher, "dataset", None)
    if (_SAMPLES and dataset is not None and hasattr(fetcher, "dataset_iter") is False
            and callable(getattr(type(dataset), "__getitem__", None))):
        fetcher.dataset = _Samples(dataset)
    collate = getattr(fetcher, "collate_fn", None)
    if callable(collate):
        fetcher.collate_fn = _in_region(collate, _COLLATE)


# The per-sample records (DLPROF_PYTHON_SAMPLES=0: none): read once, in the
# worker that imports this module.
_SAMPLES = flag("DLPROF_PYTHON_SAMPLES", True)


def _count_index(index):
    """An index a sampler gave as a numpy integer or a 0-d integer tensor
    (SubsetRandomSampler over a numpy array, np.random.permutation,
    torch.randperm) is the sample's number too; any other key (a string, a
    slice, a tuple) names no sample."""
    try:
        number = operator.index(index)
    except Exception:
        return
    _counter(_SAMPLE, number)


def _is_batch_key(index):
    """A key that names several samples: a list of indices, or an array or
    tensor of them (a tuple may be one sample's key: (index, size))."""
    return type(index) is list or getattr(index, "ndim", 0) >= 1


class _Samples:
    """A worker's map-style dataset as its fetcher sees it: `sample` around
    each dataset[index], the index in a counter at its start. Everything
    else (len, __getitems__, attributes) is the dataset's own."""

    __slots__ = ("_d",)

    def __init__(self, dataset):
        self._d = dataset

    def __getitem__(self, index):
        if type(index) is not int and _is_batch_key(index):
            # A batch sampler's list of indices (batch_size=None with a
            # BatchSampler as the sampler): the dataset makes a whole batch,
            # no one sample; its time is the fetch's.
            return self._d[index]
        _begin(_SAMPLE)
        try:
            if type(index) is int:
                _counter(_SAMPLE, index)
            else:
                _count_index(index)
            return self._d[index]
        finally:
            _end()

    def __len__(self):
        return len(self._d)

    def __getattr__(self, attr):
        return getattr(self._d, attr)


def _in_region(fn, region):
    """`fn` inside `region` (its exceptions unchanged)."""
    @functools.wraps(fn)
    def timed(*args, **kwargs):
        _begin(region)
        try:
            return fn(*args, **kwargs)
        finally:
            _end()

    timed._dlprof_timed = True
    return timed


def instrument_preprocessing():
    """In a worker: torchvision's Compose and PIL's decode, where the program
    uses them (already imported: the dataset came with them)."""
    import sys
    for name in ("torchvision.transforms.transforms", "torchvision.transforms.v2._container"):
        module = sys.modules.get(name)
        compose = getattr(module, "Compose", None) if module is not None else None
        if compose is not None:
            _instrument_compose(compose)
    if "PIL.Image" in sys.modules:
        # PIL imports ImageFile with its first format plugin, at the first
        # Image.open: taken now, as that open would.
        import PIL.ImageFile as image_file
        load = getattr(image_file.ImageFile, "load", None)
        if callable(load) and not getattr(load, "_dlprof_timed", False):
            image_file.ImageFile.load = _in_region(load, _DECODE)


_transform_regions = {}  # a transform's class -> its region's name


def _transform_region(t):
    cls = type(t)
    name = _transform_regions.get(cls)
    if name is None:
        name = _transform_regions[cls] = ("transform " + cls.__name__).encode()
    return name


class _Transform:
    """One transform of a Compose, inside `transform NAME` (v2's Compose:
    handed its transforms so for one call)."""

    __slots__ = ("_t", "_region")

    def __init__(self, t):
        self._t = t
        self._region = _transform_region(t)

    def __call__(self, *args, **kwargs):
        _begin(self._region)
        try:
            return self._t(*args, **kwargs)
        finally:
            _end()

    def __getattr__(self, attr):
        return getattr(self._t, attr)


def _instrument_compose(compose):
    """Compose with `transform NAME` around each of its transforms. v1's
    __call__ is a plain loop (`for t in self.transforms: img = t(img)`,
    unchanged since torchvision 0.2), run here as it is with the regions;
    v2's forward, whose loop changed between versions, runs itself with its
    transforms timed for the call and restored after."""
    v2 = "v2" in compose.__module__ and callable(getattr(compose, "forward", None))
    method = "forward" if v2 else "__call__"
    orig = getattr(compose, method, None)
    if not callable(orig) or getattr(orig, "_dlprof_timed", False):
        return
    timed = weakref.WeakKeyDictionary()  # Compose -> (its transforms, timed copies)

    @functools.wraps(orig)
    def v1_call(self, img):
        transforms = getattr(self, "transforms", None)
        if not isinstance(transforms, (list, tuple)):
            return orig(self, img)
        for t in transforms:
            _begin(_transform_region(t))
            try:
                img = t(img)
            finally:
                _end()
        return img

    @functools.wraps(orig)
    def v2_forward(self, *args, **kwargs):
        transforms = getattr(self, "transforms", None)
        if not isinstance(transforms, list):
            return orig(self, *args, **kwargs)
        try:
            seen, copies = timed.get(self, (None, None))
        except TypeError:  # not weak-referenceable
            return orig(self, *args, **kwargs)
        if seen is not transforms or len(copies) != len(transforms):
            copies = [_Transform(t) for t in transforms]
            timed[self] = (transforms, copies)
        self.transforms = copies
        try:
            return orig(self, *args, **kwargs)
        finally:
            self.transforms = transforms

    call = v2_forward if v2 else v1_call
    call._dlprof_timed = True
    setattr(compose, method, call)
