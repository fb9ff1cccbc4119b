"""The launch-bound training loop that bench/gpu_overhead.py times.

    gpu_workload.py --data DIR --marks DIR [--profiler] [--epochs N] ...

Many small kernels per step (a deep, narrow MLP with LayerNorm, and SGD with
momentum one parameter at a time), fed by a DataLoader whose worker
processes read one small file per sample (os.open/os.read/os.close: exactly
one read(2) per sample). Each step copies its batch in, runs forward,
backward and the optimizer, and reads the loss back (a copy out and a
stream synchronization, as loops that log their loss do).

One warm-up epoch, then the timed epochs. Around the timed region the GPU is
synchronized and an empty file is opened in --marks (`begin`, `end`), so a
dlprof trace shows the region on its own clock. It prints one JSON line:

  loop_ns      wall time of the timed epochs
  cpu_ns       CPU time of this process (all its threads; not the loader's
               worker processes) over the timed epochs: steadier than wall
               time, and where a tracer's cost on the launch path shows
  steps        timed steps
  samples      samples the loop received over all epochs: one read each
  profiler     (--profiler) kernels, copies and memsets torch.profiler saw in
               the timed region (GPU user annotations counted apart), and
               the seconds its exit took

Knows nothing about dlprof: the driver runs it plain, under torch.profiler
(--profiler) and under LD_PRELOAD.
"""

import argparse
import json
import os
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="directory of sample files (from the driver)")
    p.add_argument("--marks", required=True, help="directory for the region markers")
    p.add_argument("--features", type=int, default=256)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--depth", type=int, default=12)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=6, help="timed epochs (after one warm-up)")
    p.add_argument("--profiler", action="store_true", help="time the loop under torch.profiler")
    p.add_argument("--device", default="cuda",
                   help="cuda, or cpu for a smoke test of the script (tests/gpu)")
    return p.parse_args(argv)


def mark(marks, name):
    """An open(2) of MARKS/name: the region's edge on the trace's own clock."""
    os.close(os.open(os.path.join(marks, name), os.O_CREAT | os.O_WRONLY, 0o644))


def count_gpu_activities(events, cuda_type):
    """Kernels, copies and memsets among a profiler's events (kineto's, with
    name(), device_type() and, in recent torch, is_user_annotation()).

    Only kernel, copy and memset activities count: a record_function on the
    host (Optimizer.step#SGD.step, ProfilerStep#N) also shows on the device's
    timeline as a GPU user annotation of the same name, spanning the work it
    queued, and is no kernel. Where torch does not say so itself, a device
    event named as a host event is taken for one (no kernel is named after a
    host-side op or annotation)."""
    events = list(events)
    host_names = {e.name() for e in events if e.device_type() != cuda_type}
    counts = {"kernel": 0, "memcpy": 0, "memset": 0, "annotation": 0}
    for e in events:
        if e.device_type() != cuda_type:
            continue
        name = e.name()
        annotation = getattr(e, "is_user_annotation", None)
        if (callable(annotation) and annotation()) or name in host_names:
            counts["annotation"] += 1
        elif name.startswith("Memcpy"):
            counts["memcpy"] += 1
        elif name.startswith("Memset"):
            counts["memset"] += 1
        else:
            counts["kernel"] += 1
    return counts


def gpu_counts(prof):
    """Kernels, copies and memsets torch.profiler saw (and the GPU user
    annotations it listed among them, counted apart)."""
    import torch
    return count_gpu_activities(prof.profiler.kineto_results.events(),
                                torch.autograd.DeviceType.CUDA)


def main(argv):
    args = parse_args(argv)
    import torch
    from torch.utils.data import DataLoader, Dataset

    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("gpu_workload: torch sees no CUDA device", file=sys.stderr)
        return 3
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    sample_bytes = args.features * 4

    class Files(Dataset):
        def __init__(self, paths):
            self.paths = paths

        def __len__(self):
            return len(self.paths)

        def __getitem__(self, i):
            fd = os.open(self.paths[i], os.O_RDONLY)
            try:
                raw = os.read(fd, sample_bytes)
            finally:
                os.close(fd)
            x = torch.frombuffer(bytearray(raw), dtype=torch.float32)
            return x, i % args.classes

    paths = sorted(os.path.join(args.data, n) for n in os.listdir(args.data))
    more = dict(persistent_workers=True, prefetch_factor=4) if args.workers > 0 else {}
    loader = DataLoader(Files(paths), batch_size=args.batch, shuffle=False,
                        num_workers=args.workers, pin_memory=cuda, **more)

    dev = torch.device(args.device)
    layers = [torch.nn.Linear(args.features, args.width)]
    for _ in range(args.depth):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.LayerNorm(args.width),
                   torch.nn.ReLU()]
    layers.append(torch.nn.Linear(args.width, args.classes))
    model = torch.nn.Sequential(*layers).to(dev)
    # One small kernel per parameter and operation: launch-bound on purpose.
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=False)
    loss_fn = torch.nn.CrossEntropyLoss()

    samples = 0

    def epoch():
        nonlocal samples
        steps = 0
        for x, y in loader:
            x = x.to(dev, non_blocking=True)
            y = y.to(dev, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            loss.item()
            samples += x.shape[0]
            steps += 1
        return steps

    epoch()  # warm-up: workers start, allocator and kernels settle
    sync()

    out = {}
    if args.profiler:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with profile(activities=activities) as prof:
            c0, t0 = time.process_time_ns(), time.perf_counter_ns()
            steps = sum(epoch() for _ in range(args.epochs))
            sync()
            t1, c1 = time.perf_counter_ns(), time.process_time_ns()
        out["profiler"] = gpu_counts(prof)
        out["profiler"]["exit_s"] = round((time.perf_counter_ns() - t1) / 1e9, 3)
    else:
        mark(args.marks, "begin")
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        steps = sum(epoch() for _ in range(args.epochs))
        sync()
        t1, c1 = time.perf_counter_ns(), time.process_time_ns()
        mark(args.marks, "end")
    out.update(loop_ns=t1 - t0, cpu_ns=c1 - c0, steps=steps, samples=samples)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
