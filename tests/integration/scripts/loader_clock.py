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
    wrap() adds) from now on: the time of each call (`calls`) and when it
    began and ended (`spans`), their sum (`total`), the first start and the
    last end. A call made while another
    timed call runs (the DataLoader iterator's _reset inside its own
    constructor, both wrapped) is part of that one, not timed again."""

    def __init__(self, cls=None, method="_next_data"):
        self.calls, self.spans = [], []
        self.first = self.last = None
        self.depth = 0
        if cls is not None:
            self.wrap(cls, method)

    def wrap(self, cls, method="_next_data"):
        inner = getattr(cls, method)

        def timed(obj, *args, **kwargs):
            if self.depth:
                return inner(obj, *args, **kwargs)
            self.depth += 1
            t0 = raw_ns()
            if self.first is None:
                self.first = t0
            try:
                return inner(obj, *args, **kwargs)
            finally:
                self.last = raw_ns()
                self.calls.append(self.last - t0)
                self.spans.append((t0, self.last))
                self.depth -= 1
        setattr(cls, method, timed)

    @property
    def total(self):
        return sum(self.calls)


def first_period(stepped):
    """The first step's period as docs/ANALYSIS.md's loops without a
    DataLoader take it (StepLoop::FirstPeriod: the second step's, or the
    median of the second to fifth's where that is shorter), bracketed from
    `stepped`, the clock reads (before, after) around each step's
    opt.step(): (inner, outer). A step's end lies inside its reads, so a
    period lies between the inner and outer differences, and the rule (a
    minimum and a median) keeps that order."""
    def rule(periods):
        if len(periods) < 3:
            return periods[0]
        return min(periods[0], sorted(periods)[(len(periods) - 1) // 2])
    marks = stepped[:5]
    inner = [b2 - a1 for (_, a1), (b2, _) in zip(marks, marks[1:])]
    outer = [a2 - b1 for (b1, _), (_, a2) in zip(marks, marks[1:])]
    return rule(inner), rule(outer)


def overlap(a, b):
    """How long the intervals a and b ((start, end) each) overlap."""
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def thread_clocks():
    """The calling thread's CPU time and its time waiting for a CPU
    (/proc/thread-self/schedstat's run_delay), or None where the kernel
    keeps no run_delay."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            ran, delay = (int(x) for x in f.read().split()[:2])
    except (OSError, ValueError):
        return None
    return (time.thread_time_ns(), delay) if ran else None


class Blocked:
    """The calling thread's time blocked (asleep: on a read, a fault) over a
    stretch, a lower bound: its wall time less its CPU time and its wait
    for a CPU, these read just outside the wall clock's reads. `ns` is None
    where the kernel keeps no run_delay."""

    def __enter__(self):
        self.before = thread_clocks()
        self.t0 = raw_ns()
        return self

    def __exit__(self, *exc):
        t1 = raw_ns()
        after = thread_clocks()
        self.ns = None
        if self.before is not None and after is not None:
            self.ns = max(0, t1 - self.t0 - (after[0] - self.before[0]) -
                          (after[1] - self.before[1]))
        return False
