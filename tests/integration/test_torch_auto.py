"""PyTorch without code changes: training loops on real torch (CPU) that never
import dlprof (scripts/torch_auto.py), traced under LD_PRELOAD with the
bootstrap (build/lib/dlprof-python) first on PYTHONPATH as the runtime puts
it. Each loop measures its own truth (every next() call on a loader iterator
and the time in it, the batches' samples, optimizer.step() calls) and the
decoded trace must agree: a load_batch region per call, as long as it, with
the loader's mark; an optimizer_step region per step; a fetch_batch region
in a worker per batch, whose flow ends in the load_batch that received it,
and in which that worker read exactly the batch's samples.

Also: the program's output, sys.path and PYTHONPATH are what they are
without dlprof; the user's own sitecustomize runs once; a program that never
imports torch has the same output and the same events with and without the
bootstrap; `python -I` runs untouched. (Loops of other shapes:
test_torch_loop_shapes.py.)"""

import collections
import json
import os
import subprocess
import sys

import dltest
from dltest.pytorch import TorchTestCase, bootstrap_env

SCRIPT = dltest.script("torch_auto.py")
BOOTSTRAP = dltest.BOOTSTRAP
# Slack between the script's clock around next() and the region inside it:
# the wrapper's own work (~10 us), and a descheduled moment on a loaded machine.
SLACK_NS = 2_000_000


def bootstrap_events(trace):
    return [e for e in trace.events if e.get("path", "").startswith(BOOTSTRAP)]


def inside(e, r):
    return (e["pid"], e["tid"]) == (r["pid"], r["tid"]) and \
        r["ts"] <= e["ts"] <= r["ts"] + r["dur"]


