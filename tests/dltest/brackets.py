"""A workload's own measure of a traced region, as two brackets (issue 51).

A program that reads CLOCK_MONOTONIC_RAW (the tracer's clock) just outside
a region call ("outer": before the region begins, after it has ended) and
just inside it ("inner": after it began, before it ends) knows the region's
recorded time lies between the two, however long a busy machine kept the
program off the processors between a clock read and a call. A test that
holds a figure to its brackets needs no tolerance, and never fails for
load: the brackets widen, the figure stays inside.

The truth a program writes names each figure twice: NAME_inner_ns and
NAME_outer_ns (programs/training_loop.c, scripts/torch_verdict.py).
"""

# The verdict's threshold for a data-bound loop (lib/analysis/findings/
# verdict_rules.cc, kBatchWaitPerMille): the batch wait's share of the loop.
DATA_BOUND_PER_MILLE = 100


class BracketsMixin:
    """For a unittest.TestCase."""

    def assert_bracketed(self, value, truth, name):
        """truth[NAME_inner_ns] <= value <= truth[NAME_outer_ns]."""
        self.assertLessEqual(truth[name + "_inner_ns"], value, (name, value, truth))
        self.assertLessEqual(value, truth[name + "_outer_ns"], (name, value, truth))


def data_bound(truth):
    """What the verdict must say of a loop from the program's brackets of
    its batch wait and its window: True (the wait is the threshold's share
    of the loop or more), False (less), None where the brackets allow
    either."""
    low = truth["wait_inner_ns"] * 1000 // max(truth["loop_outer_ns"], 1)
    high = truth["wait_outer_ns"] * 1000 // max(truth["loop_inner_ns"], 1)
    if low >= DATA_BOUND_PER_MILLE:
        return True
    if high < DATA_BOUND_PER_MILLE:
        return False
    return None
