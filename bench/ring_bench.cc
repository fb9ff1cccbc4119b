// Micro-benchmarks of the two halves of the recording path, in events/s:
//
//   BM_RingPush            EventRing::TryPush on one thread while a consumer
//                          thread drains the ring, as the flusher does (the
//                          producer spins when the ring is full).
//   BM_RingPushThenDrain   the same ring filled and drained by one thread in
//                          batches: the push cost without cache lines moving
//                          between cores.
//   BM_PacedPush/BM_PacedWork
//                          ~1 us of work per event (about one cached 4 KiB
//                          pread), with and without a push, while a consumer
//                          drains every ~1 ms as the flusher does; the time
//                          difference is the push's cost in place, cache
//                          misses on slots the consumer read included.
//   BM_Encode*             BlockEncoder::AddEvents + Finish, then (Framed) the
//                          zstd frame BlockFramer writes, over synthetic pread
//                          events (sequential or random 4 KiB offsets, timing
//                          jitter of a real run); counter bytes_per_event is
//                          the framed size.
//   BM_EncodeSeqDirect*    a prototype of AddEvents writing varints through a
//                          pointer into pre-sized columns instead of
//                          vector::insert per value; output checked identical
//                          to BlockEncoder's (a suggestion, not the runtime).
//
// Run: build/bench/ring_bench [--benchmark_filter=...] (see bench/README.md).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <thread>
#include <vector>

#include "dlprof/format.h"
#include "lib/core/ring.h"
#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"
#include "lib/format/varint.h"