class TorchAutoTest(TorchTestCase):

    def run_loops(self, scenarios, env=None, args=()):
        truth, p = self.run_truth(SCRIPT, ",".join(scenarios), env=env, python_args=args,
                                  done=False)
        return truth, self.decode(), p

    def check(self, truth, trace, worker_loaders):
        """The trace against the truth; returns the main process's regions."""
        main = truth["main"]
        names = [s["name"] for s in truth["scenarios"]]
        app = [e for e in trace.events if e.get("cat") == "app"]
        regions = collections.defaultdict(list)
        for e in app:
            if e["kind"] == "region":
                regions[e["name"]].append(e)
        for v in regions.values():
            v.sort(key=lambda e: e["ts"])
        marks = [e for e in app if e["kind"] == "mark" and e["pid"] == main]
        self.assertIn("dlprof_auto torch", [m["name"] for m in marks])
        # The bootstrap's imports (its dlprof package, loaded once torch's
        # data loader is) are the tracer's I/O, not the program's.
        self.assertEqual(bootstrap_events(trace), [])

        # A load_batch per next() call, in order, each as long as the call
        # and holding its loader's mark: `raised` where the call raised (it
        # held none, and was counted as a batch).
        loads = [r for r in regions["load_batch"]]
        self.assertEqual({r["pid"] for r in loads}, {main})
        self.assertEqual(len(loads), len(truth["calls"]))
        got, slack = [], []
        for r, (loader, kind, ns) in zip(loads, truth["calls"]):
            inner = [m["name"] for m in marks if inside(m, r)
                     and m["name"].split(" ")[0] in ("batch", "end", "raised")]
            got.append(inner)
            self.assertLessEqual(r["dur"], ns + 1_000_000, (loader, kind))
            slack.append(ns - r["dur"])
        kinds = {"error": "raised"}
        self.assertEqual(got, [["%s loader=%d" % (kinds.get(kind, kind), loader)]
                               for loader, kind, _ in truth["calls"]])
        # The region is the call but for the wrapper's own few microseconds:
        # nine calls in ten within SLACK_NS of it (a loaded machine may
        # deschedule the process between the script's clock and the region).
        slack.sort()
        self.assertLess(slack[len(slack) * 9 // 10], SLACK_NS, slack)
        # The summary's batches are the calls that gave one; a call that
        # raised is in the wait, counted apart (it was counted as a batch).
        wait = self.summary()["verdict"]["batch_wait"]
        kinds_seen = collections.Counter(kind for _, kind, _ in truth["calls"])
        self.assertEqual((wait["steps"], wait["raised"]), (kinds_seen["batch"], kinds_seen["error"]))

        # Optimizer steps: one region per step() call, within each scenario's
        # loop (its loaders' first to last load_batch).
        steps = [r for r in regions["optimizer_step"] if r["pid"] == main]
        self.assertEqual(len(steps), sum(s["steps"] for s in truth["scenarios"]))
        first = 0
        by_loader = collections.defaultdict(list)
        for r, (loader, _, _) in zip(loads, truth["calls"]):
            by_loader[loader].append(r)
        for s in truth["scenarios"]:
            mine = [r for n in range(first, first + s["loaders"]) for r in by_loader[n]]
            first += s["loaders"]
            lo, hi = mine[0]["ts"], max(r["ts"] + r["dur"] for r in mine)
            self.assertEqual(sum(1 for r in steps if lo <= r["ts"] <= hi), s["steps"], s["name"])
            # The loop's wall time measured by the script holds the window.
            self.assertLessEqual(hi - lo, s["loop_ns"] + 1_000_000, s["name"])

        # Workers: a fetch_batch per batch of a loader with workers, ending
        # with the flow that the load_batch receiving the batch finishes.
        starts = {e["flow"]: e for e in app if e["kind"] == "flow_start" and e["name"] == "batch"}
        finishes = [e for e in app if e["kind"] == "flow_finish" and e["name"] == "batch"]
        self.assertEqual({e["pid"] for e in finishes} - {main}, set())
        fetches = regions["fetch_batch"]
        files = {os.path.join(self.data, "s%03d.bin" % i): i for i in range(48)}
        opens = [e for e in trace.events if e.get("path") in files and e.get("name") in
                 ("open", "open64", "openat", "openat64")]
        seen = collections.Counter()
        flowed = 0
        for r, (loader, kind, _) in zip(loads, truth["calls"]):
            fin = [f for f in finishes if inside(f, r)]
            if kind != "batch" or loader not in worker_loaders:
                self.assertEqual(fin, [], (loader, kind))
                continue
            self.assertEqual(len(fin), 1, (loader, kind))
            start = starts[fin[0]["flow"]]
            self.assertNotEqual(start["pid"], main)
            self.assertEqual(trace.ppid_of(start["pid"]), main)
            [fetch] = [x for x in fetches if inside(start, x)]
            self.assertEqual(start["ts"], max(start["ts"], fetch["ts"]))
            batch = truth["batches"][str(loader)][seen[loader]]
            seen[loader] += 1
            read = sorted(files[o["path"]] for o in opens if inside(o, fetch))
            self.assertEqual(read, batch, loader)
            flowed += 1
        # Each fetch_batch ends with one flow start; a start without its
        # finish is a batch the loop never received (after an error only).
        self.assertEqual(sum(1 for f in fetches if any(inside(s, f) for s in starts.values())),
                         len(starts))
        unreceived = len(starts) - flowed
        self.assertTrue(0 <= unreceived <= (8 if "errors" in names else 0), unreceived)
        return regions, fetches, flowed

    def test_loops(self):
        names = ["disk", "cpu", "zero", "persistent", "iterable", "accum", "two", "errors"]
        truth, trace, p = self.run_loops(names)
        self.assertIn("worker error passed through: ValueError Caught ValueError in "
                      "DataLoader worker process", p.stdout)
        self.assertEqual(p.stdout.count("StopIteration passed through: StopIteration ()"), 2)
        # Loaders: 0 disk, 1 cpu, 2 zero, 3 persistent, 4 iterable, 5 accum,
        # 6-7 train/val, 8 errors (workers), 9 errors (num_workers=0).
        workers = {0, 1, 3, 4, 5, 6, 7, 8}
        regions, fetches, flowed = self.check(truth, trace, workers)
        batches = collections.Counter(c[0] for c in truth["calls"] if c[1] == "batch")
        self.assertEqual(batches[0], 12)
        self.assertEqual(batches[3], 24)                     # two epochs
        self.assertEqual(batches[6], 16)                     # 8 a pass, 2 passes
        accum = [s for s in truth["scenarios"] if s["name"] == "accum"][0]
        self.assertEqual((batches[5], accum["steps"]), (24, 8))
        # Map-style loaders fetch exactly what is received; the iterable
        # one's workers each make one more fetch that finds their end; the
        # failing loader's raising fetch and those prefetched after it are
        # work the loop never received.
        self.assertGreaterEqual(len(fetches), flowed + 2)
        self.assertLessEqual(len(fetches), flowed + 2 + 8)
        epochs = collections.Counter(m["name"] for m in trace.events if m.get("kind") == "mark"
                                     and m["name"].startswith("epoch "))
        # persistent: the second pass, said to resume its workers
        self.assertEqual(epochs["epoch loader=3 pass=1 persistent=1"], 1)
        self.assertEqual(epochs["epoch loader=6 pass=1"], 1)  # a new iterator each epoch
        self.assertEqual(sum(v for k, v in epochs.items() if "loader=6 " in k), 2)
        self.assertEqual(sum(epochs.values()), 13)  # a mark per pass of each loader

    def test_same_output_and_path_as_without(self):
        """The loop's output with the bootstrap equals its output untraced."""
        out = os.path.join(self.tmp, "truth.json")
        cmd = [dltest.SYSTEM_PYTHON, SCRIPT, "errors", self.data, out]
        plain = self.run_untraced(cmd)
        traced = self.run_traced(cmd, env=bootstrap_env(), timeout=170)
        self.assertEqual((traced.returncode, traced.stdout), (plain.returncode, plain.stdout))

    def test_explicit_annotations_win(self):
        """A loop with dlprof.annotate_loader (tests/annotations'
        loader_flows.py): its own regions, marks and flows, none from the
        bootstrap beside them, on its persistent workers over two epochs."""
        script = dltest.script("loader_flows.py")
        package = os.path.join(os.path.dirname(BOOTSTRAP), "..", "python")
        for i in range(38):
            with open(os.path.join(self.data, "s%03d.bin" % i), "wb") as f:
                f.write(b"x" * (100 + i))
        p = self.run_traced([dltest.SYSTEM_PYTHON, script, self.data, "persistent"],
                            env=bootstrap_env(pythonpath=package), timeout=170)
        epochs = json.loads(p.stdout.splitlines()[-1])["epochs"]
        batches = sum(len(e) for e in epochs)
        self.assertEqual(batches, 20)
        app = [e for e in self.decode().events if e.get("cat") == "app"]
        count = collections.Counter((e["kind"], e["name"].split(" ")[0]) for e in app)
        self.assertEqual(count[("region", "load_batch")], batches + 2)  # annotate_loader's
        self.assertEqual(count[("region", "step")], batches)
        self.assertEqual(count[("region", "fetch_batch")], batches)
        self.assertEqual(count[("flow_start", "batch")], batches)
        self.assertEqual(count[("flow_finish", "batch")], batches)
        self.assertEqual(count[("mark", "batch")], batches)  # annotate_loader's
        # annotate_loader's, a pass each: iter() and the request that ends it.
        for own in (("mark", "end"), ("mark", "epoch"), ("region", "loader_iter")):
            self.assertEqual(count[own], 2, own)

        # annotate_loader over a generator that iterates a DataLoader: the
        # loader's iterator is made and advanced inside annotate_loader's
        # load_batch, and is its.
        code = ("import torch.utils.data as d, dlprof\n"
                "def gen(dl):\n    yield from dl\n"
                "dl = d.DataLoader(list(range(12)), batch_size=4, num_workers=1)\n"
                "print(sum(1 for _ in dlprof.annotate_loader(gen(dl))))\n")
        traces = os.path.join(self.tmp, "gen")
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", code], trace_dir=traces,
                            env=bootstrap_env(pythonpath=package), timeout=170)
        self.assertEqual(p.stdout, "3\n")
        app = [e for e in self.decode(traces).events if e.get("cat") == "app"]
        count = collections.Counter((e["kind"], e["name"].split(" ")[0]) for e in app)
        self.assertEqual(count[("region", "load_batch")], 4)
        self.assertEqual((count[("mark", "batch")], count[("region", "loader_iter")]), (3, 1))

    def test_annotated_and_plain_passes_mixed(self):
        """One persistent iterator, passes through annotate_loader and plain
        ones in turn: each pass recorded by the one that made it (not by the
        first pass's), every batch's flow from its fetch to its load_batch."""
        package = os.path.join(os.path.dirname(BOOTSTRAP), "..", "python")
        code = ("import sys, dlprof, torch.utils.data as d\n"
                "dl = d.DataLoader(list(range(8)), batch_size=2, num_workers=2,"
                " persistent_workers=True)\n"
                "for k in sys.argv[1].split(','):\n"
                "    print(k, sum(1 for _ in (dlprof.annotate_loader(dl) if k == 'annot'"
                " else dl)))\n")
        kinds = ["annot", "auto", "auto", "annot", "auto"]
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", code, ",".join(kinds)],
                            env=bootstrap_env(pythonpath=package), timeout=170)
        self.assertEqual(p.stdout, "".join("%s 4\n" % k for k in kinds))
        app = [e for e in self.decode().events if e.get("cat") == "app"]
        count = collections.Counter((e["kind"], e["name"]) for e in app)
        self.assertEqual(count[("region", "load_batch")], 5 * (4 + 1))  # and each pass's end
        self.assertEqual(count[("region", "step")], 2 * 4)              # annotate_loader's
        self.assertEqual(count[("mark", "batch loader=0")], 5 * 4)      # every pass's
        self.assertEqual(count[("mark", "end loader=0")], 5)            # every pass's end
        # One loader, its passes numbered across both kinds.
        self.assertEqual(sorted(n for (k, n) in count if n.startswith("epoch ")),
                         ["epoch loader=0 pass=%d persistent=1" % i for i in range(5)])
        self.assertEqual(count[("region", "fetch_batch")], 20)
        starts = [e["flow"] for e in app if e["kind"] == "flow_start"]
        finishes = [e["flow"] for e in app if e["kind"] == "flow_finish"]
        self.assertEqual((len(starts), sorted(finishes)), (20, sorted(starts)))

    # annotate_loader over a DataLoader of one worker, started anew at each
    # pass (worker_init_fn: 50 ms), or over a list: two passes of 8 batches.
    # Prints the batches the loop received, its time from iter() to the
    # second pass's first batch, and from each pass's last batch to the
    # pass's end (the request that found it over: the worker shut down), in ns.
    ANNOTATED_PASSES = """
import sys, time, torch, dlprof
from torch.utils.data import DataLoader
def init(worker): time.sleep(0.05)
loader = (DataLoader(torch.zeros(32, 4), batch_size=4, num_workers=1, worker_init_fn=init)
          if sys.argv[1] == "dl" else [torch.zeros(4, 4)] * 8)
batches, first, ends = 0, [], 0
for epoch in range(2):
    t = time.monotonic_ns()
    for b in dlprof.annotate_loader(loader):
        if len(first) == epoch: first.append(time.monotonic_ns() - t)
        batches += 1
        last = time.monotonic_ns()
    ends += time.monotonic_ns() - last
print(batches, first[1], ends)
"""

    def test_annotated_loader_passes(self):
        """annotate_loader's passes as the bootstrap's: the request that ends
        a pass is no batch (16 batches, not 18), and iter() begins a pass, so
        that the second pass's worker start-up is what persistent workers
        would save (it was 0: every wait in pass 0), within the loop's own
        clock from iter() to its first batch."""
        package = os.path.join(os.path.dirname(BOOTSTRAP), "..", "python")
        for kind in ("dl", "list"):
            with self.subTest(kind=kind):
                traces = os.path.join(self.tmp, kind)
                p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", self.ANNOTATED_PASSES, kind],
                                    trace_dir=traces, env=bootstrap_env(pythonpath=package),
                                    timeout=170)
                batches, second_ns, ends_ns = map(int, p.stdout.split())
                self.assertEqual(batches, 16)
                wait = self.summary(traces)["verdict"]["batch_wait"]
                self.assertEqual(wait["steps"], batches, wait)
                # All of it the one loader's, by its marks.
                self.assertEqual([(w["loader"], w["ns"], w["steps"]) for w in wait["loaders"]],
                                 [(0, wait["ns"], batches)])
                if kind == "list":
                    continue
                self.assertEqual([x["pass"] for x in wait["worker_startup_passes"]], [1, 2])
                # The second pass's start-up and both passes' ends, where
                # the worker was shut down.
                saved = wait["persistent_workers_save_ns"]
                self.assertGreaterEqual(saved, 50_000_000, wait)  # its worker_init_fn
                self.assertLessEqual(saved, second_ns + ends_ns, (wait, second_ns, ends_ns))
                self.assertLessEqual(wait["pass_end_shutdown_ns"], ends_ns, (wait, ends_ns))

    def test_the_programs_dlprof_is_its_own(self):
        """The bootstrap's copy of dlprof never takes the name: with torch
        imported, `import dlprof` fails as it does untraced, and a dlprof put
        on sys.path later is the one imported, its annotate_loader recorded
        once (the bootstrap's hooks know its iterators and batches)."""
        code = "import torch.utils.data\ntry:\n    import dlprof\nexcept ImportError as e:\n" \
               "    print('ImportError', e.name)\n"
        cmd = [dltest.SYSTEM_PYTHON, "-c", code]
        plain = self.run_untraced(cmd)
        traced = self.run_traced(cmd, env=bootstrap_env(), timeout=170,
                                 trace_dir=os.path.join(self.tmp, "none"))
        self.assertEqual((traced.stdout, plain.stdout), ("ImportError dlprof\n",) * 2)
        package = os.path.realpath(os.path.join(os.path.dirname(BOOTSTRAP), "..", "python"))
        # (The program's own sys.path, put first as a program would.)
        code = ("import sys, torch.utils.data as d\nsys.path[:0] = [sys.argv[1]]\n"
                "import dlprof\nprint(dlprof.__file__)\n"
                "dl = d.DataLoader(list(range(12)), batch_size=4, num_workers=2)\n"
                "print(sum(1 for _ in dlprof.annotate_loader(dl)))\n")
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", code, package], env=bootstrap_env(),
                            timeout=170)
        self.assertEqual(p.stdout, "%s\n3\n" % os.path.join(package, "dlprof", "__init__.py"))
        app = [e for e in self.decode().events if e.get("cat") == "app"]
        count = collections.Counter((e["kind"], e["name"].split(" ")[0]) for e in app)
        self.assertEqual(count[("region", "load_batch")], 3 + 1)
        self.assertEqual(count[("region", "fetch_batch")], 3)
        self.assertEqual((count[("mark", "batch")], count[("region", "loader_iter")]), (3, 1))
        # The copy itself finds the reader library beside it (build/lib).
        code = "import sys; sys.path[:0] = [sys.argv[1]]; import dlprof._native as n; " \
               "print(n.lib()._name)"
        p = self.run_untraced([dltest.SYSTEM_PYTHON, "-c", code, BOOTSTRAP])
        self.assertEqual(os.path.realpath(p.stdout.strip()),
                         os.path.realpath(os.path.join(BOOTSTRAP, "..", "libdlprof_reader.so")))

    def test_tracebacks(self):
        """A dataset's exception, as docs/PYTHON.md says: its traceback is the
        untraced one with one frame of the bootstrap's more (the wrapper of
        next()), and, for a worker's, the worker's traceback quoted in the
        message two more (the fetch's, the sample's)."""
        code = ("import sys, traceback, torch.utils.data as d\n"
                "class D(d.Dataset):\n    def __len__(self): return 4\n"
                "    def __getitem__(self, i): raise ValueError('boom')\n"
                "dl = d.DataLoader(D(), batch_size=2, num_workers=int(sys.argv[1]))\n"
                "try:\n    next(iter(dl))\n"
                "except ValueError:\n    traceback.print_exc()\n")
        for workers, more in ((0, 1), (2, 1 + 2)):
            cmd = [dltest.SYSTEM_PYTHON, "-c", code, str(workers)]
            plain = self.run_untraced(cmd).stderr.splitlines()
            traced = self.run_traced(cmd, env=bootstrap_env(), timeout=170,
                                     trace_dir=os.path.join(self.tmp, "tb%d" % workers))
            lines = traced.stderr.splitlines()
            ours = [i for i, l in enumerate(lines) if l.strip().startswith('File "' + BOOTSTRAP)]
            self.assertEqual(len(ours), more, traced.stderr)
            # A frame: its File line and the lines indented deeper (source, carets).
            for i in reversed(ours):
                indent = len(lines[i]) - len(lines[i].lstrip())
                end = i + 1
                while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > indent:
                    end += 1
                del lines[i:end]
            self.assertEqual(lines, plain)

    def needs_children_bootstrap(self):
        probe = "import subprocess, sys; subprocess.run([sys.executable, '-c', " \
                "'import sys; print(any(type(f).__name__ == \"_TorchWatch\" for f in sys.meta_path))'])"
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", probe], env=bootstrap_env(),
                            trace_dir=os.path.join(self.tmp, "probe"))
        if p.stdout.strip() != "True":
            self.skipTest("the runtime does not put the bootstrap on its children's PYTHONPATH")

    def test_spawn_workers(self):
        """Spawned workers get the bootstrap from PYTHONPATH, as the runtime
        sets it in every child it starts."""
        self.needs_children_bootstrap()
        truth, trace, _ = self.run_loops(["spawn"])
        self.check(truth, trace, {0})

    def test_torchrun_style(self):
        """Two ranks started as torchrun's agent starts them (a Python
        process, rank variables in the environment; Debian's torchrun itself
        fails on Python 3.11): each rank's batches and steps, with its rank."""
        self.needs_children_bootstrap()
        out = os.path.join(self.tmp, "truth.json")
        agent = ("import os, subprocess, sys\n"
                 "ps = [subprocess.Popen(sys.argv[1:], env=dict(os.environ, RANK=str(r),"
                 " LOCAL_RANK=str(r), WORLD_SIZE='2')) for r in range(2)]\n"
                 "sys.exit(max(p.wait() for p in ps))\n")
        self.run_traced([dltest.SYSTEM_PYTHON, "-c", agent, dltest.SYSTEM_PYTHON, SCRIPT,
                         "zero,accum", self.data, out], env=bootstrap_env(), timeout=170)
        app = [e for e in self.decode().events if e.get("cat") == "app"]
        for rank in (0, 1):
            with open("%s.%d" % (out, rank)) as f:
                truth = json.load(f)
            mine = collections.Counter(e["name"] for e in app if e["pid"] == truth["main"]
                                       and e["kind"] == "region" and e["rank"] == rank)
            self.assertEqual(mine["load_batch"], len(truth["calls"]), rank)
            self.assertEqual(mine["optimizer_step"], sum(s["steps"] for s in truth["scenarios"]))


