"""The loaders' numbers (python/dlprof/_loader_numbers.py) on torch's real
DataLoader, untraced: a loader made again at the same creating call site,
once the earlier one there is gone and its passes over, takes its number L
(a training script that builds its loaders anew each epoch has two loaders,
not two per epoch); loaders alive at once stay distinct, and so do the
loaders a helper makes for two callers. The site mark names file and line.
"""

import sys
import unittest

import torch
from torch.utils.data import DataLoader

from dlprof._loader_numbers import _LoaderNumbers


def helper(ds):
    return DataLoader(ds, batch_size=2)


def make(ds, split):
    # A train/val helper two calls deep (build_dataloader(cfg, split)).
    return DataLoader(ds, batch_size=2, shuffle=split == "train")


def loader_for(ds, split):
    return make(ds, split)


class Sub(DataLoader):
    def __init__(self, ds):
        super().__init__(ds, batch_size=2)


class LoaderNumbersTest(unittest.TestCase):
    def setUp(self):
        # A class of its own per test: watch_sites wraps the class's __init__.
        self.cls = type("DL", (DataLoader,), {})
        self.numbers = _LoaderNumbers()
        self.numbers.watch_sites(self.cls)
        self.ds = torch.arange(8)

    def epoch(self, loader):
        """A whole pass, as the bootstrap numbers it: [L, passes, mark]."""
        n = self.numbers(loader)
        it = iter(loader)
        n[1] += 1  # (as dlprof/_torch.py's _begin_pass)
        self.numbers.began(loader, it)
        for _ in it:
            pass
        self.numbers.ended(it)
        return n

    def test_a_loader_made_anew_each_epoch_keeps_its_number(self):
        got = []
        for _ in range(3):
            line = _line() + 1
            train = self.cls(self.ds, batch_size=2)
            val = self.cls(self.ds, batch_size=4)
            got.append((self.epoch(train)[0], self.epoch(val)[0]))
        self.assertEqual(got, [(0, 1)] * 3)
        # Its passes are the object's own (new workers: pass 0 again), not 3.
        self.assertEqual(self.numbers(train)[1], 1)
        self.assertEqual(self.numbers(train)[2],
                         ("loader 0 site=test_loader_numbers.py:%d" % line).encode())

    def test_loaders_alive_at_once_stay_distinct(self):
        loaders = [self.cls(self.ds, batch_size=2) for _ in range(3)]
        for _ in range(2):
            self.assertEqual([self.epoch(dl)[0] for dl in loaders], [0, 1, 2])
        # Dropped as soon as iter() returned, their passes zipped together.
        its = []
        for _ in range(2):
            dl = self.cls(self.ds, batch_size=2)
            n = self.numbers(dl)
            its.append(iter(dl))
            self.numbers.began(dl, its[-1])
            its[-1]._n = n[0]
            del dl
        self.assertEqual([it._n for it in its], [3, 4])

    def test_a_pass_left_unfinished_holds_its_number(self):
        dl = self.cls(self.ds, batch_size=2)
        n = self.numbers(dl)[0]
        it = iter(dl)
        self.numbers.began(dl, it)
        next(it)
        del dl
        again = self.cls(self.ds, batch_size=2)
        self.assertNotEqual(self.numbers(again)[0], n)

    def test_a_helper_for_two_callers_is_two_sites(self):
        global DataLoader
        saved, DataLoader = DataLoader, self.cls
        try:
            got = []
            for _ in range(2):
                a = helper(self.ds)
                b = helper(self.ds)
                got.append((self.epoch(a)[0], self.epoch(b)[0]))
            self.assertEqual(got, [(0, 1)] * 2)
            # Named apart: by the caller (both were "test_loader_numbers.py:19").
            self.assertEqual(self.epoch(a)[2], b"loader 0 site=test_loader_numbers.py:19")
            line = sys._getframe().f_lineno - 5  # b = helper(...)
            self.assertEqual(self.epoch(b)[2], b"loader 1 site=test_loader_numbers.py:19 from "
                                               b"test_loader_numbers.py:%d" % line)
        finally:
            DataLoader = saved

    def test_a_helper_two_calls_deep_tells_train_from_val(self):
        # One line makes both, for one caller's line: the sampler tells the
        # shuffled train loader from the ordered val one, and the names.
        global DataLoader
        saved, DataLoader = DataLoader, self.cls
        try:
            got = []
            for _ in range(2):
                train = loader_for(self.ds, "train")
                val = loader_for(self.ds, "val")
                got.append((self.epoch(train)[:3:2], self.epoch(val)[:3:2]))
            self.assertEqual(got, [([0, b"loader 0 site=test_loader_numbers.py:24"],
                                    [1, b"loader 1 site=test_loader_numbers.py:24 #2"])] * 2)
        finally:
            DataLoader = saved

    def test_a_subclass_is_made_where_the_program_calls_it(self):
        # Sub's __init__ gets the loader first: no site; its caller is.
        self.numbers.watch_sites(DataLoader)
        try:
            line = _line() + 1
            dl = Sub(self.ds)
            self.assertEqual(self.numbers(dl)[2],
                             ("loader 0 site=test_loader_numbers.py:%d" % line).encode())
        finally:
            DataLoader.__init__ = DataLoader.__init__.__wrapped__

    def test_what_is_no_dataloader_is_numbered_as_before(self):
        self.assertEqual([self.numbers([1, 2])[0], self.numbers(None)[0]], [0, 1])
        self.assertIsNone(self.numbers(self.cls.__new__(self.cls))[2])


def _line():
    """The caller's line."""
    return sys._getframe(1).f_lineno


if __name__ == "__main__":
    unittest.main()
