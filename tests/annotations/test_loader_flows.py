"""dlprof.annotate_loader's flows: an arrow from the DataLoader worker that
loaded each batch (flow_start "batch" at the end of its "fetch_batch" region)
to the training loop's load_batch that received it (flow_finish), checked on a
real torch DataLoader (scripts/loader_flows.py) against what happened: which
process opened which sample's file, and which batches the loop received."""

import copy
import json
import os
import pickle
import unittest

import dltest.annotations as U

SAMPLES = 38  # batches of 4: 10 per epoch, the last of 2; 4 are prefetched
OPENS = {"open", "open64", "openat", "openat64"}


def inside(event, region):
    return region["ts"] <= event["ts"] and \
        event["ts"] + event.get("dur", 0) <= region["ts"] + region["dur"]


class BatchIndicesTest(unittest.TestCase):
    """What crosses the index queue, without the tracer: a plain list."""

    def test_pickles_and_iterates_plainly(self):
        import dlprof  # the build's (build/python: on PYTHONPATH under ctest)
        b = dlprof._BatchIndices([5, 6, 7], (1 << 63) | 9)
        for c in (pickle.loads(pickle.dumps(b)), copy.deepcopy(b)):
            self.assertIs(type(c), dlprof._BatchIndices)
            self.assertEqual((list(c), c.key), ([5, 6, 7], (1 << 63) | 9))
        self.assertEqual([i for i in b], [5, 6, 7])
        self.assertEqual(b, [5, 6, 7])


class LoaderFlowsTest(U.AnnotTestCase):

    def setUp(self):
        super().setUp()
        if not U.has_torch():
            self.skipTest("%s has no torch" % U.SYSTEM_PYTHON)
        for i in range(SAMPLES):
            U.write_file(self.sample(i), 100 + i)

    def sample(self, i):
        return os.path.join(self.data, "s%03d.bin" % i)

    def run_script(self, mode, traced=True):
        cmd = [U.SYSTEM_PYTHON, U.script("loader_flows.py"), self.data, mode]
        if traced:
            p = self.run_traced(cmd, timeout=300)
        else:
            env = U.base_env()
            env["PYTHONPATH"] = U.PYDIR
            p = U.run(cmd, env, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout.splitlines()[-1])

    def trace(self):
        events, rc = U.dump_jsonl(self.traces)
        self.assertEqual(rc, 0)
        app = [e for e in events if e.get("cat") == "app"]
        flows = {k: [e for e in app if e.get("kind") == k and e["name"] == "batch"]
                 for k in ("flow_start", "flow_finish")}
        fetches = [e for e in app if e.get("kind") == "region" and e["name"] == "fetch_batch"]
        loads = [e for e in app if e.get("kind") == "region" and e["name"] == "load_batch"]
        paths = {self.sample(i): i for i in range(SAMPLES)}
        opens = [e for e in events if e.get("name") in OPENS and e.get("path") in paths]
        for e in opens:
            e["sample"] = paths[e["path"]]
        return flows, fetches, loads, opens

    def check_flows(self, out, workers_per_run):
        """Every received batch: one flow_finish in the loop's load_batch, one
        flow_start of the same id at the end of the fetch_batch region of the
        worker that opened the batch's files, and nothing else."""
        main = out["main"]
        received = [(e, k, b) for e, epoch in enumerate(out["epochs"])
                    for k, b in enumerate(epoch)]
        flows, fetches, loads, opens = self.trace()
        starts, finishes = flows["flow_start"], flows["flow_finish"]

        # The loop: one finish per batch, in order, each inside a load_batch.
        finishes.sort(key=lambda e: e["ts"])
        self.assertEqual(len(finishes), len(received))
        for f in finishes:
            self.assertEqual((f["pid"], f["tid"]), (main, main))
            self.assertEqual(sum(1 for r in loads if r["pid"] == main and inside(f, r)), 1, f)
        ids = [f["flow"] for f in finishes]
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(sorted(s["flow"] for s in starts), sorted(ids))  # one start each

        # Every sample file is opened once per epoch, by a worker, never by the loop.
        self.assertEqual(sorted(o["sample"] for o in opens),
                         sorted(i for _, _, b in received for i in b))
        workers = {o["pid"] for o in opens}
        self.assertNotIn(main, workers)
        self.assertEqual(len(workers), workers_per_run)
        self.assertEqual(len(fetches), len(received))  # a fetch_batch per batch, no more

        start_of = {s["flow"]: s for s in starts}
        epoch_bits = set()
        for f, (epoch, k, batch) in zip(finishes, received):
            s = start_of[f["flow"]]
            self.assertIn(s["pid"], workers)
            self.assertEqual(s["ppid"], main)
            region = [r for r in fetches if (r["pid"], r["tid"]) == (s["pid"], s["tid"])
                      and inside(s, r)]
            self.assertEqual(len(region), 1, s)
            # The worker whose arrow it is, in that region, opened exactly the
            # batch's files; so did no one else (each file once per epoch).
            read = sorted(o["sample"] for o in opens
                          if (o["pid"], o["tid"]) == (s["pid"], s["tid"]) and inside(o, region[0]))
            self.assertEqual(read, sorted(batch), (epoch, k))
            # id: main pid << 42 | pass << 24 | send index.
            self.assertEqual(f["flow"] >> 42, main & 0x3FFFFF)
            epoch_bits.add((epoch, (f["flow"] >> 24) & 0x3FFFF))
        self.assertEqual(len(epoch_bits), len(out["epochs"]))
        self.assertEqual(len({bits for _, bits in epoch_bits}), len(out["epochs"]))
        return finishes

    def expected_batches(self):
        return [list(range(i, min(i + 4, SAMPLES))) for i in range(0, SAMPLES, 4)]

    def test_workers(self):
        out = self.run_script("workers")
        self.assertEqual(out["epochs"], [self.expected_batches()])
        finishes = self.check_flows(out, 2)
        # The send index is the batch's place in the sampler's order.
        self.assertEqual([f["flow"] & 0xFFFFFF for f in finishes], list(range(10)))

    def test_persistent_workers_two_epochs(self):
        out = self.run_script("persistent")
        self.assertEqual(out["epochs"], [self.expected_batches()] * 2)
        finishes = self.check_flows(out, 2)  # the same two workers both epochs
        self.assertEqual([f["flow"] & 0xFFFFFF for f in finishes], list(range(10)) * 2)

    def test_iterable_dataset(self):
        out = self.run_script("iterable")
        [epoch] = out["epochs"]
        self.assertEqual(sorted(i for b in epoch for i in b), list(range(SAMPLES)))
        for b in epoch:  # each batch from one worker: one parity
            self.assertEqual(len({i % 2 for i in b}), 1, b)
        self.check_flows(out, 2)

    def test_in_process_loader_has_no_flows(self):
        out = self.run_script("inproc")
        self.assertEqual(out["epochs"], [self.expected_batches()])
        flows, fetches, loads, opens = self.trace()
        self.assertEqual(flows, {"flow_start": [], "flow_finish": []})
        self.assertEqual(fetches, [])
        self.assertEqual({o["pid"] for o in opens}, {out["main"]})
        self.assertEqual(len(loads), 11)  # 10 batches and the StopIteration fetch

    def test_without_tracer(self):
        out = self.run_script("workers", traced=False)
        self.assertEqual(out["epochs"], [self.expected_batches()])
        self.assertEqual(U.trace_files(self.traces), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