namespace {

using dlprof::Event;
using dlprof::core::EventRing;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

Event SampleEvent(uint64_t i) {
  Event e{};
  e.kind = static_cast<uint16_t>(dlprof::EventKind::Pread64);
  e.start_ns = 1000 * i;
  e.dur_ns = 700;
  e.ret = 4096;
  e.offset = static_cast<int64_t>(i * 4096);
  e.size = 4096;
  e.file = 7;
  e.fd = 3;
  return e;
}

void BM_RingPush(benchmark::State& state) {
  const uint64_t capacity = static_cast<uint64_t>(state.range(0));
  std::vector<Event> slots(capacity);
  EventRing ring;
  ring.Init(slots.data(), capacity);
  std::atomic<bool> stop{false};
  uint64_t consumed = 0;
  std::thread consumer([&] {
    uint64_t seen = 0;
    for (;;) {
      uint64_t n = ring.Drain([&](const Event* ev, size_t k) {
        // Touch what a flusher touches: every event once.
        for (size_t i = 0; i < k; ++i) seen += ev[i].size;
      });
      if (n == 0) {
        if (stop.load(std::memory_order_acquire) && ring.Readable() == 0) break;
        CpuRelax();
      }
    }
    consumed = seen;
  });
  Event e = SampleEvent(1);
  uint64_t full = 0;
  for (auto _ : state) {
    e.start_ns += 1000;
    while (!ring.TryPush(e)) {
      ++full;
      CpuRelax();
    }
  }
  stop.store(true, std::memory_order_release);
  consumer.join();
  benchmark::DoNotOptimize(consumed);
  state.SetItemsProcessed(state.iterations());
  state.counters["full_spins_per_push"] =
      benchmark::Counter(static_cast<double>(full) / static_cast<double>(state.iterations()));
}
// 4096 slots is the runtime's default (DLPROF_BUFFER_KB=256, 64-byte slots).
BENCHMARK(BM_RingPush)->Arg(256)->Arg(4096)->Arg(65536)->UseRealTime();

void BM_RingPushThenDrain(benchmark::State& state) {
  const uint64_t capacity = 4096;
  const uint64_t batch = static_cast<uint64_t>(state.range(0));
  std::vector<Event> slots(capacity);
  EventRing ring;
  ring.Init(slots.data(), capacity);
  Event e = SampleEvent(1);
  uint64_t seen = 0;
  for (auto _ : state) {
    for (uint64_t i = 0; i < batch; ++i) {
      e.start_ns += 1000;
      if (!ring.TryPush(e)) state.SkipWithError("ring full");
    }
    ring.Drain([&](const Event* ev, size_t k) { seen += k; });
  }
  benchmark::DoNotOptimize(seen);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}
BENCHMARK(BM_RingPushThenDrain)->Arg(2048);

// About `units` x 10 dependent multiply-adds of work standing in for the pread.
inline uint64_t Work(uint64_t units, uint64_t x) {
  for (uint64_t i = 0; i < units * 10; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

void Paced(benchmark::State& state, bool push) {
  const uint64_t capacity = 4096;
  std::vector<Event> slots(capacity);
  EventRing ring;
  ring.Init(slots.data(), capacity);
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    uint64_t seen = 0;
    while (!stop.load(std::memory_order_acquire)) {
      ring.Drain([&](const Event* ev, size_t k) {
        for (size_t i = 0; i < k; ++i) seen += ev[i].size;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ring.Drain([&](const Event*, size_t) {});
    benchmark::DoNotOptimize(seen);
  });
  Event e = SampleEvent(1);
  uint64_t x = 1;
  const uint64_t units = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    x = Work(units, x);
    if (push) {
      e.start_ns = x;
      while (!ring.TryPush(e)) CpuRelax();
    }
  }
  benchmark::DoNotOptimize(x);
  stop.store(true, std::memory_order_release);
  consumer.join();
  state.SetItemsProcessed(state.iterations());
}
void BM_PacedWork(benchmark::State& s) { Paced(s, false); }
void BM_PacedPush(benchmark::State& s) { Paced(s, true); }
BENCHMARK(BM_PacedWork)->Arg(100);
BENCHMARK(BM_PacedPush)->Arg(100);

// Pread events as a 4 KiB read loop over a page-cached 64 MiB file records
// them: ~700 ns calls with jitter, ~60 ns between calls.
std::vector<Event> PreadEvents(size_t n, bool random) {
  std::vector<Event> v(n);
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
  };
  const uint64_t blocks = (64u << 20) / 4096;
  uint64_t t = 1000000000;
  for (size_t i = 0; i < n; ++i) {
    Event& e = v[i];
    e = SampleEvent(i);
    e.start_ns = t;
    e.dur_ns = 650 + next() % 128;
    t += e.dur_ns + 50 + next() % 32;
    e.offset = static_cast<int64_t>((random ? next() % blocks : i % blocks) * 4096);
  }
  return v;
}

void EncodeBench(benchmark::State& state, bool random, bool framed) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<Event> events = PreadEvents(n, random);
  dlprof::format::BlockEncoder enc;
  dlprof::format::BlockFramer framer(3);  // the runtime's level
  std::vector<uint8_t> raw, out;
  size_t bytes = 0;
  for (auto _ : state) {
    enc.Begin({});
    enc.AddString(7, "/data/train/shard-00000.bin", 27);
    enc.AddEvents(4242, events.data(), events.size());
    enc.Finish(&raw);
    if (framed) {
      framer.Frame(raw, static_cast<uint32_t>(n), 0, enc.span(), &out);
      bytes = out.size();
    } else {
      bytes = raw.size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.counters["bytes_per_event"] =
      benchmark::Counter(static_cast<double>(bytes) / static_cast<double>(n));
}

void BM_EncodeSeq(benchmark::State& s) { EncodeBench(s, false, false); }
void BM_EncodeSeqFramed(benchmark::State& s) { EncodeBench(s, false, true); }
void BM_EncodeRandom(benchmark::State& s) { EncodeBench(s, true, false); }
void BM_EncodeRandomFramed(benchmark::State& s) { EncodeBench(s, true, true); }
BENCHMARK(BM_EncodeSeq)->Arg(2048)->Arg(65536);
BENCHMARK(BM_EncodeSeqFramed)->Arg(2048)->Arg(16384)->Arg(65536);
BENCHMARK(BM_EncodeRandom)->Arg(2048)->Arg(65536);
BENCHMARK(BM_EncodeRandomFramed)->Arg(2048)->Arg(16384)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
