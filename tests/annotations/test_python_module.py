"""The dlprof Python module (python/dlprof): regions, decorator, marks,
counters and annotate_loader, with and without the tracer."""

import json
import os
import struct
import sys
import unittest

import dltest.annotations as U


class PythonModuleTest(U.AnnotTestCase):

    def setUp(self):
        super().setUp()
        U.write_file(os.path.join(self.data, "a.bin"), 70000)
        U.write_file(os.path.join(self.data, "b.bin"), 70000)

    def test_no_op_without_dlprof(self):
        env = U.base_env()
        env["PYTHONPATH"] = U.PYDIR
        p = U.run([sys.executable, U.script("py_regions.py"), self.data], env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "available=False active=False\nok\n")
        self.assertEqual(p.stderr, "")

    def data_reads(self, v):
        return sorted((e for e in v.io({"pread", "pread64"})
                       if e.get("path", "").startswith(self.data)), key=lambda e: e["ts"])

    def test_regions_and_io_inside_them(self):
        p = self.run_traced([sys.executable, U.script("py_regions.py"), self.data])
        self.assertEqual(p.stdout, "available=True active=True\nok\n")
        v = self.inspect("--innermost")
        regions = sorted(v.app("region"), key=lambda e: (e["ts"], -e["dur"]))
        self.assertEqual(
            [(e["path"], e["aux"]) for e in regions],
            [("epoch epoch=3", 0), ("inner", 1), ("load_batch", 0), ("load_batch", 0),
             ("epoch epoch=4", 0),
             ("loader_iter", 1),  # iter(loader)
             ("load_batch", 1), ("step", 1), ("load_batch", 1), ("step", 1),
             ("load_batch", 1), ("step", 1), ("load_batch", 1),  # StopIteration fetch
             ("failing", 0),
             ("loader_iter", 0), ("load_batch", 0), ("step", 0)])  # the loop that breaks
        got = [(os.path.basename(e["path"]), e["size"], e["region"]) for e in self.data_reads(v)]
        self.assertEqual(got, [
            ("a.bin", 4096, "epoch epoch=3"), ("a.bin", 1000, "inner"),
            ("a.bin", 2048, "load_batch"), ("a.bin", 2048, "load_batch"),
            ("a.bin", 512, "load_batch"), ("b.bin", 100, "step"),
            ("a.bin", 512, "load_batch"), ("b.bin", 100, "step"),
            ("a.bin", 512, "load_batch"), ("b.bin", 100, "step"),
            ("a.bin", 10, "failing"),
            ("a.bin", 512, "load_batch"),
            ("a.bin", 1, None)])
        # annotate_loader's: each pass's start, each batch, the first one's end.
        self.assertEqual([m["path"] for m in v.app("mark")],
                         ["after load step=1", "epoch loader=0 pass=0"] + ["batch loader=0"] * 3 +
                         ["end loader=0", "epoch loader=1 pass=0", "batch loader=1"])
        counters = {c["path"]: c for c in v.app("counter")}
        self.assertEqual((counters["samples"]["aux"], counters["samples"]["ret"]), (7, 0))
        self.assertEqual(counters["loss"]["ret"], 1)
        self.assertEqual(struct.unpack("<d", struct.pack("<Q", counters["loss"]["aux"]))[0], 0.5)
        # Integers beyond 64 bits signed as doubles (2**63 was stored as
        # -2**63); a numpy integer exactly (it was a double).
        self.assertEqual(counters["huge"]["ret"], 1)
        self.assertEqual(struct.unpack("<d", struct.pack("<Q", counters["huge"]["aux"]))[0],
                         2.0**63)
        self.assertEqual((counters["tokens"]["aux"], counters["tokens"]["ret"]), (2**60 + 1, 0))

        # Outermost figures: exact bytes per region.
        outer = self.inspect()
        self.assertEqual(outer.stats("epoch epoch=3")["read_bytes"], 5096)
        self.assertEqual(outer.stats("epoch epoch=4")["read_bytes"], 3 * 512 + 3 * 100)
        self.assertEqual(outer.stats("load_batch")["read_bytes"], 2 * 2048 + 512)
        self.assertEqual(outer.stats("load_batch")["instances"], 3)
        self.assertEqual(outer.stats("failing")["read_bytes"], 10)
        self.assertEqual(outer.stats("step")["read_bytes"], 0)

    def test_calls_keep_the_interpreter_lock(self):
        """300 samples' regions beside a runnable thread: the calls gave the
        interpreter lock up, and waited for the other thread's turn inside
        them: 167-300 ms in the calls by the program's clock on a quiet
        machine (33-56 ms under a load of 8, where the other thread runs
        less), 5-8 % on a DataLoader's transforms; 1-10 ms now, also under
        that load."""
        p = self.run_traced([sys.executable, U.script("py_busy_thread.py")])
        self.assertLess(float(p.stdout.split("in_calls_ms=")[1]), 30, p.stdout)
        self.assertEqual(len([e for e in self.inspect().app("region") if e["path"] == "sample"]),
                         300)

    def test_region_open_across_fork_is_the_parents_once(self):
        # The forked child unwinds the `with` it inherited: the region is
        # recorded once, the parent's, as long as the parent's block; it was
        # twice (the child's copy from the parent's begin: 140 ms of 86).
        path = os.path.join(self.data, "a.bin")
        p = self.run_traced([sys.executable, U.script("py_fork.py"), path])
        told = int(p.stdout.split("=")[1])
        v = self.inspect()
        got = [e for e in v.app("region") if e["path"] == "preprocess"]
        self.assertEqual(len(got), 1, got)
        self.assertLessEqual(got[0]["dur"], told)
        # At least the sleeps inside it: the child's 50 ms the parent waited
        # for, and its own 20 ms (not a few ms of the script's clock, which a
        # loaded machine can spend between the clock's read and the `with`).
        self.assertGreaterEqual(got[0]["dur"], 70_000_000)
        reads = [e for e in v.io({"pread", "pread64"}) if e.get("path") == path]
        self.assertEqual([e["region"] for e in reads], ["preprocess"] * 4)
        self.assertEqual({e["pid"] for e in reads} & {got[0]["pid"]}, set())  # the child's

    def test_generators_coroutines_and_zipped_loaders(self):
        """Regions of what the program timed itself. @region on a generator
        recorded its creation only (3.4 us for 30 ms of batches), on an
        async def its coroutine's creation; two annotate_loaders in a zip
        ended each other's regions (a step of 286 ms holding steps of 30
        and 0 ms, loads at depth 1): now one step per loop body."""
        p = self.run_traced([sys.executable, U.script("py_resumed.py")])
        told = json.loads(p.stdout)
        regions = sorted(self.inspect("--innermost").app("region"), key=lambda e: e["ts"])

        def named(name):
            return [e for e in regions if e["path"] == name]
        # A region per resumption, inside the program's next() of it.
        gen = named("batches")
        self.assertEqual(len(gen), len(told["gen_ns"]), gen)
        for e, ns in zip(gen, told["gen_ns"]):
            self.assertLessEqual(e["dur"], ns)
        self.assertGreaterEqual(sum(e["dur"] for e in gen[:3]), 3 * 10_000_000)
        # The coroutine: one region, its whole await.
        (co,) = named("fetch_async")
        self.assertLessEqual(co["dur"], told["async_ns"])
        self.assertGreaterEqual(co["dur"], 20_000_000)
        # The async generator: a region per step of `async for`, its await
        # in it (its creation alone before: one region of 5 us).
        agen = named("agen")
        self.assertEqual(len(agen), len(told["agen_ns"]), agen)
        for e, ns in zip(agen, told["agen_ns"]):
            self.assertLessEqual(e["dur"], ns)
        self.assertGreaterEqual(sum(e["dur"] for e in agen[:2]), 2 * 15_000_000)
        # zip(a, b): a step per loop body, holding the body the program
        # timed and within the two next() calls around it; the loads between.
        steps = named("step")
        waits = told["zip_wait_ns"]
        self.assertEqual(len(steps), len(told["zip_step_ns"]), steps)
        for i, (e, ns) in enumerate(zip(steps, told["zip_step_ns"])):
            self.assertGreaterEqual(e["dur"], ns)
            self.assertLess(e["dur"], ns + waits[i] + waits[i + 1])
        loads = named("load_batch")
        self.assertEqual(len(loads), 2 * len(steps) + 1)  # + a's that found the end
        self.assertLessEqual(sum(e["dur"] for e in loads), sum(told["zip_wait_ns"]))
        self.assertGreaterEqual(sum(e["dur"] for e in loads), 5 * 30_000_000)
        self.assertEqual({e["aux"] for e in steps + loads}, {0})  # nested in nothing

    def test_launcher_puts_the_module_on_pythonpath(self):
        env = U.base_env()
        p = U.run([U.LAUNCHER, "run", "--quiet", "--no-summary", "--dir", self.traces, "--",
                   sys.executable, U.script("py_regions.py"), self.data], env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "available=True active=True\nok\n")
        self.assertTrue(U.trace_files(self.traces))

    def test_annotated_loader_copies_and_pickles(self):
        """copy.copy, copy.deepcopy and pickle of an AnnotatedLoader (it sits
        in a training state that gets pickled): the copy is the same loader
        with the same names, and iterating it records its regions."""
        code = ("import copy, pickle, dlprof\n"
                "al = dlprof.annotate_loader([1, 2, 3], load_name='fetch', step_name='work')\n"
                "for f in (copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):\n"
                "    c = f(al)\n"
                "    print(list(c), c.load_name, c.step_name, len(c))\n")
        p = self.run_traced([sys.executable, "-c", code])
        self.assertEqual(p.stdout, "[1, 2, 3] fetch work 3\n" * 3)
        names = [e["path"] for e in self.inspect("--innermost").app("region")]
        self.assertEqual((names.count("fetch"), names.count("work")), (3 * 4, 3 * 3))

    def test_annotated_loader_keeps_no_loader_alive(self):
        """annotate_loader over a list made anew each epoch (no weak
        reference to it can be taken): the lists the program dropped are
        freed (every one was kept, up to 256: +80 MiB here)."""
        code = ("import gc, dlprof\n"
                "def rss():\n"
                "    with open('/proc/self/statm') as f: return int(f.read().split()[1]) * 4096\n"
                "before = rss()\n"
                "for epoch in range(40):\n"
                "    batches = [bytearray(b'x') * (1 << 20) for _ in range(2)]\n"
                "    for b in dlprof.annotate_loader(batches): b[0] = 1\n"
                "    del batches; gc.collect()\n"
                "print((rss() - before) >> 20)\n")
        p = self.run_traced([sys.executable, "-c", code])
        self.assertLess(int(p.stdout), 20, "RSS grew %s MiB" % p.stdout.strip())

    def run_torch(self, workers):
        python = U.SYSTEM_PYTHON
        if not U.has_torch():
            self.skipTest("%s has no torch" % python)
        U.write_file(os.path.join(self.data, "items.bin"), 8000)
        U.write_file(os.path.join(self.data, "model.bin"), 1000)
        p = self.run_traced([python, U.script("torch_loader.py"), self.data, str(workers)],
                            timeout=300)
        self.assertEqual(p.stdout, "ok steps=4\n")
        return p

    def check_torch(self, workers):
        self.run_torch(workers)
        items = os.path.join(self.data, "items.bin")
        model = os.path.join(self.data, "model.bin")
        outer = self.inspect()
        reads = [e for e in outer.io({"pread", "pread64"}) if e.get("path") in (items, model)]
        self.assertEqual(len(reads), 8 + 4)
        # Every read, in the main process or a worker, is in the epoch.
        self.assertEqual({e["region"] for e in reads}, {"epoch epoch=0"})
        epoch = outer.stats("epoch epoch=0")
        self.assertEqual(epoch["instances"], 1)
        self.assertGreaterEqual(epoch["read_bytes"], 8 * 1000 + 4 * 300)
        inner = self.inspect("--innermost")
        by_region = {}
        for e in inner.io({"pread", "pread64"}):
            if e.get("path") in (items, model):
                key = (os.path.basename(e["path"]), e["region"])
                by_region[key] = by_region.get(key, 0) + e["bytes"]
        self.assertEqual(by_region.get(("model.bin", "step")), 4 * 300)
        if workers == 0:
            self.assertEqual(by_region, {("items.bin", "load_batch"): 8000,
                                         ("model.bin", "step"): 1200})
        else:
            # Workers prefetch, each batch in a fetch_batch region of their
            # own (annotate_loader): innermost, that is their reads' region.
            self.assertEqual(by_region.get(("items.bin", "fetch_batch")), 8000)
            pids = {e["pid"] for e in inner.io() if e.get("path") == items}
            # (Inside the fetch, the bootstrap's sample and collate regions.)
            main = {e["pid"] for e in inner.app("region")
                    if e["path"] not in ("fetch_batch", "sample", "collate")}
            self.assertTrue(pids and not (pids & main), (pids, main))

    def test_torch_dataloader_in_process(self):
        self.check_torch(0)

    def test_torch_dataloader_with_workers(self):
        self.check_torch(2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