class OptimizerHooksTest(dltest.TraceTestCase):
    """torch 2.x's global optimizer step hooks, as torch calls them (a module
    with register_optimizer_step_pre_hook/post_hook standing in for
    torch.optim.optimizer; Debian's torch 1.13 has none): a region per step,
    one for a step calling another optimizer's step, and a step that raised
    (no post hook) closed when the loop asks for its next batch."""

    CODE = """
import sys, types
import dlprof, dlprof._torch as t  # the build's package, on its PYTHONPATH
pre, post = [], []
m = types.ModuleType("torch.optim.optimizer")
m.register_optimizer_step_pre_hook = pre.append
m.register_optimizer_step_post_hook = post.append
t.instrument(m)
def step(inner=None):
    for h in pre: h(None, (), {})
    if inner: step()
    if inner == "raise": raise RuntimeError("step failed")
    for h in post: h(None, (), {})
step(); step(inner=True)
try:
    step(inner="raise")
except RuntimeError:
    pass
dlprof.mark("before next")
t.close_stale_step()    # what the next load_batch does first
step()
"""

    def test_global_step_hooks(self):
        self.run_traced([dltest.SYSTEM_PYTHON, "-c", self.CODE],
                        env={"PYTHONPATH": dltest.PYTHON_DIR})
        app = sorted((e for e in self.decode().events if e.get("cat") == "app"),
                     key=lambda e: e["ts"])
        steps = [e for e in app if e["name"] == "optimizer_step"]
        self.assertEqual([e["depth"] for e in steps], [0, 0, 0, 0])
        [mark] = [e for e in app if e["name"] == "before next"]
        # The raising step's region ends at the recovery, after the mark.
        self.assertGreaterEqual(steps[2]["ts"] + steps[2]["dur"], mark["ts"])
        self.assertLessEqual(steps[2]["ts"], mark["ts"])


