"""Loader workers reading their samples through memory maps (LMDB, np.memmap,
mmap'd shards): the page faults inside their fetches are reading, as read
calls are, against what each worker measured of itself
(scripts/torch_map_fetch.py), on files whose pages were evicted first.

- records copied out of a map, then torchvision's GaussianBlur: the
  preprocessing by part leaves the faults out (the dataset's own code no
  more than the samples' time outside their copies and transforms, plus the
  copies' time on and waiting for a CPU; it was all of the copies' time,
  asleep on the disk too), and each slow sample names the file it read
  through its map (it named none);
- shards read through their maps, a few evicted, the rest warmed by a read:
  the `few_files` finding names the evicted ones by the time their faults
  held the workers (within the workers' own clocks around their touches),
  not a warm file read once.
"""

import re

import dltest
from dltest.pytorch import TorchTestCase

SCRIPT = dltest.script("torch_map_fetch.py")
MS = 1000000
# A fault's recorded time may begin this long before the clock read just
# before the code that took it (lib/core/map_faults.h, kFaultEntryNs), and
# the TSC's conversion adds a microsecond or two (integration.clock).
FAULT_ENTRY_NS = 50000 + 4000
# A region's recorded end may lie this far past a clock read just after it
# (the TSC's conversion: integration.clock).
CLOCK_NS = 4000
# What a sample's own clocks leave out of its `sample` region, and the
# region's fetch beyond its samples (the fetcher's loop, the bootstrap's
# records): the dataset's part holds it.
SAMPLE_EDGES_NS = 300000


def duration_ns(text):
    """DurationText's "83.0 ms", "1.25 s", "950 us" in ns (its last digit's
    worth more)."""
    value, unit = text.split()
    scale = {"s": 1000 * MS, "ms": MS, "us": 1000}[unit]
    step = {"s": 0.01, "ms": 0.1, "us": 1}[unit]
    return int((float(value) + step) * scale)


class MapFetchTest(TorchTestCase):

    def test_preprocessing_parts_of_a_loader_reading_through_a_map(self):
        truth, _ = self.run_truth(SCRIPT, "blur", timeout=240)
        s = self.summary()
        wait = s["verdict"]["batch_wait"]
        parts = {p["name"]: p["ns"] for p in wait["preprocessing_parts"]}
        self.assertIn("GaussianBlur", parts, parts)
        # The dataset's own code: the samples' time outside their copies
        # and transforms, and of the copies only what their faults did not
        # hold: at most the copies' time on a CPU (the memcpy, a fault's
        # entry before it waits) and waiting for one (a busy machine's
        # preemption between two faults), not their time asleep on the disk.
        # (The regions' edges outside the sample's own clock: a few calls,
        # and on a loaded machine a preemption in them: 7.9 % over without,
        # 1 run in 4 at load 10 on 2 cores.)
        own = truth["sample_ns"] - truth["touch_ns"] - truth["transform_ns"]
        awake = truth["touch_cpu_ns"] + truth["touch_runnable_ns"]
        edges = SAMPLE_EDGES_NS * truth["samples"] + truth["between_runnable_ns"]
        self.assertLessEqual(parts["dataset"], own + awake + edges, (parts, truth))
        # GaussianBlur inside the samples' own brackets of their transforms.
        self.assertLessEqual(parts["GaussianBlur"],
                             truth["transform_ns"] + CLOCK_NS * truth["samples"],
                             (parts, truth))
        # The largest part where the workers' clocks leave no doubt.
        if truth["transform_ns"] > 2 * (own + awake):
            self.assertEqual(max(parts, key=parts.get), "GaussianBlur", (parts, truth))
        # The samples name the file they read through the map.
        slowest = s["slowest_samples"]
        self.assertTrue(slowest)
        for x in slowest:
            self.assertEqual(x["files"], [truth["file"]], x)

    def test_few_files_slow_through_their_maps(self):
        truth, _ = self.run_truth(SCRIPT, "shards", timeout=240)
        s = self.summary()
        found = [f for f in s["verdict"]["findings"] if f["rule"] == "few_files"]
        self.assertEqual(len(found), 1, s["verdict"]["findings"])
        f = found[0]
        m = re.search(r"the slowest to read is (\S+) \(([0-9.]+ \w+) in reads and page faults\)",
                      f["what"])
        self.assertIsNotNone(m, f["what"])
        named, held = m.group(1), duration_ns(m.group(2))
        touch = truth["touch_ns"]
        evicted = truth["evicted"]
        # One of the evicted shards, and among them one the workers' clocks
        # call slow (its touch at least half the slowest's); its faults held
        # the worker within its touch.
        self.assertIn(named, evicted, (f, truth))
        self.assertGreaterEqual(2 * touch[named], max(touch[p] for p in evicted), (f, truth))
        self.assertLessEqual(held, touch[named] + FAULT_ENTRY_NS + MS // 10, (f, truth))
        # The three files' time: the evicted shards', within their touches.
        self.assertLessEqual(f["cost_ns"], sum(touch[p] for p in evicted) + 3 * FAULT_ENTRY_NS,
                             (f, truth))
        # The slow samples name their shard, read only through its map.
        shard = {i: p for i, p in zip(truth["slow_samples"], evicted)}
        slow = [x for x in s["slowest_samples"] if x["index"] in shard]
        self.assertEqual(sorted(x["index"] for x in slow), truth["slow_samples"], slow)
        for x in slow:
            self.assertEqual(x["files"], [shard[x["index"]]], x)


if __name__ == "__main__":
    dltest.main()
