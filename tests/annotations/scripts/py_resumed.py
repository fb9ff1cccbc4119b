"""@dlprof.region on a generator and an async def, and two annotate_loaders
in a zip, each timed by this program's own clock (tests/annotations).

    python py_resumed.py

Prints one JSON line: gen_ns (each next() of the generator: 3 batches of a
10 ms sleep, then the one that finds it over), async_ns (the await of a
coroutine sleeping 20 ms), agen_ns (each step of `async for` over an async
generator of 2 items awaiting 15 ms each, then the one that finds it over), zip_wait_ns (each next() of zip(a, b): a takes
20 ms a batch, b 10 ms), zip_step_ns (each loop body: a 30 ms sleep).
"""
import asyncio
import json
import time

import dlprof

T = time.perf_counter_ns


@dlprof.region("batches")
def batches():
    for i in range(3):
        time.sleep(0.01)
        yield i


@dlprof.region("fetch_async")
async def fetch():
    await asyncio.sleep(0.02)


@dlprof.region("agen")
async def items():
    for i in range(2):
        await asyncio.sleep(0.015)
        yield i


async def take_items():
    agen_ns, it = [], items().__aiter__()
    while True:
        t = T()
        try:
            await it.__anext__()
        except StopAsyncIteration:
            agen_ns.append(T() - t)
            return agen_ns
        agen_ns.append(T() - t)


class Slow:
    def __init__(self, d, n):
        self.d, self.n = d, n

    def __iter__(self):
        for i in range(self.n):
            time.sleep(self.d)
            yield i


gen_ns = []
g = batches()
while True:
    t = T()
    try:
        next(g)
    except StopIteration:
        gen_ns.append(T() - t)
        break
    gen_ns.append(T() - t)
t = T()
asyncio.run(fetch())
async_ns = T() - t
agen_ns = asyncio.run(take_items())

wait_ns, step_ns = [], []
pairs = iter(zip(dlprof.annotate_loader(Slow(0.02, 5)), dlprof.annotate_loader(Slow(0.01, 5))))
while True:
    t = T()
    try:
        next(pairs)
    except StopIteration:
        wait_ns.append(T() - t)
        break
    wait_ns.append(T() - t)
    t = T()
    time.sleep(0.03)  # the training step
    step_ns.append(T() - t)
print(json.dumps({"gen_ns": gen_ns, "async_ns": async_ns, "agen_ns": agen_ns,
                  "zip_wait_ns": wait_ns,
                  "zip_step_ns": step_ns}))