class BootstrapTest(dltest.TraceTestCase):
    """What the program sees, with programs that never import torch."""

    PRINT = ("import os, sys; print(repr(os.environ.get('PYTHONPATH')), sys.path[1:], "
             "getattr(sys.modules.get('sitecustomize'), '__file__', None), "
             "[type(f).__name__ for f in sys.meta_path if type(f).__name__ != '_TorchWatch'])")

    def own_sitecustomize(self):
        site = os.path.join(self.tmp, "site")
        os.mkdir(site)
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write("import os\nwith open(%r, 'a') as f:\n    f.write('ran\\n')\n"
                    % os.path.join(self.tmp, "ran"))
        return site

    def test_path_and_own_sitecustomize(self):
        site = self.own_sitecustomize()
        for pythonpath in (site, site + ":", ""):
            plain = self.run_untraced([dltest.SYSTEM_PYTHON, "-c", self.PRINT],
                                      env={"PYTHONPATH": pythonpath}, cwd=self.tmp)
            traced = self.run_traced([dltest.SYSTEM_PYTHON, "-c", self.PRINT], cwd=self.tmp,
                                     env=bootstrap_env(pythonpath=pythonpath))
            self.assertEqual(traced.stdout, plain.stdout, pythonpath)
            self.assertEqual(traced.stderr, plain.stderr)
        with open(os.path.join(self.tmp, "ran")) as f:
            self.assertEqual(f.read(), "ran\n" * 4)  # once a run, for the two with it
        # PYTHONPATH unset.
        plain = self.run_untraced([dltest.SYSTEM_PYTHON, "-c", self.PRINT])
        traced = self.run_traced([dltest.SYSTEM_PYTHON, "-c", self.PRINT], env=bootstrap_env())
        self.assertEqual(traced.stdout, plain.stdout)
        self.assertIn("None", traced.stdout.split(" ")[0])

    def test_failing_sitecustomize_reported_as_without(self):
        site = os.path.join(self.tmp, "bad")
        os.mkdir(site)
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write("raise RuntimeError('boom')\n")
        cmd = [dltest.SYSTEM_PYTHON, "-c", "print('ran')"]
        plain = self.run_untraced(cmd, env={"PYTHONPATH": site})
        traced = self.run_traced(cmd, env=bootstrap_env(pythonpath=site))
        self.assertIn("Error in sitecustomize", plain.stderr)
        self.assertEqual((traced.stdout, traced.stderr), (plain.stdout, plain.stderr))

    def test_no_torch_same_events(self):
        """A program that never imports torch: the same output, exit status
        and events with the bootstrap as with DLPROF_PYTHON=0; Python's
        imports from the bootstrap's directory are the tracer's, and not
        among them."""
        data = os.path.join(self.data, "f.bin")
        with open(data, "wb") as f:
            f.write(b"z" * 10000)
        code = ("import json, sys\nwith open(%r, 'rb') as f:\n    n = len(f.read())\n"
                "print(n, json.dumps({'a': 1}))\nsys.exit(3)\n" % data)
        runs = []
        for name, env in (("with", bootstrap_env()), ("without", {"DLPROF_PYTHON": "0"})):
            d = os.path.join(self.tmp, name)
            p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", code], env=env, trace_dir=d,
                                expect_rc=3)
            events = self.decode(d).events
            runs.append((p.stdout, p.stderr, sorted(
                (e.get("cat"), e["name"], e.get("path", ""), e.get("size", 0), e.get("bytes", 0))
                for e in events)))
        self.assertEqual(runs[0][:2], runs[1][:2])
        self.assertEqual(runs[0][2], runs[1][2])
        self.assertIn(("posix", "read", data, 10001, 10000), [t[:5] for t in runs[0][2]])

    def test_the_bootstraps_own_files_are_not_traced(self):
        """The runtime puts the bootstrap first on PYTHONPATH itself (no
        PYTHONPATH given): Python's scan of that directory, its stat()s, and
        the reads of sitecustomize are not in the trace, also where
        DLPROF_INCLUDE=/ traces everything else; the program's own read is."""
        cmd = [dltest.SYSTEM_PYTHON, "-c", "open('/etc/hostname').read()"]
        for include in (None, "/"):
            with self.subTest(include=include):
                d = os.path.join(self.tmp, "include-%s" % bool(include))
                self.run_traced(cmd, env={"PYTHONPATH": None, "DLPROF_INCLUDE": include},
                                trace_dir=d)
                trace = self.decode(d)
                self.assertEqual(bootstrap_events(trace), [])
                reads = [e for e in trace.events if e.get("path") == "/etc/hostname"
                         and e["name"] == "read"]
                self.assertEqual(len(reads) > 0, include == "/")

    def test_the_launchers_package_is_not_traced(self):
        """`dlprof run`'s dlprof package (build/python, on PYTHONPATH), which
        the bootstrap loads: its imports are the tracer's, in no output
        (they were 298 events); the program's own reads are."""
        if not dltest.has_torch():
            self.skipTest("%s has no torch" % dltest.SYSTEM_PYTHON)
        package = os.path.realpath(os.path.join(os.path.dirname(BOOTSTRAP), "..", "python"))
        data = os.path.join(self.tmp, "sample.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 100)
        code = ("import sys, torch.utils.data as d\n"
                "class D(d.Dataset):\n"
                "    def __len__(self): return 8\n"
                "    def __getitem__(self, i):\n"
                "        with open(sys.argv[1], 'rb') as f: return len(f.read())\n"
                "print(sum(len(b) for b in d.DataLoader(D(), batch_size=4, num_workers=2)))\n")
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", code, data],
                            env=bootstrap_env(pythonpath=package), timeout=170)
        self.assertEqual(p.stdout, "8\n")
        trace = self.decode()
        self.assertEqual([e for e in trace.events if e.get("path", "").startswith(package)], [])
        self.assertEqual([e["bytes"] for e in trace.events if e.get("path") == data
                          and e["name"] == "read" and e["bytes"] > 0], [100] * 8)
        app = collections.Counter(e["name"].split(" ")[0] for e in trace.events
                                  if e.get("cat") == "app" and e["kind"] == "region")
        self.assertEqual(app["fetch_batch"], 2)  # the hooks are the package's

    def test_an_iterator_inherited_by_a_worker_is_not_its_own(self):
        """An iterator alive when the next pass forks its workers (held by an
        exception's cycle) may be shut down in a worker, on the same thread
        id, when collected there: nothing is recorded (a worker recorded a
        load_batch, counted as a main process: 4 main where the job had 1).
        Here the worker calls it itself, as the collection would."""
        if not dltest.has_torch():
            self.skipTest("%s has no torch" % dltest.SYSTEM_PYTHON)
        code = ("import torch.utils.data as d\n"
                "held = []\n"
                "def init(w):\n"
                "    try: held and held[0]._shutdown_workers()\n"
                "    except AssertionError: pass  # torch: 'can only test a child process'\n"
                "dl = d.DataLoader(list(range(8)), batch_size=4, num_workers=2,\n"
                "                  worker_init_fn=init)\n"
                "it = iter(dl); next(it); held.append(it)\n"
                "print(sum(len(b) for b in dl))\n")
        p = self.run_traced([dltest.SYSTEM_PYTHON, "-c", code], env=bootstrap_env(),
                            timeout=170)
        self.assertEqual(p.stdout, "8\n")
        trace = self.decode()
        loads = collections.Counter(e["pid"] for e in trace.events if e.get("cat") == "app"
                                    and e["kind"] == "region" and e["name"] == "load_batch")
        # Only the loop's process: its next(), the pass's 2 batches and end.
        self.assertEqual(len(loads), 1, loads)
        self.assertGreaterEqual(list(loads.values())[0], 3, loads)

    def test_isolated_mode_untouched(self):
        """python -I ignores PYTHONPATH: no bootstrap, no finder (nothing to
        undo: the program sees the PYTHONPATH the runtime set, as -I means),
        nothing recorded."""
        cmd = [dltest.SYSTEM_PYTHON, "-I", "-c",
               self.PRINT.replace(" if type(f).__name__ != '_TorchWatch'", "")]
        plain = self.run_untraced(cmd, env={"PYTHONPATH": BOOTSTRAP})
        traced = self.run_traced(cmd, env=bootstrap_env())
        self.assertEqual((traced.stdout, traced.stderr), (plain.stdout, plain.stderr))
        self.assertNotIn(BOOTSTRAP, traced.stdout.split(" ", 1)[1])
        self.assertEqual([e for e in self.decode().events if e.get("cat") == "app"], [])


if __name__ == "__main__":
    dltest.main()
