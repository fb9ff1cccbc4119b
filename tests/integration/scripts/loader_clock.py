"""A PyTorch loop's own clock around its loader, for the brackets of
tests/dltest/brackets.py: imported by the loop scripts beside it.

raw_ns() reads CLOCK_MONOTONIC_RAW, the tracer's clock. InnerClock times
methods that torch calls inside the regions dlprof wraps around iter() and
next() (the bootstrap's loader_iter and load_batch, or dlprof.annotate_
loader's): a DataLoader iterator class's _next_data inside next(), the
DataLoader's _get_iterator inside iter(). Each call's time is an inner
bracket of its region, the time around the call an outer one.
"""

import time


def raw_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)


class InnerClock:
    """Times every call of `method` of class `cls` (and of each class
    wrap() adds) from now on: the time of each call (`calls`), their sum
    (`total`), the first start and the last end."""

    def __init__(self, cls=None, method="_next_data"):
        self.calls = []
        self.first = self.last = None
        if cls is not None:
            self.wrap(cls, method)

    def wrap(self, cls, method="_next_data"):
        inner = getattr(cls, method)

        def timed(obj):
            t0 = raw_ns()
            if self.first is None:
                self.first = t0
            try:
                return inner(obj)
            finally:
                self.last = raw_ns()
                self.calls.append(self.last - t0)
        setattr(cls, method, timed)

    @property
    def total(self):
        return sum(self.calls)


def overlap(a, b):
    """How long the intervals a and b ((start, end) each) overlap."""
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))
