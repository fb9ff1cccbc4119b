"""A PyTorch loop's own clock around its loader, for the brackets of
tests/dltest/brackets.py: imported by the loop scripts beside it.

raw_ns() reads CLOCK_MONOTONIC_RAW, the tracer's clock. InnerClock times a
DataLoader iterator class's _next_data, which torch's __next__ calls inside
the region dlprof wraps around next() (the bootstrap's load_batch, or
dlprof.annotate_loader's): each call's time is an inner bracket of its
region, the time around next() an outer one.
"""

import time


def raw_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)


class InnerClock:
    """Times every _next_data of iterator class `cls` from now on: the time
    of each call (`calls`), their sum (`total`), the first start and the
    last end."""

    def __init__(self, cls):
        inner = cls._next_data
        self.calls = []
        self.first = self.last = None

        def timed(iterator):
            t0 = raw_ns()
            if self.first is None:
                self.first = t0
            try:
                return inner(iterator)
            finally:
                self.last = raw_ns()
                self.calls.append(self.last - t0)
        cls._next_data = timed

    @property
    def total(self):
        return sum(self.calls)
